import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';
import { generateRoot } from './test-support/performance-support';

/**
 * Performance replication between real server processes: a primary with a performance
 * secondary and a DR secondary at once. Reads on the performance secondary are its own; a write
 * sent to it is forwarded to the primary and readable on both; tokens stay on the cluster that
 * made them; a deny paths filter removes a mount's data from the secondary until it is deleted.
 */

jest.setTimeout(300_000);

let primary: TestCluster;
let perf: TestCluster;
let dr: TestCluster;

beforeAll(async () => {
  primary = await launchTestCluster('perf-primary', { nodes: 1, basePort: 25900 });
  perf = await launchTestCluster('perf-secondary', { nodes: 1, basePort: 25920 });
  dr = await launchTestCluster('perf-dr', { nodes: 1, basePort: 25940 });
});

afterAll(async () => {
  await primary?.destroy();
  await perf?.destroy();
  await dr?.destroy();
});

async function status(addr: string, kind: 'dr' | 'performance'): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const r = await api(addr, 'GET', `sys/replication/${kind}/status`);
  if (r.status !== 200) throw new Error(`${kind} status answered ${r.status}: ${r.text}`);
  return r.json.data;
}

it('serves reads locally, forwards writes, keeps tokens apart and follows a paths filter', async () => {
  const p = primary.cluster.nodes[0]!;
  const s = perf.cluster.nodes[0]!;
  const d = dr.cluster.nodes[0]!;
  const root = primary.cluster.rootToken;
  for (const mount of ['shared', 'private']) {
    expect((await api(p.apiAddr, 'POST', `sys/mounts/${mount}`, { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
    expect((await api(p.apiAddr, 'POST', `${mount}/data/one`, { token: root, body: { data: { v: mount } } })).status).toBe(200);
  }

  // Both kinds at once.
  expect((await api(p.apiAddr, 'POST', 'sys/replication/dr/primary/enable', { token: root, body: {} })).status).toBe(200);
  expect((await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/enable', { token: root, body: {} })).status).toBe(200);
  const drToken = (await api(p.apiAddr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'dr1' } })).json.wrap_info.token;
  const perfToken = (await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/secondary-token', { token: root, body: { id: 'perf1' } })).json.wrap_info.token;
  // A token of one kind does not enable the other.
  const crossed = await api(s.apiAddr, 'POST', 'sys/replication/performance/secondary/enable', { token: perf.cluster.rootToken, body: { token: drToken } });
  expect(crossed.status).toBe(400);
  const enabledDr = await api(d.apiAddr, 'POST', 'sys/replication/dr/secondary/enable', { token: dr.cluster.rootToken, body: { token: drToken } });
  if (enabledDr.status !== 200) throw new Error(`dr enable answered ${enabledDr.status}: ${enabledDr.text}`);
  const enabled = await api(s.apiAddr, 'POST', 'sys/replication/performance/secondary/enable', { token: perf.cluster.rootToken, body: { token: perfToken } });
  if (enabled.status !== 200) throw new Error(`performance enable answered ${enabled.status}: ${enabled.text}`);

  await until('the performance secondary to stream', 120_000, async () => {
    const st = await status(s.apiAddr, 'performance').catch(() => null);
    return st?.state === 'stream-wals' ? true : undefined;
  }, 250);
  await until('the DR secondary to stream', 120_000, async () => {
    const st = await status(d.apiAddr, 'dr').catch(() => null);
    return st?.state === 'stream-wals' ? true : undefined;
  }, 250);
  const pStatus = await api(p.apiAddr, 'GET', 'sys/replication/status');
  expect(pStatus.json.data.dr.mode).toBe('primary');
  expect(pStatus.json.data.performance.mode).toBe('primary');

  // The secondary now holds the primary's keyring: it unseals with the primary's keys, and its
  // operator makes a root token there from them.
  await until('the performance secondary to ask for the primary\'s keys or serve', 60_000, async () => {
    const seal = await api(s.apiAddr, 'GET', 'sys/seal-status');
    if (seal.json.sealed) {
      for (const key of primary.cluster.keys) await api(s.apiAddr, 'POST', 'sys/unseal', { body: { key } });
    }
    const health = await api(s.apiAddr, 'GET', 'sys/health');
    return health.status === 200 ? health.json : undefined;
  }, 500).then((health) => expect(health.replication_performance_mode).toBe('secondary'));
  const sRoot = await generateRoot(s.apiAddr, primary.cluster.keys);

  // Reads are the secondary's own.
  let lastRead = '';
  const read = await until('the shared secret on the secondary', 60_000, async () => {
    const r = await api(s.apiAddr, 'GET', 'shared/data/one', { token: sRoot });
    lastRead = `${r.status} ${r.text}`;
    return r.status === 200 ? r : undefined;
  }, 250).catch((err: Error) => {
    throw new Error(`${err.message}; last answer: ${lastRead}`);
  });
  expect(read.json.data.data).toEqual({ v: 'shared' });

  // A write sent to the secondary is forwarded, readable there at once and on the primary.
  const forwarded = await api(s.apiAddr, 'POST', 'shared/data/from-secondary', { token: sRoot, body: { data: { v: 'fwd' } } });
  if (forwarded.status !== 200) throw new Error(`forwarded write answered ${forwarded.status}: ${forwarded.text}`);
  expect((await api(s.apiAddr, 'GET', 'shared/data/from-secondary', { token: sRoot })).json.data.data).toEqual({ v: 'fwd' });
  expect((await api(p.apiAddr, 'GET', 'shared/data/from-secondary', { token: root })).json.data.data).toEqual({ v: 'fwd' });

  // Tokens stay where they were made.
  const local = (await api(s.apiAddr, 'POST', 'auth/token/create', { token: sRoot, body: { policies: ['default'] } })).json.auth.client_token;
  expect((await api(s.apiAddr, 'GET', 'auth/token/lookup-self', { token: local })).status).toBe(200);
  expect((await api(p.apiAddr, 'GET', 'auth/token/lookup-self', { token: local })).status).toBe(403);
  expect((await api(p.apiAddr, 'GET', 'auth/token/lookup-self', { token: sRoot })).status).toBe(403);

  // A deny filter removes the mount's data from the secondary; new writes to it do not arrive.
  const clusterId = (await status(s.apiAddr, 'performance')).cluster_id;
  expect(typeof clusterId).toBe('string');
  const filterPath = `sys/replication/performance/primary/paths-filter/${clusterId}`;
  const badMode = await api(p.apiAddr, 'POST', filterPath, { token: root, body: { mode: 'block', paths: ['private/'] } });
  expect(badMode.status).toBe(400);
  expect((await api(p.apiAddr, 'POST', filterPath, { token: root, body: { mode: 'deny', paths: ['private/'] } })).status).toBeLessThan(300);
  expect((await api(p.apiAddr, 'GET', filterPath, { token: root })).json.data).toEqual({ mode: 'deny', paths: ['private/'] });
  await until('the denied mount\'s data to leave the secondary', 60_000, async () => {
    const r = await api(s.apiAddr, 'GET', 'private/data/one', { token: sRoot });
    return r.status === 404 ? true : undefined;
  }, 250);
  expect((await api(p.apiAddr, 'POST', 'private/data/two', { token: root, body: { data: { v: 2 } } })).status).toBe(200);
  expect((await api(p.apiAddr, 'POST', 'shared/data/marker', { token: root, body: { data: { v: 'm' } } })).status).toBe(200);
  await until('a later shared write to arrive', 60_000, async () => {
    const r = await api(s.apiAddr, 'GET', 'shared/data/marker', { token: sRoot });
    return r.status === 200 ? true : undefined;
  }, 250);
  expect((await api(s.apiAddr, 'GET', 'private/data/two', { token: sRoot })).status).toBe(404);

  // Deleting the filter brings the mount's data back.
  expect((await api(p.apiAddr, 'DELETE', filterPath, { token: root })).status).toBeLessThan(300);
  expect((await api(p.apiAddr, 'GET', filterPath, { token: root })).status).toBe(404);
  await until('the mount\'s data to come back', 60_000, async () => {
    const r = await api(s.apiAddr, 'GET', 'private/data/two', { token: sRoot });
    return r.status === 200 ? true : undefined;
  }, 250);

  // The DR secondary holds everything, tokens included.
  await until('the DR secondary to match the primary', 60_000, async () => {
    const [ps, ds] = await Promise.all([status(p.apiAddr, 'dr'), status(d.apiAddr, 'dr')]);
    return ds.last_remote_wal === ps.last_wal && ds.merkle_root === ps.merkle_root ? true : undefined;
  }, 250);
});
