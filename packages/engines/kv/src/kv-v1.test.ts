import { MemoryStorage } from '@strongroom/core';
import { failure, kvRig } from './test-support/kv-harness';

describe('KV version 1', () => {
  it('serves mounts without a version option and with version "1"', async () => {
    for (const version of [null, '1']) {
      const { h } = kvRig({ version });
      expect(await h.request('write', 'app/db', { user: 'admin', port: 5432 })).toBeNull();
      expect(await h.request('read', 'app/db')).toEqual({ data: { user: 'admin', port: 5432 } });
    }
  });

  it('replaces the whole map on write, with create and update told apart', async () => {
    const { h } = kvRig({ version: '1' });
    await h.request('write', 'k', { a: '1', b: '2' });
    expect(h.lastOperation).toBe('create');
    await h.request('write', 'k', { c: '3' });
    expect(h.lastOperation).toBe('update');
    expect((await h.request('read', 'k'))?.data).toEqual({ c: '3' });
  });

  it('takes any key, including ones that are field names in v2 and paths that look like v2 endpoints', async () => {
    const { h } = kvRig({ version: '1' });
    const resp = await h.request('write', 'data/config', { data: 'plain string', options: 7, versions: 'x' });
    expect(resp).toBeNull();
    expect((await h.request('read', 'data/config'))?.data).toEqual({ data: 'plain string', options: 7, versions: 'x' });
    await h.request('write', 'config', { max_versions: 'lots' });
    expect((await h.request('read', 'config'))?.data).toEqual({ max_versions: 'lots' });
  });

  it('deletes and answers 404 for what is not there', async () => {
    const { h } = kvRig({ version: '1' });
    await h.request('write', 'k', { a: 1 });
    expect(await h.request('delete', 'k')).toBeNull();
    await failure(h.request('read', 'k'), 404);
    expect(await h.request('delete', 'k')).toBeNull();
  });

  it('lists keys and folders at the root and below', async () => {
    const { h } = kvRig({ version: '1' });
    for (const p of ['a', 'a/b', 'a/c/d', 'z']) await h.request('write', p, { v: 1 });
    expect(await h.request('list', '')).toEqual({ data: { keys: ['a', 'a/', 'z'] } });
    expect(await h.request('list', 'a/')).toEqual({ data: { keys: ['b', 'c/'] } });
    expect(await h.request('list', 'a')).toEqual({ data: { keys: ['b', 'c/'] } });
  });

  it('refuses an empty body, an empty path and patch', async () => {
    const { h } = kvRig({ version: '1' });
    await failure(h.request('write', 'k', {}), 400);
    await failure(h.request('write', '', { a: 1 }), 400);
    await h.request('write', 'k', { a: 1 });
    await failure(h.request('patch', 'k', { a: 2 }), 405);
  });

  it('keeps its entries apart from the v2 layout, so the v2 view sees no secret change', async () => {
    const storage = new MemoryStorage();
    const { h, changes } = kvRig({ version: '1', storage });
    await h.request('write', 'k', { a: 1 });
    expect([...storage.data.keys()]).toEqual(['v1/k']);
    expect(changes).toEqual([]);
  });
});
