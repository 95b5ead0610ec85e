import type { MountEntry } from '@strongroom/core';
import { describeKvChange } from './describe-change';
import { newMetadata, type SecretMetadata } from './secret-store';

function mount(options: Record<string, string>): MountEntry {
  return {
    path: 'secret/', type: 'kv', description: '', accessor: 'kv_1234', uuid: 'u-1',
    config: { default_lease_ttl: 0, max_lease_ttl: 0, force_no_cache: false },
    local: false, seal_wrap: false, external_entropy_access: false, options,
  };
}

function stored(meta: SecretMetadata): () => Buffer {
  return () => Buffer.from(JSON.stringify(meta));
}

describe('describeKvChange', () => {
  it.each([
    ['a v1 mount', { version: '1' }],
    ['a mount without a version option', {}],
  ])('says nothing of %s, even for a meta/ key, and never reads the value', (_name, options) => {
    const value = jest.fn(stored(newMetadata(0)));
    expect(describeKvChange(mount(options), 'meta/k', value)).toBeUndefined();
    expect(describeKvChange(mount(options), 'v1/k', value)).toBeUndefined();
    expect(value).not.toHaveBeenCalled();
  });

  it.each(['config', 'versions/0123abcd/1', 'v1/meta/k', 'metadata/k', 'meta'])(
    'says nothing of the v2 key %s and never reads its value',
    (key) => {
      const value = jest.fn(stored(newMetadata(0)));
      expect(describeKvChange(mount({ version: '2' }), key, value)).toBeUndefined();
      expect(value).not.toHaveBeenCalled();
    },
  );

  it('gives the path, the current version and the version records of a metadata write, nothing else', () => {
    const meta = newMetadata(1000);
    meta.currentVersion = 2;
    meta.customMetadata = { owner: 'team-a' };
    meta.versions = {
      1: { createdTime: 1000, deletionTime: 2000, destroyed: false },
      2: { createdTime: 3000, deletionTime: null, destroyed: false },
    };
    expect(describeKvChange(mount({ version: '2' }), 'meta/app/db', stored(meta))).toEqual({
      kind: 'kv-secret',
      path: 'app/db',
      metadata: { currentVersion: 2, versions: meta.versions },
    });
  });

  it('gives null metadata for a delete of the metadata', () => {
    const value = jest.fn((): Buffer | null => null);
    expect(describeKvChange(mount({ version: '2' }), 'meta/app/db', value)).toEqual({ kind: 'kv-secret', path: 'app/db', metadata: null });
    expect(value).toHaveBeenCalledTimes(1);
  });
});
