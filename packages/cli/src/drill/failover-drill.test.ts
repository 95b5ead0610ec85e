import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { api, launchTestCluster, type TestCluster } from '../cluster/test-support/cluster-fixture';
import { inSync } from '../cluster/test-support/dr-support';
import { followAndServe } from '../cluster/test-support/performance-support';
import type { LocalCluster, NodeHandle } from '../cluster-launcher';
import { killStatePids, runScript, statePids as pidsIn } from './test-support/scripts';

/**
 * The drill run as an operator runs it (the script, spawned, with --dir and --json) against real
 * server processes: a 3-node primary, a DR secondary and a performance secondary described by a
 * topology state file. A planned failover with failback loses nothing; an unplanned one (every
 * primary node SIGKILLed under the load) still reports every number and counts what it lost.
 */

jest.setTimeout(420_000);

const BIN = resolve(__dirname, '../../../../scripts/dr-drill');
const SERVER = resolve(__dirname, '../../bin/strongroom.js');
const TICK_MS = 50;

let primary: TestCluster;
let dr: TestCluster;
let perf: TestCluster;
let topo: string;

function nodeState(c: LocalCluster, name: string, n: NodeHandle) {
  return {
    name: `${name}-${n.index + 1}`, api_addr: n.apiAddr, cluster_addr: `https://127.0.0.1:${n.clusterPort}`, pid: n.process?.pid ?? 0, dir: n.dir,
    start: {
      argv: [process.execPath, SERVER, 'server', '--config', join(n.dir, 'server.hcl')],
      env: { STRONGROOM_RAFT_TICK_MS: String(TICK_MS) }, cwd: n.dir, log: join(n.dir, 'server.log'),
    },
  };
}

/** Every pid the state file names: the drill starts nodes again, and the test ends those too. */
const statePids = () => pidsIn(topo);

beforeAll(async () => {
  primary = await launchTestCluster('drill-primary', { nodes: 3, basePort: 26600, tickMs: TICK_MS });
  dr = await launchTestCluster('drill-dr', { nodes: 1, basePort: 26640, tickMs: TICK_MS });
  perf = await launchTestCluster('drill-perf', { nodes: 1, basePort: 26660, tickMs: TICK_MS });
  const root = primary.cluster.rootToken;
  const p = (await primary.cluster.waitActive()).apiAddr;
  const d = dr.cluster.nodes[0]!.apiAddr;
  const s = perf.cluster.nodes[0]!.apiAddr;
  const ok = async (what: string, r: Promise<{ status: number; text: string }>) => {
    const reply = await r;
    if (reply.status >= 300) throw new Error(`${what} answered ${reply.status}: ${reply.text}`);
    return reply as { status: number; text: string; json: any }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  await ok('DR primary enable', api(p, 'POST', 'sys/replication/dr/primary/enable', { token: root, body: {} }));
  await ok('performance primary enable', api(p, 'POST', 'sys/replication/performance/primary/enable', { token: root, body: {} }));
  const drToken = (await ok('DR secondary token', api(p, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'dr' } }))).json.wrap_info.token;
  const perfToken = (await ok('perf secondary token', api(p, 'POST', 'sys/replication/performance/primary/secondary-token', { token: root, body: { id: 'perf' } }))).json.wrap_info.token;
  await ok('DR secondary enable', api(d, 'POST', 'sys/replication/dr/secondary/enable', { token: dr.cluster.rootToken, body: { token: drToken } }));
  await ok('perf secondary enable', api(s, 'POST', 'sys/replication/performance/secondary/enable', { token: perf.cluster.rootToken, body: { token: perfToken } }));
  await followAndServe(s, primary.cluster.keys);
  await inSync(async () => p, async () => d, 'the DR secondary to catch up');

  topo = join(primary.dir, 'topology');
  mkdirSync(join(topo, 'operator'), { recursive: true });
  writeFileSync(join(topo, 'topology-state.json'), JSON.stringify({
    base_port: 26600,
    clusters: {
      primary: { nodes: primary.cluster.nodes.map((n) => nodeState(primary.cluster, 'primary', n)) },
      dr: { nodes: dr.cluster.nodes.map((n) => nodeState(dr.cluster, 'dr', n)) },
      perf: { nodes: perf.cluster.nodes.map((n) => nodeState(perf.cluster, 'perf', n)) },
    },
  }, null, 2));
  const init = (c: LocalCluster) => ({ unseal_keys_b64: c.keys, root_token: c.rootToken });
  writeFileSync(join(topo, 'operator', 'credentials.json'), JSON.stringify({ primary: init(primary.cluster), dr: init(dr.cluster), perf: init(perf.cluster) }), { mode: 0o600 });
});

afterAll(async () => {
  if (topo) killStatePids(topo);
  await primary?.destroy();
  await dr?.destroy();
  await perf?.destroy();
});

interface Run { code: number | null; report: any; err: string } // eslint-disable-line @typescript-eslint/no-explicit-any

async function drill(args: string[]): Promise<Run> {
  const run = await runScript(BIN, ['--dir', topo, '--json', '--load-seconds', '2', '--concurrency', '4', ...args], { timeoutMs: 300_000 });
  try {
    return { code: run.code, report: JSON.parse(run.out), err: run.err };
  } catch {
    throw new Error(`the drill's stdout is not one JSON object (exit ${run.code}):\n${run.out}\n--- stderr ---\n${run.err}\n${primary.logs(15)}`);
  }
}

const fail = (run: Run) => `exit ${run.code}: ${run.report.error}\n--- stderr ---\n${run.err}`;

describe('scripts/dr-drill', () => {
  it('fails over as planned with no acknowledged write lost, and fails back', async () => {
    const run = await drill(['--planned', '--failback']);
    if (run.code !== 0) throw new Error(fail(run));
    const r = run.report;
    expect(r).toMatchObject({ ok: true, mode: 'planned', from: 'primary', to: 'dr', rpo_writes_lost: 0, missing_seqs: [] });
    expect(r.rto_seconds).toBeGreaterThan(0);
    expect(r.canaries_acknowledged).toBeGreaterThan(0);
    expect(r.canaries_verified).toBe(r.canaries_acknowledged);
    expect(r.last_seq_on_promoted).toBe(r.last_acknowledged_seq);
    expect(r.steps.map((s: { name: string }) => s.name)).toEqual(expect.arrayContaining([
      'pre-check', 'canary load', 'secondary catch-up', 'failure: demote the primary', 'DR operation token', 'promote',
      'first write on the new primary', 'verify canaries', 'old primary: update-primary', 'old primary: streaming',
      'performance secondary: follow the new primary', 'performance secondary: canary read', 'delete the DR operation tokens',
    ]));
    expect(r.steps.every((s: { ok: boolean; seconds: number }) => s.ok && s.seconds >= 0)).toBe(true);
    // Re-pointed with a token sealed to its public key, as a secondary that reaches only the cluster port needs.
    expect(r.performance_secondary).toMatchObject({ action: 'update-primary', token_kind: 'public-key', state: 'stream-wals', canary_read: true });
    expect(r.failback).toMatchObject({ ok: true, mode: 'planned', from: 'dr', to: 'primary', rpo_writes_lost: 0 });
    expect(r.failback.rto_seconds).toBeGreaterThan(0);
    expect(r.failback.performance_secondary).toMatchObject({ state: 'stream-wals', canary_read: true });
    // After failback the DR secondary holds its operation token no more.
    expect(r.operation_tokens.deleted).toContain('dr');
    // Progress went to stderr, the report alone to stdout; no token was printed.
    expect(run.err).toMatch(/\[planned\] promote: ok/);
    expect(run.err + JSON.stringify(r)).not.toContain(primary.cluster.rootToken);
  });

  it('fails over unplanned with every primary node SIGKILLed under the load, and counts what it lost', async () => {
    const before = statePids();
    const run = await drill(['--unplanned']);
    if (run.code !== 0) throw new Error(fail(run));
    const r = run.report;
    expect(r).toMatchObject({ ok: true, mode: 'unplanned', from: 'primary', to: 'dr' });
    expect(typeof r.rpo_writes_lost).toBe('number');
    expect(r.rpo_writes_lost).toBeGreaterThanOrEqual(0);
    expect(r.rpo_writes_lost + r.canaries_verified).toBe(r.canaries_acknowledged);
    expect(r.rpo_writes_lost).toBeLessThanOrEqual(r.canaries_acknowledged_before_failure);
    expect(r.missing_seqs.length).toBe(Math.min(r.rpo_writes_lost, 20));
    expect(r.rto_seconds).toBeGreaterThan(0);
    expect(r.canaries_acknowledged_before_failure).toBeGreaterThan(0);
    expect(r.last_seq_on_promoted).toBeLessThanOrEqual(r.last_acknowledged_seq);
    // The killed primary came back as a primary (two of them) and was demoted, then followed.
    expect(r.old_primary).toEqual({ came_back_as: 'primary', now: 'DR secondary of dr' });
    expect(r.performance_secondary).toMatchObject({ state: 'stream-wals', canary_read: true });
    expect(r.failback).toBeUndefined();
    // The restarted primary nodes run from the state's start block, under new pids written back.
    const pids = statePids();
    expect(pids.slice(0, 3).every((pid) => !before.includes(pid))).toBe(true);
    expect(pids.slice(3)).toEqual(before.slice(3));
    for (const pid of pids) expect(() => process.kill(pid, 0)).not.toThrow();
    const streamed = await api(dr.cluster.nodes[0]!.apiAddr, 'GET', 'sys/replication/dr/status');
    expect(streamed.json.data.mode).toBe('primary');
  });
});
