import { MemoryStorage } from '@strongroom/core';
import { badRequest, failure, kvRig } from './test-support/kv-harness';

async function threeVersions() {
  const storage = new MemoryStorage();
  const rig = kvRig({ storage });
  for (let v = 1; v <= 3; v++) await rig.h.request('write', 'data/k', { data: { v } });
  rig.changes.length = 0;
  return { ...rig, storage };
}

async function versionStates(h: Awaited<ReturnType<typeof threeVersions>>['h']) {
  const meta = (await h.request('read', 'metadata/k'))?.data as { versions: Record<string, { deletion_time: string; destroyed: boolean }> };
  return Object.fromEntries(Object.entries(meta.versions).map(([n, v]) => [n, v.destroyed ? 'destroyed' : v.deletion_time === '' ? 'live' : 'deleted']));
}

describe('delete/', () => {
  it('soft-deletes the given versions only', async () => {
    const { h, clock } = await threeVersions();
    await clock.advance(3000);
    expect(await h.request('write', 'delete/k', { versions: [1, 3] })).toBeNull();
    expect(await versionStates(h)).toEqual({ 1: 'deleted', 2: 'live', 3: 'deleted' });
    expect(await h.request('read', 'data/k', { version: 1 })).toEqual({
      status: 404,
      data: { data: null, metadata: expect.objectContaining({ version: 1, deletion_time: '2026-01-01T00:00:03Z', destroyed: false }) },
    });
    expect((await h.request('read', 'data/k', { version: 2 }))?.data).toMatchObject({ data: { v: 2 } });
    expect((await h.request('read', 'data/k'))?.status).toBe(404);
  });

  it('accepts a comma-separated string or a single number, and skips versions that do not exist', async () => {
    const { h, changes } = await threeVersions();
    await h.request('write', 'delete/k', { versions: '1,2' });
    await h.request('write', 'delete/k', { versions: 3 });
    await h.request('write', 'delete/k', { versions: [99] });
    expect(await versionStates(h)).toEqual({ 1: 'deleted', 2: 'deleted', 3: 'deleted' });
    // The request naming only a missing version commits nothing.
    expect(changes).toEqual([
      { path: 'k', metadata: { currentVersion: 3, versions: { 1: 'deleted', 2: 'deleted', 3: 'live' } } },
      { path: 'k', metadata: { currentVersion: 3, versions: { 1: 'deleted', 2: 'deleted', 3: 'deleted' } } },
    ]);
  });

  it('is a 204 no-op for a secret that does not exist', async () => {
    const { h, changes } = kvRig();
    expect(await h.request('write', 'delete/ghost', { versions: [1] })).toBeNull();
    expect(changes).toEqual([]);
  });
});

describe('undelete/', () => {
  it('restores soft-deleted versions', async () => {
    const { h, changes } = await threeVersions();
    await h.request('write', 'delete/k', { versions: [1, 2] });
    expect(await h.request('write', 'undelete/k', { versions: [2, 3] })).toBeNull();
    expect(await versionStates(h)).toEqual({ 1: 'deleted', 2: 'live', 3: 'live' });
    expect((await h.request('read', 'data/k', { version: 2 }))?.data).toMatchObject({ data: { v: 2 }, metadata: { deletion_time: '' } });
    expect(changes).toEqual([
      { path: 'k', metadata: { currentVersion: 3, versions: { 1: 'deleted', 2: 'deleted', 3: 'live' } } },
      { path: 'k', metadata: { currentVersion: 3, versions: { 1: 'deleted', 2: 'live', 3: 'live' } } },
    ]);
  });

  it('cannot bring back a destroyed version', async () => {
    const { h } = await threeVersions();
    await h.request('write', 'delete/k', { versions: [1] });
    await h.request('write', 'destroy/k', { versions: [1] });
    await h.request('write', 'undelete/k', { versions: [1] });
    expect(await h.request('read', 'data/k', { version: 1 })).toMatchObject({ status: 404, data: { data: null, metadata: { destroyed: true } } });
  });
});

describe('destroy/', () => {
  it('removes the data permanently and keeps the metadata marked destroyed', async () => {
    const { h, storage, changes } = await threeVersions();
    expect(await h.request('write', 'destroy/k', { versions: [2] })).toBeNull();
    expect(await versionStates(h)).toEqual({ 1: 'live', 2: 'destroyed', 3: 'live' });
    expect(await h.request('read', 'data/k', { version: 2 })).toEqual({
      status: 404,
      data: { data: null, metadata: { created_time: '2026-01-01T00:00:00Z', custom_metadata: null, deletion_time: '', destroyed: true, version: 2 } },
    });
    const versionKeys = [...storage.data.keys()].filter((k) => k.startsWith('versions/')).map((k) => k.split('/').pop());
    expect(versionKeys.sort()).toEqual(['1', '3']);
    expect(changes).toEqual([{ path: 'k', metadata: { currentVersion: 3, versions: { 1: 'live', 2: 'destroyed', 3: 'live' } } }]);
  });

  it('commits nothing when destroying an already destroyed version', async () => {
    const { h, changes } = await threeVersions();
    await h.request('write', 'destroy/k', { versions: [1] });
    await h.request('write', 'destroy/k', { versions: [1] });
    expect(changes).toEqual([{ path: 'k', metadata: { currentVersion: 3, versions: { 1: 'destroyed', 2: 'live', 3: 'live' } } }]);
  });
});

describe('delete/, undelete/, destroy/: bad input', () => {
  it.each(['delete', 'undelete', 'destroy'])('%s/ requires a non-empty list of version numbers', async (endpoint) => {
    const { h } = await threeVersions();
    await badRequest(h.request('write', `${endpoint}/k`, {}), 'versions');
    await badRequest(h.request('write', `${endpoint}/k`, { versions: [] }), 'versions');
    await badRequest(h.request('write', `${endpoint}/k`, { versions: '' }), 'versions');
    await badRequest(h.request('write', `${endpoint}/k`, { versions: ['one'] }), 'versions');
    await badRequest(h.request('write', `${endpoint}/k`, { versions: [1.5] }), 'versions');
    await badRequest(h.request('write', `${endpoint}/k`, { versions: [-1] }), 'versions');
    await badRequest(h.request('write', `${endpoint}/k`, { versions: { 1: true } }), 'versions');
    expect(await versionStates(h)).toEqual({ 1: 'live', 2: 'live', 3: 'live' });
  });

  it('refuses a write to a folder path', async () => {
    const { h } = kvRig();
    await failure(h.request('write', 'destroy/dir/', { versions: [1] }), 400);
  });
});
