import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';
import { followAndServe, replicationStatus } from './test-support/performance-support';
import { RemoteLinkProxies } from './test-support/remote-link-proxies';

/**
 * A performance secondary far from its primary: every byte between them crosses a proxy that
 * adds 80 ms each way. The stream keeps up, reads are answered from the secondary's own storage
 * without waiting on the link, and a forwarded write is readable there as soon as it is answered.
 * Only ordering facts and lower bounds are asserted: a busy machine only makes things slower.
 */

jest.setTimeout(300_000);

const DELAY_MS = 80;
const PRIMARY_PORT = 26000;

let primary: TestCluster;
let perf: TestCluster;
let link: RemoteLinkProxies;

beforeAll(async () => {
  link = await RemoteLinkProxies.start([`127.0.0.1:${PRIMARY_PORT + 1}`], { delayMs: DELAY_MS });
  primary = await launchTestCluster('perf-far-primary', { nodes: 1, basePort: PRIMARY_PORT });
  perf = await launchTestCluster('perf-far-secondary', { nodes: 1, basePort: 26020 });
});

afterAll(async () => {
  await primary?.destroy();
  await perf?.destroy();
  const closed = await link?.close();
  if (closed && !closed.exitedByItself) link.kill();
});

it('streams over a slow link, reads without waiting on it, and reads a forwarded write when it is answered', async () => {
  const p = primary.cluster.nodes[0]!;
  const s = perf.cluster.nodes[0]!;
  const root = primary.cluster.rootToken;
  expect((await api(p.apiAddr, 'POST', 'sys/mounts/kv', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  expect((await api(p.apiAddr, 'POST', 'kv/data/first', { token: root, body: { data: { v: 0 } } })).status).toBe(200);

  // The secondary learns the primary's cluster address from its token: the proxy's.
  const enablePrimary = await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/enable', {
    token: root, body: { primary_cluster_addr: `https://${link.addresses[0]}` },
  });
  expect(enablePrimary.status).toBe(200);
  const token = (await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/secondary-token', { token: root, body: { id: 'far' } })).json.wrap_info.token;
  const enabled = await api(s.apiAddr, 'POST', 'sys/replication/performance/secondary/enable', { token: perf.cluster.rootToken, body: { token } });
  if (enabled.status !== 200) throw new Error(`performance enable answered ${enabled.status}: ${enabled.text}`);
  const sRoot = await followAndServe(s.apiAddr, primary.cluster.keys);

  // The link does go through the proxy: a heartbeat takes at least one round trip of it.
  const st = await replicationStatus(s.apiAddr, 'performance');
  expect(st.primary_cluster_addr).toBe(link.addresses[0]);
  expect(st.primaries.length).toBeGreaterThan(0);
  for (const primaryLink of st.primaries) expect(primaryLink.last_heartbeat_duration_ms).toBeGreaterThanOrEqual(2 * DELAY_MS);

  // It keeps streaming: a burst of writes on the primary all arrive, and the secondary catches up.
  for (let i = 0; i < 20; i++) {
    expect((await api(p.apiAddr, 'POST', `kv/data/burst-${i}`, { token: root, body: { data: { i } } })).status).toBe(200);
  }
  await until('the secondary to catch up with the burst', 60_000, async () => {
    const [ps, ss] = await Promise.all([replicationStatus(p.apiAddr, 'performance'), replicationStatus(s.apiAddr, 'performance')]);
    return ss.state === 'stream-wals' && ss.last_remote_wal === ps.last_wal ? true : undefined;
  }, 250);
  for (let i = 0; i < 20; i++) {
    expect((await api(s.apiAddr, 'GET', `kv/data/burst-${i}`, { token: sRoot })).json.data.data).toEqual({ i });
  }

  // Reads do not wait on the link: 20 of them complete while one forwarded write, which needs
  // at least one round trip of the link, is still in flight.
  const order: string[] = [];
  const write = api(s.apiAddr, 'POST', 'kv/data/forwarded', { token: sRoot, body: { data: { v: 'fwd' } } }).then((r) => {
    order.push('write');
    return r;
  });
  const reads = Array.from({ length: 20 }, (_, i) => api(s.apiAddr, 'GET', `kv/data/burst-${i}`, { token: sRoot }).then((r) => {
    order.push('read');
    return r;
  }));
  for (const r of await Promise.all(reads)) expect(r.status).toBe(200);
  const forwarded = await write;
  if (forwarded.status !== 200) throw new Error(`forwarded write answered ${forwarded.status}: ${forwarded.text}`);
  expect(order.indexOf('write')).toBe(20);

  // Read-your-writes: the write had streamed back before its answer, with no warning about it.
  expect(forwarded.json.warnings ?? null).toBeNull();
  expect((await api(s.apiAddr, 'GET', 'kv/data/forwarded', { token: sRoot })).json.data.data).toEqual({ v: 'fwd' });
  expect((await api(p.apiAddr, 'GET', 'kv/data/forwarded', { token: root })).json.data.data).toEqual({ v: 'fwd' });
});
