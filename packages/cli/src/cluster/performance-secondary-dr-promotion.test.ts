import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';
import { inSync, operationToken } from './test-support/dr-support';
import { followAndServe, replicationStatus } from './test-support/performance-support';

/**
 * A performance primary, its performance secondary, and that secondary's DR secondary, as real
 * server processes. After a DR failover of the secondary, the promoted cluster follows the
 * performance primary as the same secondary (the same token, from where the old one stopped),
 * and the demoted one no longer does.
 */

jest.setTimeout(300_000);

let primary: TestCluster;
let secondary: TestCluster;
let standby: TestCluster;

beforeAll(async () => {
  primary = await launchTestCluster('perfdrs-primary', { nodes: 1, basePort: 26100 });
  secondary = await launchTestCluster('perfdrs-secondary', { nodes: 1, basePort: 26110 });
  standby = await launchTestCluster('perfdrs-standby', { nodes: 1, basePort: 26120 });
});

afterAll(async () => {
  await primary?.destroy();
  await secondary?.destroy();
  await standby?.destroy();
});

it('promotes a DR secondary of a performance secondary into the set as that same secondary', async () => {
  const p = primary.cluster.nodes[0]!;
  const s = secondary.cluster.nodes[0]!;
  const d = standby.cluster.nodes[0]!;
  const root = primary.cluster.rootToken;
  expect((await api(p.apiAddr, 'POST', 'sys/mounts/secret', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  expect((await api(p.apiAddr, 'POST', 'secret/data/before', { token: root, body: { data: { v: 1 } } })).status).toBe(200);
  expect((await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/enable', { token: root, body: {} })).status).toBe(200);
  const perfToken = (await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/secondary-token', { token: root, body: { id: 'perf1' } })).json.wrap_info.token;
  expect((await api(s.apiAddr, 'POST', 'sys/replication/performance/secondary/enable', { token: secondary.cluster.rootToken, body: { token: perfToken } })).status).toBe(200);
  const sRoot = await followAndServe(s.apiAddr, primary.cluster.keys);
  const joined = await replicationStatus(s.apiAddr, 'performance');

  // The performance secondary is itself a DR primary.
  expect((await api(s.apiAddr, 'POST', 'sys/replication/dr/primary/enable', { token: sRoot, body: {} })).status).toBe(200);
  const drToken = (await api(s.apiAddr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: sRoot, body: { id: 'dr1' } })).json.wrap_info.token;
  expect((await api(d.apiAddr, 'POST', 'sys/replication/dr/secondary/enable', { token: standby.cluster.rootToken, body: { token: drToken } })).status).toBe(200);
  expect((await api(p.apiAddr, 'POST', 'secret/data/streamed', { token: root, body: { data: { v: 2 } } })).status).toBe(200);
  await until('a write on the performance primary to reach its secondary', 60_000, async () => {
    const r = await api(s.apiAddr, 'GET', 'secret/data/streamed', { token: sRoot });
    return r.status === 200 ? true : undefined;
  }, 250);
  await inSync(async () => s.apiAddr, async () => d.apiAddr, 'the DR secondary to hold the performance secondary\'s data');

  // Planned failover of the DR pair: the demoted cluster, a DR secondary, is no performance secondary any more.
  const demoted = await api(s.apiAddr, 'POST', 'sys/replication/dr/primary/demote', { token: sRoot, body: {} });
  if (demoted.status !== 200) throw new Error(`demote answered ${demoted.status}: ${demoted.text}`);
  expect(demoted.json.warnings.join(' ')).toMatch(/performance secondary role stopped/);
  expect(await replicationStatus(s.apiAddr, 'performance')).toEqual({ mode: 'disabled' });
  const opToken = await operationToken(d.apiAddr, primary.cluster.keys);
  const promoted = await api(d.apiAddr, 'POST', 'sys/replication/dr/secondary/promote', { body: { dr_operation_token: opToken } });
  if (promoted.status !== 200) throw new Error(`promote answered ${promoted.status}: ${promoted.text}`);
  expect(promoted.json.warnings.join(' ')).toMatch(/performance secondary "perf1"/);
  await until('the promoted cluster to serve', 60_000, async () => ((await api(d.apiAddr, 'GET', 'sys/health')).status === 200 ? true : undefined), 250);

  // The same secondary of the same set, streaming from the performance primary.
  await until('the promoted cluster to stream from the performance primary', 120_000, async () => {
    const st = await replicationStatus(d.apiAddr, 'performance').catch(() => null);
    return st?.state === 'stream-wals' ? true : undefined;
  }, 250);
  expect(await replicationStatus(d.apiAddr, 'performance')).toMatchObject({
    mode: 'secondary', cluster_id: joined.cluster_id, secondary_id: 'perf1', primary_cluster_addr: `127.0.0.1:${p.clusterPort}`,
  });
  await until('the performance primary to see its secondary at the promoted cluster', 60_000, async () => {
    const st = await replicationStatus(p.apiAddr, 'performance');
    const seen = st.secondaries as Array<{ node_id: string; cluster_address: string; connection_status: string }>;
    return seen.length === 1 && seen[0]!.cluster_address === `127.0.0.1:${d.clusterPort}` && seen[0]!.connection_status === 'connected' ? true : undefined;
  }, 250);

  // Writes on the primary arrive; a write sent to the promoted cluster is forwarded to the primary.
  // The secondary's own root token came with the DR stream.
  expect((await api(p.apiAddr, 'POST', 'secret/data/after', { token: root, body: { data: { v: 3 } } })).status).toBe(200);
  await until('a write on the performance primary to reach the promoted cluster', 60_000, async () => {
    const r = await api(d.apiAddr, 'GET', 'secret/data/after', { token: sRoot });
    return r.status === 200 ? r.json.data.data : undefined;
  }, 250).then((value) => expect(value).toEqual({ v: 3 }));
  expect((await api(d.apiAddr, 'GET', 'secret/data/before', { token: sRoot })).json.data.data).toEqual({ v: 1 });
  const forwarded = await api(d.apiAddr, 'POST', 'secret/data/from-standby', { token: sRoot, body: { data: { v: 4 } } });
  if (forwarded.status !== 200) throw new Error(`forwarded write answered ${forwarded.status}: ${forwarded.text}`);
  expect((await api(p.apiAddr, 'GET', 'secret/data/from-standby', { token: root })).json.data.data).toEqual({ v: 4 });
  expect((await api(d.apiAddr, 'GET', 'secret/data/from-standby', { token: sRoot })).json.data.data).toEqual({ v: 4 });
  expect(await replicationStatus(s.apiAddr, 'performance')).toEqual({ mode: 'disabled' });
});
