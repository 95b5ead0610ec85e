import { followLogical } from '@strongroom/cluster';
import type { LogicalChange, LogicalOp } from '@strongroom/core';
import type { KvSecretChange } from '@strongroom/engine-kv';
import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';

/**
 * The commit feed's logical view on a real server: every KV v2 change shows with its mount and
 * secret path and the secret's version state after it, for secret sync to act on.
 */
describe('the logical view of the commit feed', () => {
  let t: TestServer;
  let root: string;
  beforeAll(async () => {
    t = await startTestServer();
    root = await initAndUnseal(t);
  });
  afterAll(() => t.stop());

  it('shows KV v2 writes, deletes, undeletes, destroys and metadata deletes with mount, path and versions', async () => {
    const feed = t.server.cluster.feed;
    const from = feed.applied + 1;
    const mount = (await call(t.url, 'POST', 'sys/mounts/team-kv', { token: root, body: { type: 'kv', options: { version: '2' } } }));
    expect(mount.status).toBe(204);
    await call(t.url, 'POST', 'sys/mounts/local-kv', { token: root, body: { type: 'kv', local: true, options: { version: '2' } } });
    const steps: Array<[string, string, unknown?]> = [
      ['POST', 'team-kv/data/app/db', { data: { password: 'one' } }],
      ['POST', 'team-kv/data/app/db', { data: { password: 'two' } }],
      ['POST', 'team-kv/delete/app/db', { versions: [2] }],
      ['POST', 'team-kv/undelete/app/db', { versions: [2] }],
      ['POST', 'team-kv/destroy/app/db', { versions: [1] }],
      ['DELETE', 'team-kv/metadata/app/db'],
      ['POST', 'local-kv/data/here', { data: { a: 'b' } }],
    ];
    for (const [method, path, body] of steps) {
      const res = await call(t.url, method, path, { token: root, ...(body ? { body } : {}) });
      expect([path, res.status < 300]).toEqual([path, true]);
    }
    const last = feed.applied;

    const controller = new AbortController();
    const changes: LogicalChange[] = [];
    for await (const batch of followLogical(feed, from, t.server.core, controller.signal)) {
      changes.push(...batch);
      if (batch.some((c) => c.index >= last)) controller.abort();
    }
    const events = changes.flatMap((c) => ('ops' in c ? c.ops : [])).filter((op): op is LogicalOp & { event: KvSecretChange } => op.event?.kind === 'kv-secret');
    const accessor = (await call(t.url, 'GET', 'sys/mounts/team-kv', { token: root })).json.data.accessor as string;
    const team = events.filter((e) => e.mount?.path === 'team-kv/');
    for (const e of team) expect(e.mount).toMatchObject({ namespace: '', accessor, type: 'kv', local: false, kind: 'secret' });
    // One metadata change per request, each with the state after it.
    const states = team.map((e) => {
      const m = e.event.metadata;
      if (!m) return null;
      return [m.currentVersion, Object.fromEntries(Object.entries(m.versions).map(([n, v]) => [n, v.destroyed ? 'destroyed' : v.deletionTime !== null ? 'deleted' : 'live']))];
    });
    expect(team.map((e) => e.event.path)).toEqual(Array(6).fill('app/db'));
    expect(states).toEqual([
      [1, { 1: 'live' }],
      [2, { 1: 'live', 2: 'live' }],
      [2, { 1: 'live', 2: 'deleted' }],
      [2, { 1: 'live', 2: 'live' }],
      [2, { 1: 'destroyed', 2: 'live' }],
      null,
    ]);
    const local = events.find((e) => e.mount?.path === 'local-kv/');
    expect(local).toMatchObject({ local: true, event: { path: 'here' } });
    // Nothing of the secret values is in the view.
    expect(JSON.stringify(changes.flatMap((c) => ('ops' in c ? c.ops.map((op) => op.event ?? null) : [])))).not.toContain('two');
  });

  it('names the system area for what is not a mount\'s data', async () => {
    const feed = t.server.cluster.feed;
    const from = feed.applied + 1;
    await call(t.url, 'POST', 'sys/policies/acl/feed-test', { token: root, body: { policy: 'path "x/*" { capabilities = ["read"] }' } });
    const batch = (await feed.read(from, 100)).map((c) => t.server.core.logicalChange(c));
    const ops = batch.flatMap((c) => ('ops' in c ? c.ops : []));
    expect(ops.some((op) => op.area === 'system' && op.relativeKey === op.key && op.local === false)).toBe(true);
  });

  it('decrypts a written value only when its engine reading is asked for, and once', async () => {
    const feed = t.server.cluster.feed;
    await call(t.url, 'POST', 'sys/mounts/lazy-kv', { token: root, body: { type: 'kv', options: { version: '2' } } });
    const from = feed.applied + 1;
    expect((await call(t.url, 'POST', 'lazy-kv/data/app', { token: root, body: { data: { a: 'b' } } })).status).toBe(200);
    const barrier = t.server.core.barrier;
    const decrypt = jest.spyOn(barrier, 'decrypt');
    try {
      const ops = (await feed.read(from, 100)).map((c) => t.server.core.logicalChange(c)).flatMap((c) => ('ops' in c ? c.ops : []));
      const mine = ops.filter((op) => op.mount?.path === 'lazy-kv/');
      expect(mine.length).toBeGreaterThan(0);
      expect(decrypt).not.toHaveBeenCalled();
      const described = mine.filter((op) => op.event?.kind === 'kv-secret');
      expect(described).toHaveLength(1);
      const calls = decrypt.mock.calls.length;
      expect(calls).toBeGreaterThan(0);
      expect(described[0]!.event).toMatchObject({ path: 'app' });
      expect(decrypt).toHaveBeenCalledTimes(calls);
    } finally {
      decrypt.mockRestore();
    }
  });
});
