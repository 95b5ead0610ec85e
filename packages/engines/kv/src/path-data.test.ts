import type { LogicalStorage, TxnOp } from '@strongroom/core';
import { MemoryStorage } from '@strongroom/core';
import { T0, badRequest, failure, kvRig } from './test-support/kv-harness';

describe('data/: write and read', () => {
  it('writes version 1 and answers with exactly the version metadata', async () => {
    const { h } = kvRig();
    const resp = await h.request('write', 'data/app/db', { data: { user: 'admin', pass: 's3cret' } });
    expect(resp).toEqual({
      data: { created_time: T0, custom_metadata: null, deletion_time: '', destroyed: false, version: 1 },
    });
  });

  it('reads the current version with data and metadata', async () => {
    const { h, clock } = kvRig();
    await h.request('write', 'data/app/db', { data: { user: 'admin', nested: { a: [1, 2] } } });
    await clock.advance(1500);
    await h.request('write', 'data/app/db', { data: { user: 'root' } });
    const resp = await h.request('read', 'data/app/db');
    expect(resp).toEqual({
      data: {
        data: { user: 'root' },
        metadata: { created_time: '2026-01-01T00:00:01.5Z', custom_metadata: null, deletion_time: '', destroyed: false, version: 2 },
      },
    });
  });

  it('reads an older version with ?version=N, given as a number or a query string', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { v: 1 } });
    await h.request('write', 'data/k', { data: { v: 2 } });
    expect((await h.request('read', 'data/k', { version: 1 }))?.data).toMatchObject({ data: { v: 1 }, metadata: { version: 1 } });
    expect((await h.request('read', 'data/k', { version: '2' }))?.data).toMatchObject({ data: { v: 2 }, metadata: { version: 2 } });
    expect((await h.request('read', 'data/k', { version: 0 }))?.data).toMatchObject({ data: { v: 2 } });
  });

  it('answers 404 without a body for a missing secret or a version that never existed', async () => {
    const { h } = kvRig();
    await failure(h.request('read', 'data/nope'), 404);
    await h.request('write', 'data/k', { data: { v: 1 } });
    await failure(h.request('read', 'data/k', { version: 7 }), 404);
  });

  it('answers 404 without a body when only metadata exists', async () => {
    const { h } = kvRig();
    await h.request('write', 'metadata/only-meta', { max_versions: 3 });
    await failure(h.request('read', 'data/only-meta'), 404);
  });

  it('includes custom_metadata from the secret in data replies', async () => {
    const { h } = kvRig();
    await h.request('write', 'metadata/k', { custom_metadata: { owner: 'team-a' } });
    const write = await h.request('write', 'data/k', { data: { v: 1 } });
    expect(write?.data).toMatchObject({ custom_metadata: { owner: 'team-a' }, version: 1 });
    const read = await h.request('read', 'data/k');
    expect((read?.data as { metadata: unknown }).metadata).toMatchObject({ custom_metadata: { owner: 'team-a' } });
  });

  it('keeps secrets whose paths nest inside each other apart', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/a', { data: { who: 'a' } });
    await h.request('write', 'data/a/1', { data: { who: 'a/1' } });
    await h.request('delete', 'metadata/a');
    expect((await h.request('read', 'data/a/1'))?.data).toMatchObject({ data: { who: 'a/1' } });
    await failure(h.request('read', 'data/a'), 404);
  });

  it('does not share stored objects between the request and later reads', async () => {
    const { h } = kvRig();
    const data = { v: 'original' };
    await h.request('write', 'data/k', { data });
    data.v = 'mutated';
    expect((await h.request('read', 'data/k'))?.data).toMatchObject({ data: { v: 'original' } });
  });
});

describe('data/: existence check', () => {
  it('resolves the first write to create and later writes to update', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { v: 1 } });
    expect(h.lastOperation).toBe('create');
    await h.request('write', 'data/k', { data: { v: 2 } });
    expect(h.lastOperation).toBe('update');
  });

  it('treats a secret with metadata but no versions as existing', async () => {
    const { h } = kvRig();
    await h.request('write', 'metadata/k', { max_versions: 2 });
    await h.request('write', 'data/k', { data: { v: 1 } });
    expect(h.lastOperation).toBe('update');
  });
});

describe('data/: check-and-set', () => {
  it('cas 0 writes only when the secret does not exist yet', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { v: 1 }, options: { cas: 0 } });
    const err = await failure(h.request('write', 'data/k', { data: { v: 2 }, options: { cas: 0 } }), 400);
    expect(err.message).toBe('check-and-set parameter did not match the current version');
  });

  it('cas N writes only when N is the current version', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { v: 1 } });
    await h.request('write', 'data/k', { data: { v: 2 } });
    await failure(h.request('write', 'data/k', { data: { v: 3 }, options: { cas: 1 } }), 400);
    const ok = await h.request('write', 'data/k', { data: { v: 3 }, options: { cas: '2' } });
    expect(ok?.data).toMatchObject({ version: 3 });
  });

  it('cas compares with the current version even when that version is deleted', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { v: 1 } });
    await h.request('delete', 'data/k');
    await failure(h.request('write', 'data/k', { data: { v: 2 }, options: { cas: 0 } }), 400);
    expect((await h.request('write', 'data/k', { data: { v: 2 }, options: { cas: 1 } }))?.data).toMatchObject({ version: 2 });
  });

  it('cas_required on the mount config refuses writes without cas', async () => {
    const { h } = kvRig();
    await h.request('write', 'config', { cas_required: true });
    const err = await failure(h.request('write', 'data/k', { data: { v: 1 } }), 400);
    expect(err.message).toBe('check-and-set parameter required for this call');
    await failure(h.request('write', 'data/k', { data: { v: 1 }, options: {} }), 400);
    expect((await h.request('write', 'data/k', { data: { v: 1 }, options: { cas: 0 } }))?.data).toMatchObject({ version: 1 });
  });

  it('cas_required on the secret metadata refuses writes without cas to that secret only', async () => {
    const { h } = kvRig();
    await h.request('write', 'metadata/guarded', { cas_required: true });
    await failure(h.request('write', 'data/guarded', { data: { v: 1 } }), 400);
    await h.request('write', 'data/guarded', { data: { v: 1 }, options: { cas: 0 } });
    await h.request('write', 'data/other', { data: { v: 1 } });
  });

  it('lets only one of two concurrent writes with the same cas through', async () => {
    const { h } = kvRig();
    const results = await Promise.allSettled([
      h.request('write', 'data/race', { data: { who: 'first' }, options: { cas: 0 } }),
      h.request('write', 'data/race', { data: { who: 'second' }, options: { cas: 0 } }),
      h.request('write', 'data/race', { data: { who: 'third' }, options: { cas: 0 } }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((await h.request('read', 'metadata/race'))?.data).toMatchObject({ current_version: 1 });
  });

  it('numbers concurrent writes without cas consecutively', async () => {
    const { h } = kvRig();
    await Promise.all(Array.from({ length: 5 }, (_, i) => h.request('write', 'data/many', { data: { i } })));
    const meta = (await h.request('read', 'metadata/many'))?.data as { current_version: number; versions: Record<string, unknown> };
    expect(meta.current_version).toBe(5);
    expect(Object.keys(meta.versions)).toEqual(['1', '2', '3', '4', '5']);
  });
});

describe('data/: max_versions', () => {
  it('keeps 10 versions by default and moves oldest_version', async () => {
    const { h } = kvRig();
    for (let i = 1; i <= 12; i++) await h.request('write', 'data/k', { data: { i } });
    const meta = (await h.request('read', 'metadata/k'))?.data as Record<string, unknown>;
    expect(meta['current_version']).toBe(12);
    expect(meta['oldest_version']).toBe(3);
    expect(Object.keys(meta['versions'] as object)).toEqual(['3', '4', '5', '6', '7', '8', '9', '10', '11', '12']);
    await failure(h.request('read', 'data/k', { version: 2 }), 404);
    expect((await h.request('read', 'data/k', { version: 3 }))?.data).toMatchObject({ data: { i: 3 } });
  });

  it('reports oldest_version 0 until trimming first happens', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { i: 1 } });
    expect((await h.request('read', 'metadata/k'))?.data).toMatchObject({ oldest_version: 0, current_version: 1 });
  });

  it('removes the data of trimmed versions from storage', async () => {
    const storage = new MemoryStorage();
    const { h } = kvRig({ storage });
    await h.request('write', 'config', { max_versions: 2 });
    for (let i = 1; i <= 5; i++) await h.request('write', 'data/k', { data: { i } });
    const versionKeys = [...storage.data.keys()].filter((k) => k.startsWith('versions/'));
    expect(versionKeys).toHaveLength(2);
    expect(versionKeys.map((k) => k.split('/').pop()).sort()).toEqual(['4', '5']);
  });

  it('uses the secret\'s limit when the mount sets none', async () => {
    const { h } = kvRig();
    await h.request('write', 'metadata/k', { max_versions: 2 });
    for (let i = 1; i <= 4; i++) await h.request('write', 'data/k', { data: { i } });
    expect((await h.request('read', 'metadata/k'))?.data).toMatchObject({ oldest_version: 3, current_version: 4, max_versions: 2 });
  });

  it('uses the mount\'s limit when the secret sets none', async () => {
    const { h } = kvRig();
    await h.request('write', 'config', { max_versions: 3 });
    for (let i = 1; i <= 5; i++) await h.request('write', 'data/k', { data: { i } });
    const meta = (await h.request('read', 'metadata/k'))?.data as Record<string, unknown>;
    expect(Object.keys(meta['versions'] as object)).toEqual(['3', '4', '5']);
    expect(meta['max_versions']).toBe(0);
  });

  it('keeps the larger limit when both the mount and the secret set one, as Vault does', async () => {
    const { h } = kvRig();
    await h.request('write', 'config', { max_versions: 4 });
    await h.request('write', 'metadata/k', { max_versions: 2 });
    for (let i = 1; i <= 6; i++) await h.request('write', 'data/k', { data: { i } });
    const meta = (await h.request('read', 'metadata/k'))?.data as Record<string, unknown>;
    expect(Object.keys(meta['versions'] as object)).toEqual(['3', '4', '5', '6']);
  });

  it('trims several versions at once after the limit is lowered', async () => {
    const { h } = kvRig();
    for (let i = 1; i <= 6; i++) await h.request('write', 'data/k', { data: { i } });
    await h.request('write', 'metadata/k', { max_versions: 2 });
    await h.request('write', 'data/k', { data: { i: 7 } });
    const meta = (await h.request('read', 'metadata/k'))?.data as Record<string, unknown>;
    expect(Object.keys(meta['versions'] as object)).toEqual(['6', '7']);
    expect(meta['oldest_version']).toBe(6);
  });
});

describe('data/: soft delete of the latest version', () => {
  it('marks only the current version deleted; reading it is a 404 with the metadata', async () => {
    const { h, clock } = kvRig();
    await h.request('write', 'data/k', { data: { v: 1 } });
    await h.request('write', 'data/k', { data: { v: 2 } });
    await clock.advance(2000);
    expect(await h.request('delete', 'data/k')).toBeNull();
    expect(await h.request('read', 'data/k')).toEqual({
      status: 404,
      data: {
        data: null,
        metadata: { created_time: T0, custom_metadata: null, deletion_time: '2026-01-01T00:00:02Z', destroyed: false, version: 2 },
      },
    });
    expect((await h.request('read', 'data/k', { version: 1 }))?.data).toMatchObject({ data: { v: 1 } });
  });

  it('does not move the deletion time when the version is deleted again', async () => {
    const { h, clock, changes } = kvRig();
    await h.request('write', 'data/k', { data: { v: 1 } });
    await h.request('delete', 'data/k');
    await clock.advance(5000);
    await h.request('delete', 'data/k');
    expect((await h.request('read', 'data/k'))?.data).toMatchObject({ metadata: { deletion_time: T0 } });
    expect(changes).toEqual([
      { path: 'k', metadata: { currentVersion: 1, versions: { 1: 'live' } } },
      { path: 'k', metadata: { currentVersion: 1, versions: { 1: 'deleted' } } },
    ]);
  });

  it('is a no-op answered 204 for a secret that does not exist', async () => {
    const { h, changes } = kvRig();
    expect(await h.request('delete', 'data/ghost')).toBeNull();
    expect(changes).toEqual([]);
  });

  it('lets a new write after a delete be read again', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { v: 1 } });
    await h.request('delete', 'data/k');
    await h.request('write', 'data/k', { data: { v: 2 } });
    expect((await h.request('read', 'data/k'))?.data).toMatchObject({ data: { v: 2 }, metadata: { version: 2 } });
  });
});

describe('data/: patch', () => {
  it('merges into the latest version as a new version (RFC 7396, null removes a key)', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { a: 1, b: { c: 2, d: 3 }, drop: 'me', list: [1, 2] } });
    const resp = await h.request('patch', 'data/k', { data: { a: 10, b: { d: null, e: 5 }, drop: null, list: [3], added: 'x' } });
    expect(resp).toEqual({ data: { created_time: T0, custom_metadata: null, deletion_time: '', destroyed: false, version: 2 } });
    expect((await h.request('read', 'data/k'))?.data).toMatchObject({
      data: { a: 10, b: { c: 2, e: 5 }, list: [3], added: 'x' },
    });
    expect((await h.request('read', 'data/k', { version: 1 }))?.data).toMatchObject({ data: { drop: 'me' } });
  });

  it('answers 404 for a missing secret, a deleted latest version and a destroyed one', async () => {
    const { h } = kvRig();
    await failure(h.request('patch', 'data/missing', { data: { a: 1 } }), 404);
    await h.request('write', 'data/k', { data: { a: 1 } });
    await h.request('delete', 'data/k');
    await failure(h.request('patch', 'data/k', { data: { a: 2 } }), 404);
    await h.request('write', 'data/d', { data: { a: 1 } });
    await h.request('write', 'destroy/d', { versions: [1] });
    await failure(h.request('patch', 'data/d', { data: { a: 2 } }), 404);
  });

  it('answers 404 when only metadata exists', async () => {
    const { h } = kvRig();
    await h.request('write', 'metadata/k', { max_versions: 1 });
    await failure(h.request('patch', 'data/k', { data: { a: 1 } }), 404);
  });

  it('honours cas and cas_required', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { a: 1 } });
    await failure(h.request('patch', 'data/k', { data: { a: 2 }, options: { cas: 0 } }), 400);
    await h.request('patch', 'data/k', { data: { a: 2 }, options: { cas: 1 } });
    await h.request('write', 'metadata/k', { cas_required: true });
    const err = await failure(h.request('patch', 'data/k', { data: { a: 3 } }), 400);
    expect(err.message).toBe('check-and-set parameter required for this call');
    expect((await h.request('patch', 'data/k', { data: { a: 3 }, options: { cas: 2 } }))?.data).toMatchObject({ version: 3 });
  });

  it('keeps a "__proto__" key as data', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { a: 1 } });
    await h.request('patch', 'data/k', { data: JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown> });
    const data = ((await h.request('read', 'data/k'))?.data as { data: Record<string, unknown> }).data;
    expect(Object.hasOwn(data, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('data/: delete_version_after', () => {
  it('shows the scheduled deletion time and reads the version as deleted once it passes', async () => {
    const { h, clock } = kvRig();
    await h.request('write', 'config', { delete_version_after: '1h' });
    const write = await h.request('write', 'data/k', { data: { v: 1 } });
    expect(write?.data).toMatchObject({ deletion_time: '2026-01-01T01:00:00Z' });
    await clock.advance(59 * 60 * 1000);
    expect((await h.request('read', 'data/k'))?.data).toMatchObject({ data: { v: 1 } });
    await clock.advance(60 * 1000);
    expect(await h.request('read', 'data/k')).toMatchObject({
      status: 404, data: { data: null, metadata: { deletion_time: '2026-01-01T01:00:00Z', version: 1 } },
    });
  });

  it('takes the smaller of the mount\'s and the secret\'s setting', async () => {
    const { h } = kvRig();
    await h.request('write', 'config', { delete_version_after: '2h' });
    await h.request('write', 'metadata/k', { delete_version_after: '30m' });
    expect((await h.request('write', 'data/k', { data: { v: 1 } }))?.data).toMatchObject({ deletion_time: '2026-01-01T00:30:00Z' });
    expect((await h.request('write', 'data/other', { data: { v: 1 } }))?.data).toMatchObject({ deletion_time: '2026-01-01T02:00:00Z' });
  });

  it('is switched off for the whole mount by a negative config value', async () => {
    const { h } = kvRig();
    await h.request('write', 'config', { delete_version_after: '-1s' });
    await h.request('write', 'metadata/k', { delete_version_after: '30m' });
    expect((await h.request('write', 'data/k', { data: { v: 1 } }))?.data).toMatchObject({ deletion_time: '' });
  });

  it('fixes the deletion time at write: later config changes do not move it', async () => {
    const { h, clock } = kvRig();
    await h.request('write', 'data/k', { data: { v: 1 } });
    await h.request('write', 'config', { delete_version_after: '1s' });
    await clock.advance(10_000);
    expect((await h.request('read', 'data/k'))?.data).toMatchObject({ data: { v: 1 }, metadata: { deletion_time: '' } });
  });

  it('undelete makes an auto-deleted version readable again', async () => {
    const { h, clock } = kvRig();
    await h.request('write', 'config', { delete_version_after: '1m' });
    await h.request('write', 'data/k', { data: { v: 1 } });
    await clock.advance(120_000);
    expect((await h.request('read', 'data/k'))?.status).toBe(404);
    await h.request('write', 'undelete/k', { versions: [1] });
    expect((await h.request('read', 'data/k'))?.data).toMatchObject({ data: { v: 1 }, metadata: { deletion_time: '' } });
  });
});

describe('data/: committed changes', () => {
  it('a write, a patch and a delete each commit the secret\'s new versions', async () => {
    const { h, changes } = kvRig();
    await h.request('write', 'data/app/db', { data: { a: 1 } });
    await h.request('patch', 'data/app/db', { data: { b: 2 } });
    expect((await h.request('read', 'data/app/db'))?.data).toMatchObject({ data: { a: 1, b: 2 }, metadata: { version: 2 } });
    await h.request('delete', 'data/app/db');
    expect(changes).toEqual([
      { path: 'app/db', metadata: { currentVersion: 1, versions: { 1: 'live' } } },
      { path: 'app/db', metadata: { currentVersion: 2, versions: { 1: 'live', 2: 'live' } } },
      { path: 'app/db', metadata: { currentVersion: 2, versions: { 1: 'live', 2: 'deleted' } } },
    ]);
  });

  it('commits nothing when a write is refused', async () => {
    const { h, changes } = kvRig();
    await failure(h.request('write', 'data/k', { data: { a: 1 }, options: { cas: 3 } }), 400);
    expect(changes).toEqual([]);
  });
});

describe('data/: atomic writes', () => {
  /** Records transactions and refuses direct puts/deletes, so every change must go through txn. */
  class TxnOnlyStorage implements LogicalStorage {
    readonly inner = new MemoryStorage();
    readonly txns: TxnOp[][] = [];
    failNext = false;
    get(key: string) { return this.inner.get(key); }
    list(prefix: string) { return this.inner.list(prefix); }
    async put(): Promise<void> { throw new Error('direct put used'); }
    async delete(): Promise<void> { throw new Error('direct delete used'); }
    async txn(ops: TxnOp[]) {
      if (this.failNext) { this.failNext = false; throw new Error('disk full'); }
      this.txns.push(ops);
      return this.inner.txn(ops);
    }
  }

  it('writes the version data, the metadata and the trimmed versions in one transaction', async () => {
    const storage = new TxnOnlyStorage();
    const { h } = kvRig({ storage });
    await h.request('write', 'config', { max_versions: 1 });
    await h.request('write', 'data/k', { data: { v: 1 } });
    await h.request('write', 'data/k', { data: { v: 2 } });
    const last = storage.txns.at(-1) ?? [];
    expect(last.map((op) => `${op.type} ${op.key.replace(/[0-9a-f]{64}/, 'H')}`)).toEqual([
      'put versions/H/2', 'put meta/k', 'delete versions/H/1',
    ]);
  });

  it('leaves nothing behind and commits nothing when the transaction fails', async () => {
    const storage = new TxnOnlyStorage();
    const { h, changes } = kvRig({ storage });
    storage.failNext = true;
    await expect(h.request('write', 'data/k', { data: { v: 1 } })).rejects.toThrow('disk full');
    expect(storage.inner.data.size).toBe(0);
    expect(changes).toEqual([]);
    // The lock was released: the next write goes through.
    expect((await h.request('write', 'data/k', { data: { v: 1 } }))?.data).toMatchObject({ version: 1 });
  });
});

describe('data/: bad input', () => {
  it('refuses a missing or non-object "data"', async () => {
    const { h } = kvRig();
    await badRequest(h.request('write', 'data/k', {}), 'data');
    await badRequest(h.request('write', 'data/k', { data: 'text' }), 'data');
    await badRequest(h.request('write', 'data/k', { data: [1, 2] }), 'data');
    await badRequest(h.request('write', 'data/k', { data: null }), 'data');
    await badRequest(h.request('patch', 'data/k', { data: 5 }), 'data');
    await badRequest(h.request('patch', 'data/k', {}), 'data');
  });

  it('refuses a non-object "options" and a non-integer or negative "cas"', async () => {
    const { h } = kvRig();
    await badRequest(h.request('write', 'data/k', { data: { a: 1 }, options: 'cas=0' }), 'options');
    await badRequest(h.request('write', 'data/k', { data: { a: 1 }, options: { cas: 'one' } }), 'options.cas');
    await badRequest(h.request('write', 'data/k', { data: { a: 1 }, options: { cas: 1.5 } }), 'options.cas');
    await badRequest(h.request('write', 'data/k', { data: { a: 1 }, options: { cas: -1 } }), 'options.cas');
  });

  it('refuses a non-integer or negative "version" on read', async () => {
    const { h } = kvRig();
    await h.request('write', 'data/k', { data: { a: 1 } });
    await badRequest(h.request('read', 'data/k', { version: 'latest' }), 'version');
    await badRequest(h.request('read', 'data/k', { version: -1 }), 'version');
  });

  it('warns about unknown top-level fields on a write', async () => {
    const { h } = kvRig();
    const resp = await h.request('write', 'data/k', { data: { a: 1 }, extra: true });
    expect(resp?.warnings?.[0]).toContain('extra');
  });

  it('refuses a write to a folder path', async () => {
    const { h } = kvRig();
    await failure(h.request('write', 'data/dir/', { data: { a: 1 } }), 400);
  });
});
