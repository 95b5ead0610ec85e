import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { api, launchTestCluster, type TestCluster } from '../cluster/test-support/cluster-fixture';
import { inSync } from '../cluster/test-support/dr-support';
import { RemoteLinkProxies } from '../cluster/test-support/remote-link-proxies';
import type { NodeHandle } from '../cluster-launcher';
import { killStatePids, runScript } from './test-support/scripts';

/**
 * An unplanned drill that loses writes on purpose: the link from the DR secondary to the
 * primary's cluster port is cut while the load runs, so what the primary acknowledges after the
 * cut never reaches the secondary before every primary node is SIGKILLed. The drill counts those
 * as lost, no more and no fewer than the promoted cluster lacks, and finishes the failover. The
 * failback then starts from an old primary whose data differed from the new one's (the lost
 * writes), which its Merkle sync put right.
 */

jest.setTimeout(300_000);

const BIN = resolve(__dirname, '../../../../scripts/dr-drill');
const SERVER = resolve(__dirname, '../../bin/strongroom.js');
const TICK_MS = 50;

let links: RemoteLinkProxies;
let primary: TestCluster;
let dr: TestCluster;
let topo: string;

beforeAll(async () => {
  // The primary's cluster port is reached through the proxy: it is the address the secondary token names.
  links = await RemoteLinkProxies.start(['127.0.0.1:26631']);
  primary = await launchTestCluster('drill-lost-primary', { nodes: 1, basePort: 26630, tickMs: TICK_MS, clusterAddrOf: () => `https://${links.addresses[0] as string}` });
  dr = await launchTestCluster('drill-lost-dr', { nodes: 1, basePort: 26650, tickMs: TICK_MS });
  const root = primary.cluster.rootToken;
  const p = primary.cluster.nodes[0]!.apiAddr;
  const d = dr.cluster.nodes[0]!.apiAddr;
  expect((await api(p, 'POST', 'sys/replication/dr/primary/enable', { token: root, body: {} })).status).toBe(200);
  const issued = await api(p, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'dr' } });
  const enabled = await api(d, 'POST', 'sys/replication/dr/secondary/enable', { token: dr.cluster.rootToken, body: { token: issued.json.wrap_info.token } });
  if (enabled.status !== 200) throw new Error(`secondary/enable answered ${enabled.status}: ${enabled.text}`);
  await inSync(async () => p, async () => d, 'the DR secondary to catch up');

  const nodeState = (name: string, n: NodeHandle) => ({
    name, api_addr: n.apiAddr, pid: n.process?.pid ?? 0, dir: n.dir,
    start: { argv: [process.execPath, SERVER, 'server', '--config', join(n.dir, 'server.hcl')], env: { STRONGROOM_RAFT_TICK_MS: String(TICK_MS) }, cwd: n.dir, log: join(n.dir, 'server.log') },
  });
  topo = join(primary.dir, 'topology');
  mkdirSync(join(topo, 'operator'), { recursive: true });
  writeFileSync(join(topo, 'topology-state.json'), JSON.stringify({
    clusters: { primary: { nodes: [nodeState('primary-1', primary.cluster.nodes[0]!)] }, dr: { nodes: [nodeState('dr-1', dr.cluster.nodes[0]!)] } },
  }));
  writeFileSync(join(topo, 'operator', 'credentials.json'), JSON.stringify({ primary: { unseal_keys_b64: primary.cluster.keys, root_token: root } }), { mode: 0o600 });
});

afterAll(async () => {
  if (topo) killStatePids(topo);
  await primary?.destroy();
  await dr?.destroy();
  links?.kill();
});

it('counts the acknowledged writes the secondary never got as lost, finishes the failover, and fails back', async () => {
  let cutDone: Promise<void> | null = null;
  let healDone: Promise<void> | null = null;
  const run = await runScript(BIN, ['--dir', topo, '--unplanned', '--failback', '--json', '--load-seconds', '5', '--concurrency', '2'], {
    timeoutMs: 240_000,
    onStderr: (err) => {
      // Early in the load the secondary loses its link (the seconds left of the load leave room for a
      // slow machine); once the primary is dead, it is back.
      if (!cutDone && err.includes('[unplanned] canary load ...')) cutDone = new Promise((r) => setTimeout(r, 700)).then(() => links.cut(0, 'refuse'));
      if (!healDone && err.includes('[unplanned] failure: SIGKILL every primary node: ok')) healDone = links.heal(0);
    },
  });
  await cutDone;
  await healDone;
  if (run.code !== 0) throw new Error(`exit ${run.code}:\n${run.out}\n--- stderr ---\n${run.err}`);
  const r = JSON.parse(run.out);
  expect(r).toMatchObject({ ok: true, mode: 'unplanned', old_primary: { came_back_as: 'primary', now: 'DR secondary of dr' } });
  expect(r.rpo_writes_lost).toBeGreaterThan(0);
  expect(r.rpo_writes_lost).toBeLessThanOrEqual(r.canaries_acknowledged_before_failure);
  expect(r.rpo_writes_lost + r.canaries_verified).toBe(r.canaries_acknowledged);
  expect(r.missing_seqs).toHaveLength(Math.min(r.rpo_writes_lost, 20));
  expect([...r.missing_seqs].sort((a: number, b: number) => a - b)).toEqual(r.missing_seqs);
  // The writes acknowledged in the seconds after the cut are lost: the promoted cluster stops short of the last.
  expect(r.last_seq_on_promoted).toBeLessThan(r.last_acknowledged_seq);
  expect(r.rto_seconds).toBeGreaterThan(0);
  expect(r.failback).toMatchObject({ ok: true, mode: 'planned', from: 'dr', to: 'primary', rpo_writes_lost: 0 });
  // Back on the original primary, the data is the one the DR cluster served: a write lost in the
  // failover is gone there too, the last kept one is there.
  const p = primary.cluster.nodes[0]!.apiAddr;
  const token = primary.cluster.rootToken;
  expect((await api(p, 'GET', `drill/data/canary-${r.missing_seqs[0]}`, { token })).status).toBe(404);
  expect((await api(p, 'GET', `drill/data/canary-${r.last_seq_on_promoted}`, { token })).json.data.data.seq).toBe(r.last_seq_on_promoted);
});
