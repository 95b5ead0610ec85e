import { call, initAndUnseal, startTestServer, type TestServer } from '../test-support/servers';

/**
 * On the active node of a cluster, a key it has just written must be served from its cache: the
 * Raft apply notice for that write arrives while the write still awaits its result, and must not
 * count as a change made behind the cache's back.
 */
describe('the active node of a three-node cluster', () => {
  let nodes: TestServer[] = [];
  let root: string;
  jest.setTimeout(90_000);

  beforeAll(async () => {
    const leader = await startTestServer({}, 'n1');
    root = await initAndUnseal(leader);
    nodes = [leader];
    for (const id of ['n2', 'n3']) {
      const node = await startTestServer({}, id);
      nodes.push(node);
      const joined = await call(node.url, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: leader.url } });
      expect(joined.status).toBe(200);
      const unsealed = await call(node.url, 'PUT', 'sys/unseal', { body: { key: (leader.key as Buffer).toString('base64') } });
      expect(unsealed.status).toBe(200);
    }
    const peers = await call(leader.url, 'GET', 'sys/storage/raft/configuration', { token: root });
    expect(peers.json.data.config.servers).toHaveLength(3);
  });
  afterAll(async () => {
    for (const n of nodes.reverse()) await n.stop();
  });

  it('serves a key it wrote from its cache, without reading storage', async () => {
    const leader = nodes[0] as TestServer;
    const written = await call(leader.url, 'POST', 'secret/data/cached', { token: root, body: { data: { v: 'one' } } });
    expect(written.status).toBe(200);
    const get = jest.spyOn(leader.server.cluster.storage, 'get');
    try {
      const read = await call(leader.url, 'GET', 'secret/data/cached', { token: root });
      expect(read.json.data.data).toEqual({ v: 'one' });
      expect(get.mock.calls.map(([key]) => key).filter((key) => key.startsWith('logical/'))).toEqual([]);
    } finally {
      get.mockRestore();
    }
  });

  it('reads back at once a write a standby forwarded (forgetting another writer\'s changes is tested in core)', async () => {
    const [leader, standby] = nodes as [TestServer, TestServer];
    await call(leader.url, 'GET', 'secret/data/cached', { token: root }); // cached on the leader
    const written = await call(standby.url, 'POST', 'secret/data/cached', { token: root, body: { data: { v: 'two' } } });
    expect(written.status).toBe(200);
    expect((await call(leader.url, 'GET', 'secret/data/cached', { token: root })).json.data.data).toEqual({ v: 'two' });
  });
});
