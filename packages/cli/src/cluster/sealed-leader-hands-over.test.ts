import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';

/**
 * A sealed leader serves nobody: when an operator seals the active node of a 3-node cluster,
 * the lead moves to an unsealed voter, which becomes active and serves the data; the sealed node
 * unsealed again is a standby.
 */

jest.setTimeout(120_000);

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await launchTestCluster('sealed-leader', { nodes: 3, basePort: 25600 });
});

afterAll(async () => {
  await cluster?.destroy();
});

it('hands the lead to an unsealed voter when the active node is sealed', async () => {
  const c = cluster.cluster;
  const root = c.rootToken;
  const active = await c.waitActive(60_000);
  expect((await api(active.apiAddr, 'POST', 'sys/mounts/kv', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  expect((await api(active.apiAddr, 'POST', 'kv/data/before', { token: root, body: { data: { v: 1 } } })).status).toBe(200);

  expect((await api(active.apiAddr, 'POST', 'sys/seal', { token: root })).status).toBe(204);
  const next = await until('another node to become active', 60_000, async () => {
    for (const n of c.nodes) {
      if (n === active) continue;
      const health = await api(n.apiAddr, 'GET', 'sys/health').catch(() => null);
      if (health?.status === 200) return n;
    }
    return undefined;
  }, 200);
  const read = await api(next.apiAddr, 'GET', 'kv/data/before', { token: root });
  expect(read.status).toBe(200);
  expect(read.json.data.data).toEqual({ v: 1 });

  for (const key of c.keys) await api(active.apiAddr, 'POST', 'sys/unseal', { body: { key } });
  await until('the unsealed node to be a standby', 30_000, async () => {
    const health = await api(active.apiAddr, 'GET', 'sys/health');
    return health.status === 429 ? true : undefined;
  }, 200);
});
