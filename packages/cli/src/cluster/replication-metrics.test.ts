import { parseExposition, valueOf, type Sample } from '../../../api/src/metrics/test-support/exposition';
import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';
import { followAndServe, replicationStatus } from './test-support/performance-support';

/**
 * The replication families of `sys/metrics` between real server processes: a performance
 * primary shows its last WAL and, per secondary (by its id), the WAL that secondary reported and
 * how far behind it is; the secondary shows the primary's WAL it applied and its Merkle syncs.
 */

jest.setTimeout(300_000);

let primary: TestCluster;
let secondary: TestCluster;

beforeAll(async () => {
  primary = await launchTestCluster('metrics-primary', { nodes: 1, basePort: 26200 });
  secondary = await launchTestCluster('metrics-secondary', { nodes: 1, basePort: 26220 });
});

afterAll(async () => {
  await primary?.destroy();
  await secondary?.destroy();
});

async function scrape(addr: string, token: string): Promise<Sample[]> {
  const r = await api(addr, 'GET', 'sys/metrics?format=prometheus', { token });
  if (r.status !== 200) throw new Error(`sys/metrics answered ${r.status}: ${r.text}`);
  return parseExposition(r.text).samples;
}

it('shows the primary\'s WAL, each secondary\'s progress and lag, and the secondary\'s applied WAL', async () => {
  const p = primary.cluster.nodes[0]!;
  const s = secondary.cluster.nodes[0]!;
  const root = primary.cluster.rootToken;
  expect((await api(p.apiAddr, 'POST', 'sys/mounts/secret', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  expect((await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/enable', { token: root, body: {} })).status).toBe(200);
  const token = (await api(p.apiAddr, 'POST', 'sys/replication/performance/primary/secondary-token', { token: root, body: { id: 'metrics-perf' } })).json.wrap_info.token;
  const enabled = await api(s.apiAddr, 'POST', 'sys/replication/performance/secondary/enable', { token: secondary.cluster.rootToken, body: { token } });
  if (enabled.status !== 200) throw new Error(`enable answered ${enabled.status}: ${enabled.text}`);
  const sRoot = await followAndServe(s.apiAddr, primary.cluster.keys);
  for (let i = 0; i < 5; i++) expect((await api(p.apiAddr, 'POST', `secret/data/m${i}`, { token: root, body: { data: { v: i } } })).status).toBe(200);

  // Caught up as the primary's status and its metrics both see it (the secondary's heartbeats report its WAL).
  const { lastWal, samples } = await until('the primary to see the secondary caught up', 120_000, async () => {
    const st = await replicationStatus(p.apiAddr, 'performance');
    const seen = await scrape(p.apiAddr, root);
    const reported = valueOf(seen, 'strongroom_replication_secondary_last_remote_wal', { kind: 'performance', secondary_id: 'metrics-perf' });
    return reported !== undefined && reported === st.last_wal && reported === valueOf(seen, 'vault_replication_wal_last_performance_wal')
      ? { lastWal: st.last_wal as number, samples: seen } : undefined;
  }, 250);
  expect(lastWal).toBeGreaterThan(0);
  expect(valueOf(samples, 'vault_replication_wal_last_wal')).toBe(lastWal);
  expect(valueOf(samples, 'vault_replication_wal_last_dr_wal')).toBe(0);
  expect(valueOf(samples, 'strongroom_replication_secondary_lag_seconds', { kind: 'performance', secondary_id: 'metrics-perf' })).toBe(0);
  expect(valueOf(samples, 'strongroom_replication_wal_window_entries')).toBeGreaterThan(0);
  expect(valueOf(samples, 'strongroom_replication_wal_window_bytes')).toBeGreaterThan(0);

  const onSecondary = await until('the secondary to have applied the primary\'s last WAL', 60_000, async () => {
    const seen = await scrape(s.apiAddr, sRoot);
    return valueOf(seen, 'vault_replication_fsm_last_remote_wal') === lastWal ? seen : undefined;
  }, 250);
  const sStatus = await replicationStatus(s.apiAddr, 'performance');
  expect(valueOf(onSecondary, 'strongroom_replication_merkle_sync_runs', { kind: 'performance' })).toBe(sStatus.merkle_sync_count);
  expect(valueOf(onSecondary, 'vault_replication_wal_last_wal')).toBe(0);
  expect(valueOf(onSecondary, 'vault_core_unsealed')).toBe(1);

  // A secondary that stops answering falls behind the next write, and its lag grows from then.
  process.kill(s.process!.pid!, 'SIGSTOP');
  try {
    expect((await api(p.apiAddr, 'POST', 'secret/data/while-stopped', { token: root, body: { data: { v: 1 } } })).status).toBe(200);
    await until('the stopped secondary\'s lag to show', 60_000, async () => {
      const seen = await scrape(p.apiAddr, root);
      return (valueOf(seen, 'strongroom_replication_secondary_lag_seconds', { kind: 'performance', secondary_id: 'metrics-perf' }) ?? 0) > 0 ? true : undefined;
    }, 250);
  } finally {
    process.kill(s.process!.pid!, 'SIGCONT');
  }
});
