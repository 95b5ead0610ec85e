import { call, initAndUnseal, startTestServer, type TestServer } from '../test-support/servers';

/** The sys/storage/raft endpoints on a cluster of one, through HTTP. */
describe('sys/storage/raft on a single node', () => {
  let t: TestServer;
  let root: string;

  beforeAll(async () => {
    t = await startTestServer();
    root = await initAndUnseal(t);
  });
  afterAll(async () => {
    await t.stop();
  });

  async function snapshotOf(server: TestServer, token: string): Promise<Buffer> {
    const res = await fetch(`${server.url}/v1/sys/storage/raft/snapshot`, { headers: { 'x-vault-token': token } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    return Buffer.from(await res.arrayBuffer());
  }

  function restore(server: TestServer, token: string, snap: Buffer, force = false) {
    return call(server.url, 'POST', `sys/storage/raft/snapshot${force ? '-force' : ''}`, {
      token, raw: snap as unknown as string, headers: { 'content-type': 'application/octet-stream' },
    });
  }

  it('reports the configuration and autopilot state', async () => {
    const config = await call(t.url, 'GET', 'sys/storage/raft/configuration', { token: root });
    expect(config.status).toBe(200);
    expect(config.json.data.config.servers).toEqual([expect.objectContaining({ node_id: 'test', leader: true, voter: true })]);
    const state = await call(t.url, 'GET', 'sys/storage/raft/autopilot/state', { token: root });
    expect(state.json.data).toMatchObject({ healthy: true, leader: 'test', voters: ['test'], failure_tolerance: 0 });
    const leader = await call(t.url, 'GET', 'sys/leader');
    expect(leader.json).toMatchObject({ ha_enabled: true, is_self: true });
  });

  it('reads and sets the autopilot configuration, keeping unset fields, and refuses bad values with 400', async () => {
    const path = 'sys/storage/raft/autopilot/configuration';
    const before = await call(t.url, 'GET', path, { token: root });
    expect(before.status).toBe(200);
    // The test server runs at the default tick: Vault's defaults.
    expect(before.json.data).toEqual({ cleanup_dead_servers: false, last_contact_threshold: '2s', max_trailing_logs: 1000, server_stabilization_time: '10s' });
    expect((await call(t.url, 'POST', path, { token: root, body: { server_stabilization_time: '30s' } })).status).toBe(204);
    expect((await call(t.url, 'POST', path, { token: root, body: { max_trailing_logs: 50, last_contact_threshold: 5 } })).status).toBe(204);
    expect((await call(t.url, 'GET', path, { token: root })).json.data).toEqual({
      cleanup_dead_servers: false, last_contact_threshold: '5s', max_trailing_logs: 50, server_stabilization_time: '30s',
    });
    for (const [body, field] of [
      [{ last_contact_threshold: '0s' }, 'last_contact_threshold'], [{ max_trailing_logs: -1 }, 'max_trailing_logs'],
      [{ server_stabilization_time: 'soon' }, 'server_stabilization_time'], [{ cleanup_dead_servers: true }, 'cleanup_dead_servers'],
    ] as const) {
      const bad = await call(t.url, 'POST', path, { token: root, body });
      expect({ field, status: bad.status }).toEqual({ field, status: 400 });
      expect(bad.json.errors[0]).toContain(field);
    }
    expect((await call(t.url, 'GET', path)).status).toBe(403);
  });

  it('needs a token with sudo for snapshots, and refuses removing the last voter', async () => {
    expect((await call(t.url, 'GET', 'sys/storage/raft/snapshot')).status).toBe(403);
    const removal = await call(t.url, 'POST', 'sys/storage/raft/remove-peer', { token: root, body: { server_id: 'test' } });
    expect(removal.status).toBe(400);
    expect(removal.json.errors[0]).toMatch(/last voter/);
    const bad = await call(t.url, 'POST', 'sys/storage/raft/remove-peer', { token: root, body: { server_id: '../x' } });
    expect(bad.status).toBe(400);
    expect(bad.json.errors[0]).toMatch(/server_id/);
  });

  it('restores a snapshot: the data returns to what it was when taken', async () => {
    await call(t.url, 'POST', 'secret/data/kept', { token: root, body: { data: { v: 'before' } } });
    const snap = await snapshotOf(t, root);
    await call(t.url, 'POST', 'secret/data/kept', { token: root, body: { data: { v: 'after' } } });
    await call(t.url, 'POST', 'secret/data/new', { token: root, body: { data: { v: 'later' } } });

    const restored = await restore(t, root, snap);
    expect(restored.status).toBe(204);
    await t.server.waitActive();
    expect((await call(t.url, 'GET', 'secret/data/kept', { token: root })).json.data.data).toEqual({ v: 'before' });
    expect((await call(t.url, 'GET', 'secret/data/new', { token: root })).status).toBe(404);
  });

  it('refuses garbage, and a snapshot of a cluster with other keys unless forced', async () => {
    const garbage = await restore(t, root, Buffer.from('not a snapshot at all'));
    expect(garbage.status).toBe(400);

    const other = await startTestServer();
    try {
      const otherRoot = await initAndUnseal(other);
      await call(other.url, 'POST', 'secret/data/theirs', { token: otherRoot, body: { data: { v: 'x' } } });
      const foreign = await snapshotOf(other, otherRoot);
      const refused = await restore(t, root, foreign);
      expect(refused.status).toBe(400);
      expect(refused.json.errors[0]).toMatch(/other unseal keys.*snapshot-force/);
      // Still serving its own data.
      expect((await call(t.url, 'GET', 'secret/data/kept', { token: root })).status).toBe(200);
    } finally {
      await other.stop();
    }
  });

  it('with force, takes over a snapshot made with other keys: sealed, then unsealed with those keys', async () => {
    const target = await startTestServer();
    const source = await startTestServer();
    try {
      const targetRoot = await initAndUnseal(target);
      const { keys, rootToken: sourceRoot } = await source.server.core.initialize(1, 1);
      await source.server.core.unseal(keys[0] as Buffer);
      await source.server.waitActive();
      await call(source.url, 'POST', 'sys/mounts/kv', { token: sourceRoot, body: { type: 'kv-v2' } });
      await call(source.url, 'POST', 'kv/data/moved', { token: sourceRoot, body: { data: { v: 'from the source' } } });
      const snap = await snapshotOf(source, sourceRoot);

      expect((await restore(target, targetRoot, snap, true)).status).toBe(204);
      expect(target.server.core.sealed).toBe(true);
      const status = await call(target.url, 'GET', 'sys/seal-status');
      expect(status.json).toMatchObject({ initialized: true, sealed: true });
      // The target's own key no longer opens anything; the source's does.
      await target.server.core.unseal(keys[0] as Buffer);
      await target.server.waitActive();
      expect((await call(target.url, 'GET', 'kv/data/moved', { token: sourceRoot })).json.data.data).toEqual({ v: 'from the source' });
      expect((await call(target.url, 'GET', 'auth/token/lookup-self', { token: targetRoot })).status).toBe(403);
    } finally {
      await source.stop();
      await target.stop();
    }
  });
});
