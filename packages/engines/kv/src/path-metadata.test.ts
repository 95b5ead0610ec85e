import { MemoryStorage } from '@strongroom/core';
import { T0, badRequest, failure, kvRig } from './test-support/kv-harness';

describe('metadata/: read', () => {
  it('answers with exactly Vault\'s keys after writes', async () => {
    const { h, clock } = kvRig();
    await h.request('write', 'data/app/db', { data: { a: 1 } });
    await clock.advance(1000);
    await h.request('write', 'data/app/db', { data: { a: 2 } });
    await h.request('delete', 'data/app/db');
    expect(await h.request('read', 'metadata/app/db')).toEqual({
      data: {
        cas_required: false,
        created_time: T0,
        current_version: 2,
        custom_metadata: null,
        delete_version_after: '0s',
        max_versions: 0,
        oldest_version: 0,
        updated_time: '2026-01-01T00:00:01Z',
        versions: {
          1: { created_time: T0, deletion_time: '', destroyed: false },
          2: { created_time: '2026-01-01T00:00:01Z', deletion_time: '2026-01-01T00:00:01Z', destroyed: false },
        },
      },
    });
  });

  it('answers 404 for a secret that does not exist and for the bare endpoint', async () => {
    const { h } = kvRig();
    await failure(h.request('read', 'metadata/nope'), 404);
    await failure(h.request('read', 'metadata/'), 404);
    await failure(h.request('read', 'metadata'), 404);
  });
});

describe('metadata/: write and patch', () => {
  it('creates metadata for a secret without versions', async () => {
    const { h } = kvRig();
    expect(await h.request('write', 'metadata/k', {
      max_versions: 5, cas_required: true, delete_version_after: '3h', custom_metadata: { owner: 'ops', tier: '1' },
    })).toBeNull();
    expect(h.lastOperation).toBe('create');
    expect(await h.request('read', 'metadata/k')).toEqual({
      data: {
        cas_required: true, created_time: T0, current_version: 0, custom_metadata: { owner: 'ops', tier: '1' },
        delete_version_after: '3h0m0s', max_versions: 5, oldest_version: 0, updated_time: T0, versions: {},
      },
    });
  });

  it('changes only the fields given and replaces custom_metadata as a whole', async () => {
    const { h, clock } = kvRig();
    await h.request('write', 'data/k', { data: { a: 1 } });
    await h.request('write', 'metadata/k', { max_versions: 3, custom_metadata: { a: '1', b: '2' } });
    expect(h.lastOperation).toBe('update');
    await clock.advance(60_000);
    await h.request('write', 'metadata/k', { custom_metadata: { c: '3' } });
    expect((await h.request('read', 'metadata/k'))?.data).toMatchObject({
      max_versions: 3, custom_metadata: { c: '3' }, current_version: 1, created_time: T0, updated_time: '2026-01-01T00:01:00Z',
    });
  });

  it('reads an emptied custom_metadata back as null', async () => {
    const { h } = kvRig();
    await h.request('write', 'metadata/k', { custom_metadata: { a: '1' } });
    await h.request('write', 'metadata/k', { custom_metadata: {} });
    expect((await h.request('read', 'metadata/k'))?.data).toMatchObject({ custom_metadata: null });
  });

  it('patch merges custom_metadata (null removes a key) and leaves other fields alone', async () => {
    const { h } = kvRig();
    await h.request('write', 'metadata/k', { max_versions: 4, cas_required: true, custom_metadata: { a: '1', b: '2' } });
    expect(await h.request('patch', 'metadata/k', { custom_metadata: { b: null, c: '3' }, cas_required: false })).toBeNull();
    expect((await h.request('read', 'metadata/k'))?.data).toMatchObject({
      max_versions: 4, cas_required: false, custom_metadata: { a: '1', c: '3' },
    });
  });

  it('patch with custom_metadata null clears the map', async () => {
    const { h } = kvRig();
    await h.request('write', 'metadata/k', { custom_metadata: { a: '1' } });
    await h.request('patch', 'metadata/k', { custom_metadata: null });
    expect((await h.request('read', 'metadata/k'))?.data).toMatchObject({ custom_metadata: null });
  });

  it('patch answers 404 for a secret that does not exist', async () => {
    const { h } = kvRig();
    await failure(h.request('patch', 'metadata/nope', { max_versions: 1 }), 404);
  });

  it('a write and a patch each commit a change that leaves the versions as they were', async () => {
    const { h, changes } = kvRig();
    await h.request('write', 'data/k', { data: { a: 1 } });
    await h.request('write', 'metadata/k', { max_versions: 2 });
    await h.request('patch', 'metadata/k', { max_versions: 3 });
    const unchanged = { path: 'k', metadata: { currentVersion: 1, versions: { 1: 'live' } } };
    expect(changes).toEqual([unchanged, unchanged, unchanged]);
    expect((await h.request('read', 'metadata/k'))?.data).toMatchObject({ max_versions: 3, current_version: 1 });
  });
});

describe('metadata/: custom_metadata limits', () => {
  it('allows 64 keys, 128-byte keys and 512-byte values', async () => {
    const { h } = kvRig();
    const map: Record<string, string> = {};
    for (let i = 0; i < 63; i++) map[`k${i}`] = 'v';
    map['k'.repeat(128)] = 'v'.repeat(512);
    expect(await h.request('write', 'metadata/k', { custom_metadata: map })).toBeNull();
  });

  it('refuses more than 64 keys', async () => {
    const { h } = kvRig();
    const map: Record<string, string> = {};
    for (let i = 0; i < 65; i++) map[`k${i}`] = 'v';
    expect(await badRequest(h.request('write', 'metadata/k', { custom_metadata: map }), 'custom_metadata')).toContain('64 keys');
  });

  it('refuses a key over 128 bytes, counting UTF-8 bytes', async () => {
    const { h } = kvRig();
    const msg = await badRequest(h.request('write', 'metadata/k', { custom_metadata: { ['é'.repeat(65)]: 'v' } }), 'custom_metadata');
    expect(msg).toContain('128 bytes');
  });

  it('refuses a value over 512 bytes', async () => {
    const { h } = kvRig();
    const msg = await badRequest(h.request('write', 'metadata/k', { custom_metadata: { k: 'v'.repeat(513) } }), 'custom_metadata');
    expect(msg).toContain('512 bytes');
  });

  it('checks the limits on the merged result of a patch', async () => {
    const { h } = kvRig();
    const map: Record<string, string> = {};
    for (let i = 0; i < 64; i++) map[`k${i}`] = 'v';
    await h.request('write', 'metadata/k', { custom_metadata: map });
    await badRequest(h.request('patch', 'metadata/k', { custom_metadata: { extra: 'v' } }), 'custom_metadata');
    expect(await h.request('patch', 'metadata/k', { custom_metadata: { k0: null, extra: 'v' } })).toBeNull();
  });

  it('refuses non-string values and non-object maps', async () => {
    const { h } = kvRig();
    await badRequest(h.request('write', 'metadata/k', { custom_metadata: { n: 1 } }), 'custom_metadata');
    await badRequest(h.request('write', 'metadata/k', { custom_metadata: 'a=b' }), 'custom_metadata');
    await badRequest(h.request('write', 'metadata/k', { custom_metadata: { '': 'v' } }), 'custom_metadata');
    await h.request('write', 'metadata/k', { max_versions: 1 });
    await badRequest(h.request('patch', 'metadata/k', { custom_metadata: { n: 1 } }), 'custom_metadata');
    await badRequest(h.request('patch', 'metadata/k', { custom_metadata: ['a'] }), 'custom_metadata');
  });
});

describe('metadata/: bad input', () => {
  it('names the field for wrong types and negative values', async () => {
    const { h } = kvRig();
    await badRequest(h.request('write', 'metadata/k', { max_versions: -1 }), 'max_versions');
    await badRequest(h.request('write', 'metadata/k', { max_versions: 'ten' }), 'max_versions');
    await badRequest(h.request('write', 'metadata/k', { cas_required: 'maybe' }), 'cas_required');
    await badRequest(h.request('write', 'metadata/k', { delete_version_after: 'soon' }), 'delete_version_after');
    await badRequest(h.request('write', 'metadata/k', { delete_version_after: { h: 1 } }), 'delete_version_after');
    // Longer than any Go duration: a deletion time that far off has no date to show.
    await badRequest(h.request('write', 'metadata/k', { delete_version_after: '99999999999999999999h' }), 'delete_version_after');
    await badRequest(h.request('write', 'config', { delete_version_after: 1e308 }), 'delete_version_after');
    await badRequest(h.request('write', 'metadata/k', { delete_version_after: '-' + '9'.repeat(400) }), 'delete_version_after');
    await h.request('write', 'data/k', { data: { a: 1 } });
    await h.request('write', 'metadata/k', { max_versions: 1 });
    await badRequest(h.request('patch', 'metadata/k', { max_versions: -3 }), 'max_versions');
  });

  it('does not create metadata when the request is refused', async () => {
    const { h } = kvRig();
    await badRequest(h.request('write', 'metadata/k', { max_versions: 2, custom_metadata: { k: 'v'.repeat(600) } }), 'custom_metadata');
    await failure(h.request('read', 'metadata/k'), 404);
  });

  it('refuses a write without a secret path', async () => {
    const { h } = kvRig();
    await failure(h.request('write', 'metadata/', { max_versions: 1 }), 400);
  });
});

describe('metadata/: list', () => {
  async function seeded() {
    const rig = kvRig();
    for (const p of ['app/db', 'app/api', 'app/team/a', 'top', 'zeta/deep/x']) await rig.h.request('write', `data/${p}`, { data: { v: 1 } });
    await rig.h.request('write', 'metadata/meta-only', { max_versions: 1 });
    return rig;
  }

  it('lists secrets and folders at the root', async () => {
    const { h } = await seeded();
    expect(await h.request('list', 'metadata/')).toEqual({ data: { keys: ['app/', 'meta-only', 'top', 'zeta/'] } });
    expect(await h.request('list', 'metadata')).toEqual({ data: { keys: ['app/', 'meta-only', 'top', 'zeta/'] } });
  });

  it('lists a nested folder, with or without the trailing slash', async () => {
    const { h } = await seeded();
    expect(await h.request('list', 'metadata/app/')).toEqual({ data: { keys: ['api', 'db', 'team/'] } });
    expect(await h.request('list', 'metadata/app')).toEqual({ data: { keys: ['api', 'db', 'team/'] } });
    expect(await h.request('list', 'metadata/zeta/deep/')).toEqual({ data: { keys: ['x'] } });
  });

  it('lists a secret and a folder of the same name side by side', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/a', { data: { v: 1 } });
    await h.request('write', 'data/a/b', { data: { v: 1 } });
    expect(await h.request('list', 'metadata/')).toEqual({ data: { keys: ['a', 'a/'] } });
  });

  it('returns empty keys for an empty folder (the HTTP layer answers 404)', async () => {
    const { h } = kvRig();
    expect(await h.request('list', 'metadata/none/')).toEqual({ data: { keys: [] } });
  });

  it('keeps soft-deleted and destroyed secrets listed until their metadata is deleted', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/gone', { data: { v: 1 } });
    await h.request('write', 'destroy/gone', { versions: [1] });
    expect((await h.request('list', 'metadata/'))?.data).toEqual({ keys: ['gone'] });
    await h.request('delete', 'metadata/gone');
    expect((await h.request('list', 'metadata/'))?.data).toEqual({ keys: [] });
  });
});

describe('metadata/: delete', () => {
  it('removes the metadata and every version permanently', async () => {
    const storage = new MemoryStorage();
    const { h, changes } = kvRig({ storage });
    await h.request('write', 'data/k', { data: { v: 1 } });
    await h.request('write', 'data/k', { data: { v: 2 } });
    await h.request('write', 'data/keep', { data: { v: 1 } });
    expect(await h.request('delete', 'metadata/k')).toBeNull();
    await failure(h.request('read', 'metadata/k'), 404);
    await failure(h.request('read', 'data/k', { version: 1 }), 404);
    expect([...storage.data.keys()].filter((key) => key.startsWith('versions/'))).toHaveLength(1);
    // One change, after the three writes: the metadata is gone, and with it every version.
    expect(changes.slice(3)).toEqual([{ path: 'k', metadata: null }]);
    // Writing again starts over at version 1.
    expect((await h.request('write', 'data/k', { data: { v: 3 } }))?.data).toMatchObject({ version: 1 });
    expect(h.lastOperation).toBe('create');
  });

  it('is a no-op for a secret that does not exist', async () => {
    const { h, changes } = kvRig();
    expect(await h.request('delete', 'metadata/none')).toBeNull();
    expect(changes).toEqual([]);
  });
});
