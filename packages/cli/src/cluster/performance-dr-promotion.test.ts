import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';
import { inSync, operationToken } from './test-support/dr-support';
import { followAndServe, replicationStatus } from './test-support/performance-support';

/**
 * A performance primary with a DR secondary and a performance secondary, as real server
 * processes. After a failover the promoted DR secondary is the performance primary of the same
 * set, the demoted one is none (a DR secondary acts in no performance role), and the performance
 * secondary follows the new one with update-primary and a token issued there; then the same
 * back (failback), the set going back with the DR role.
 */

jest.setTimeout(300_000);

let primary: TestCluster;
let dr: TestCluster;
let perf: TestCluster;

beforeAll(async () => {
  primary = await launchTestCluster('perfdr-primary', { nodes: 1, basePort: 26030 });
  dr = await launchTestCluster('perfdr-dr', { nodes: 1, basePort: 26040 });
  perf = await launchTestCluster('perfdr-perf', { nodes: 1, basePort: 26050 });
});

afterAll(async () => {
  await primary?.destroy();
  await dr?.destroy();
  await perf?.destroy();
});

it('promotes a DR secondary of a performance primary into that performance set', async () => {
  const p = primary.cluster.nodes[0]!;
  const d = dr.cluster.nodes[0]!;
  const s = perf.cluster.nodes[0]!;
  const root = primary.cluster.rootToken;
  expect((await api(p.apiAddr, 'POST', 'sys/mounts/secret', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  expect((await api(p.apiAddr, 'POST', 'secret/data/before', { token: root, body: { data: { v: 1 } } })).status).toBe(200);
  expect((await api(p.apiAddr, 'POST', 'sys/replication/dr/primary/enable', { token: root, body: {} })).status).toBe(200);
  expect((await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/enable', { token: root, body: {} })).status).toBe(200);
  const drToken = (await api(p.apiAddr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'dr1' } })).json.wrap_info.token;
  const perfToken = (await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/secondary-token', { token: root, body: { id: 'perf1' } })).json.wrap_info.token;
  expect((await api(d.apiAddr, 'POST', 'sys/replication/dr/secondary/enable', { token: dr.cluster.rootToken, body: { token: drToken } })).status).toBe(200);
  expect((await api(s.apiAddr, 'POST', 'sys/replication/performance/secondary/enable', { token: perf.cluster.rootToken, body: { token: perfToken } })).status).toBe(200);
  const sRoot = await followAndServe(s.apiAddr, primary.cluster.keys);
  const set = await replicationStatus(p.apiAddr, 'performance');
  await inSync(async () => p.apiAddr, async () => d.apiAddr, 'the DR secondary to hold the primary\'s data');

  // Planned failover of the DR pair. The demoted cluster, a DR secondary, is no performance primary any more.
  const demoted = await api(p.apiAddr, 'POST', 'sys/replication/dr/primary/demote', { token: root, body: {} });
  if (demoted.status !== 200) throw new Error(`demote answered ${demoted.status}: ${demoted.text}`);
  expect(demoted.json.warnings.join(' ')).toMatch(/performance primary role stopped/);
  expect(await replicationStatus(p.apiAddr, 'performance')).toEqual({ mode: 'disabled' });
  await until('the performance secondary\'s stream from the demoted cluster to end', 60_000, async () => {
    const st = await replicationStatus(s.apiAddr, 'performance').catch(() => null);
    return st && st.state !== 'stream-wals' ? true : undefined;
  }, 250);
  const opToken = await operationToken(d.apiAddr, primary.cluster.keys);
  const promoted = await api(d.apiAddr, 'POST', 'sys/replication/dr/secondary/promote', { body: { dr_operation_token: opToken } });
  if (promoted.status !== 200) throw new Error(`promote answered ${promoted.status}: ${promoted.text}`);
  expect(promoted.json.warnings.join(' ')).toMatch(/performance primary/);
  await until('the promoted cluster to serve', 60_000, async () => ((await api(d.apiAddr, 'GET', 'sys/health')).status === 200 ? true : undefined), 250);

  // It is the performance primary of the same set.
  const taken = await replicationStatus(d.apiAddr, 'performance');
  expect(taken).toMatchObject({ mode: 'primary', cluster_id: set.cluster_id, known_secondaries: ['perf1'] });

  // The performance secondary follows it with a token issued there.
  const again = await api(d.apiAddr, 'POST', 'sys/replication/performance/primary/secondary-token', { token: root, body: { id: 'perf1' } });
  if (again.status !== 200) throw new Error(`secondary-token answered ${again.status}: ${again.text}`);
  const updated = await api(s.apiAddr, 'POST', 'sys/replication/performance/secondary/update-primary', { token: sRoot, body: { token: again.json.wrap_info.token } });
  if (updated.status !== 200) throw new Error(`update-primary answered ${updated.status}: ${updated.text}`);
  await until('the performance secondary to stream from the promoted cluster', 120_000, async () => {
    const st = await replicationStatus(s.apiAddr, 'performance').catch(() => null);
    return st?.state === 'stream-wals' && st.primary_cluster_addr === `127.0.0.1:${d.clusterPort}` ? true : undefined;
  }, 250);
  expect((await api(d.apiAddr, 'POST', 'secret/data/after', { token: root, body: { data: { v: 2 } } })).status).toBe(200);
  await until('a write on the promoted cluster to reach the performance secondary', 60_000, async () => {
    const r = await api(s.apiAddr, 'GET', 'secret/data/after', { token: sRoot });
    return r.status === 200 ? r.json.data.data : undefined;
  }, 250).then((value) => expect(value).toEqual({ v: 2 }));
  const forwarded = await api(s.apiAddr, 'POST', 'secret/data/from-perf', { token: sRoot, body: { data: { v: 3 } } });
  if (forwarded.status !== 200) throw new Error(`forwarded write answered ${forwarded.status}: ${forwarded.text}`);
  expect((await api(d.apiAddr, 'GET', 'secret/data/from-perf', { token: root })).json.data.data).toEqual({ v: 3 });
  // One primary in the set.
  expect(await replicationStatus(p.apiAddr, 'performance')).toEqual({ mode: 'disabled' });
  expect(await replicationStatus(d.apiAddr, 'performance')).toMatchObject({ mode: 'primary', cluster_id: set.cluster_id });

  // Failback: the old primary follows the promoted cluster as its DR secondary, then takes over
  // again, the performance set with it, from the copy the DR stream gave it.
  const back = await api(d.apiAddr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'dr-back' } });
  if (back.status !== 200) throw new Error(`DR secondary-token answered ${back.status}: ${back.text}`);
  const oldOpToken = await operationToken(p.apiAddr, primary.cluster.keys);
  const followed = await api(p.apiAddr, 'POST', 'sys/replication/dr/secondary/update-primary', { body: { dr_operation_token: oldOpToken, token: back.json.wrap_info.token } });
  if (followed.status !== 200) throw new Error(`DR update-primary answered ${followed.status}: ${followed.text}`);
  await inSync(async () => d.apiAddr, async () => p.apiAddr, 'the old primary to hold the promoted cluster\'s data');
  const handedBack = await api(d.apiAddr, 'POST', 'sys/replication/dr/primary/demote', { token: root, body: {} });
  if (handedBack.status !== 200) throw new Error(`demote answered ${handedBack.status}: ${handedBack.text}`);
  expect(await replicationStatus(d.apiAddr, 'performance')).toEqual({ mode: 'disabled' });
  const failback = await api(p.apiAddr, 'POST', 'sys/replication/dr/secondary/promote', { body: { dr_operation_token: oldOpToken } });
  if (failback.status !== 200) throw new Error(`promote answered ${failback.status}: ${failback.text}`);
  expect(await replicationStatus(p.apiAddr, 'performance')).toMatchObject({ mode: 'primary', cluster_id: set.cluster_id, known_secondaries: ['perf1'] });
  await until('the old primary to serve again', 60_000, async () => ((await api(p.apiAddr, 'GET', 'sys/health')).status === 200 ? true : undefined), 250);
  const home = await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/secondary-token', { token: root, body: { id: 'perf1' } });
  if (home.status !== 200) throw new Error(`secondary-token answered ${home.status}: ${home.text}`);
  const rejoined = await api(s.apiAddr, 'POST', 'sys/replication/performance/secondary/update-primary', { token: sRoot, body: { token: home.json.wrap_info.token } });
  if (rejoined.status !== 200) throw new Error(`update-primary answered ${rejoined.status}: ${rejoined.text}`);
  expect((await api(p.apiAddr, 'POST', 'secret/data/home', { token: root, body: { data: { v: 4 } } })).status).toBe(200);
  await until('a write on the old primary, again the set\'s, to reach the performance secondary', 120_000, async () => {
    const r = await api(s.apiAddr, 'GET', 'secret/data/home', { token: sRoot });
    return r.status === 200 ? r.json.data.data : undefined;
  }, 250).then((value) => expect(value).toEqual({ v: 4 }));
  expect((await api(s.apiAddr, 'GET', 'secret/data/from-perf', { token: sRoot })).json.data.data).toEqual({ v: 3 });
});
