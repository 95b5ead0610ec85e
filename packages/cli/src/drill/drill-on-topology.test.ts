import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { readState, stateNodes, type TopologyState } from '../topology/state-file';
import { fakeDockerCalls, installFakeDocker } from './test-support/fake-docker';
import { killStatePids, runScript, type ScriptRun } from './test-support/scripts';

/**
 * The drill as CI proves it, on one `scripts/topology up` (every cluster sealed by transit, as
 * the compose file runs them): `scripts/dr-drill --dir` planned and unplanned, each a few seconds
 * of load; then `--compose` without a Docker engine: the compose file's nodes are the same local
 * processes (the copy of docker-compose.yml given to the drill publishes their ports), and a
 * fake `docker` on PATH does `docker compose kill` and `start` to them. Runs the BUILT scripts
 * (`tsc -b` first).
 */

const BASE_PORT = 26560; // 26560-26578
const ROOT = resolve(__dirname, '../../../..');
const TOPOLOGY = join(ROOT, 'scripts', 'topology');
const DRILL = join(ROOT, 'scripts', 'dr-drill');
const PROJECT = 'drill-test';

jest.setTimeout(900_000);

let work: string;
let dir: string;

const run = (script: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<ScriptRun> =>
  runScript(script, args, { env, cwd: ROOT, timeoutMs });

/** The drill's one JSON report, or an error with what it printed when it failed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function reportOf(r: ScriptRun): any {
  let report;
  try {
    report = JSON.parse(r.out);
  } catch {
    throw new Error(`the drill's stdout is not one JSON object (exit ${r.code}):\n${r.out}\n--- stderr ---\n${r.err}`);
  }
  if (r.code !== 0) throw new Error(`the drill failed (exit ${r.code}): ${report.error}\n--- stderr ---\n${r.err}`);
  return report;
}

/**
 * What an unplanned drill from `from` to `to` reports when it went well: every acknowledged
 * canary either verified or counted lost, a measured RTO, the old primary back as a DR secondary
 * of the new one, and the performance secondary streaming from it.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function expectUnplannedFailover(r: any, from: string, to: string): void {
  expect(r).toMatchObject({ ok: true, mode: 'unplanned', from, to });
  expect(r.rpo_writes_lost).toBeGreaterThanOrEqual(0);
  expect(r.rpo_writes_lost + r.canaries_verified).toBe(r.canaries_acknowledged);
  expect(r.canaries_acknowledged_before_failure).toBeGreaterThan(0);
  expect(r.rto_seconds).toBeGreaterThan(0);
  expect(r.old_primary).toEqual({ came_back_as: 'primary', now: `DR secondary of ${to}` });
  expect(r.performance_secondary).toMatchObject({ state: 'stream-wals', canary_read: true });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function drillOnDir(args: string[]): Promise<any> {
  return reportOf(await run(DRILL, ['--dir', dir, '--json', '--load-seconds', '3', '--concurrency', '4', ...args], process.env, 400_000));
}

/** docker-compose.yml with each node's API published on the port its local process listens on. */
function composeCopy(state: TopologyState, file: string): void {
  const doc = parseDocument(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'));
  for (const node of stateNodes(state)) {
    const port = new URL(node.api_addr).port;
    // One node in the long syntax, on every interface, as `docker compose config` prints it.
    const published = node.name === 'perf-1' ? [{ target: 8200, published: port, host_ip: '0.0.0.0', protocol: 'tcp' }] : [`127.0.0.1:${port}:8200`];
    doc.setIn(['services', node.name, 'ports'], doc.createNode(published));
  }
  writeFileSync(file, String(doc));
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'strongroom-drill-compose-'));
  dir = join(work, 'topology');
  const up = await run(TOPOLOGY, ['up', '--dir', dir, '--base-port', String(BASE_PORT)], process.env, 600_000);
  if (up.code !== 0) throw new Error(`topology up failed (exit ${up.code}):\n${up.out}\n${up.err}`);
});

afterAll(async () => {
  if (!work) return;
  await run(TOPOLOGY, ['down', '--dir', dir], process.env, 120_000);
  // Whatever down could not stop is ours to end.
  killStatePids(dir);
  rmSync(work, { recursive: true, force: true });
});

describe('scripts/dr-drill on scripts/topology', () => {
  it('a planned failover loses no acknowledged write, and the performance secondary follows', async () => {
    const r = await drillOnDir(['--planned']);
    expect(r).toMatchObject({ ok: true, mode: 'planned', from: 'primary', to: 'dr', rpo_writes_lost: 0, missing_seqs: [] });
    expect(r.rto_seconds).toBeGreaterThan(0);
    expect(r.canaries_acknowledged).toBeGreaterThan(0);
    expect(r.canaries_verified).toBe(r.canaries_acknowledged);
    // The DR operation token came from the primary's recovery keys: every cluster is auto-unsealed.
    expect(r.steps.find((s: { name: string }) => s.name === 'promote')).toMatchObject({ ok: true });
    expect(r.performance_secondary).toMatchObject({ state: 'stream-wals', canary_read: true });
  });

  it('an unplanned failover (the whole primary SIGKILLed under load) counts what it lost and takes the old primary back as a secondary', async () => {
    const r = await drillOnDir(['--unplanned']);
    // The killed nodes restarted from the state file and unsealed themselves through transit.
    expectUnplannedFailover(r, 'dr', 'primary');
  });

  it('an unplanned drill kills the primary\'s services through docker compose, starts them again and fails over', async () => {
    const before = readState(dir) as TopologyState;
    const composeFile = join(work, 'docker-compose.yml');
    composeCopy(before, composeFile);
    const calls = join(work, 'docker-calls.jsonl');
    installFakeDocker(join(work, 'bin'));
    const env: NodeJS.ProcessEnv = {
      ...process.env, PATH: `${join(work, 'bin')}:${process.env['PATH'] ?? ''}`, FAKE_DOCKER_TOPOLOGY: dir, FAKE_DOCKER_CALLS: calls,
    };
    delete env['DOCKER'];

    const r = await run(DRILL, [
      '--compose', '--compose-file', composeFile, '--project-name', PROJECT, '--credentials', join(dir, 'operator', 'credentials.json'),
      '--unplanned', '--json', '--load-seconds', '3', '--concurrency', '4',
    ], env, 400_000);
    const report = reportOf(r);

    // Started again by `docker compose start`, the old primary's nodes unsealed themselves through transit.
    expectUnplannedFailover(report, 'primary', 'dr');

    const primary = ['primary-1', 'primary-2', 'primary-3'];
    const prefix = ['compose', '-f', composeFile, '-p', PROJECT];
    const recorded = fakeDockerCalls(calls);
    const kills = recorded.filter((c) => c[5] === 'kill');
    const starts = recorded.filter((c) => c[5] === 'start');
    expect(kills.length + starts.length).toBe(recorded.length);
    expect(kills.map((c) => c.at(-1)).sort()).toEqual(primary);
    for (const c of kills) expect(c).toEqual([...prefix, 'kill', '-s', 'SIGKILL', c.at(-1)]);
    expect(starts).toEqual(primary.map((s) => [...prefix, 'start', s]));
    expect(recorded.slice(0, 3)).toEqual(kills);

    // The fake acted on the processes: the primary's nodes run under new pids, the others as before.
    const after = readState(dir) as TopologyState;
    const pid = (s: TopologyState, name: string) => stateNodes(s).find((n) => n.name === name)?.pid;
    for (const name of primary) expect(pid(after, name)).not.toBe(pid(before, name));
    for (const n of stateNodes(before).filter((x) => !primary.includes(x.name))) expect(pid(after, n.name)).toBe(n.pid);
  });
});
