import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readState, stateNodes } from '../topology/state-file';

/**
 * The drill as CI proves it: `scripts/topology up` (every cluster sealed by transit, as the
 * compose file runs them), then `scripts/dr-drill --dir` planned and unplanned, each a few
 * seconds of load. Runs the BUILT scripts (`tsc -b` first).
 */

const BASE_PORT = 26560; // 26560-26578
const ROOT = resolve(__dirname, '../../../..');
const TOPOLOGY = join(ROOT, 'scripts', 'topology');
const DRILL = join(ROOT, 'scripts', 'dr-drill');

jest.setTimeout(900_000);

let dir: string;

interface Run { code: number | null; out: string; err: string }

function run(script: string, args: string[], timeoutMs: number): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [script, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, out, err });
    });
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function drill(args: string[]): Promise<any> {
  const r = await run(DRILL, ['--dir', dir, '--json', '--load-seconds', '3', '--concurrency', '4', ...args], 400_000);
  let report;
  try {
    report = JSON.parse(r.out);
  } catch {
    throw new Error(`the drill's stdout is not one JSON object (exit ${r.code}):\n${r.out}\n--- stderr ---\n${r.err}`);
  }
  if (r.code !== 0) throw new Error(`the drill failed (exit ${r.code}): ${report.error}\n--- stderr ---\n${r.err}`);
  return report;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'strongroom-drill-topology-'));
  const up = await run(TOPOLOGY, ['up', '--dir', dir, '--base-port', String(BASE_PORT)], 600_000);
  if (up.code !== 0) throw new Error(`topology up failed (exit ${up.code}):\n${up.out}\n${up.err}`);
});

afterAll(async () => {
  if (!dir) return;
  await run(TOPOLOGY, ['down', '--dir', dir], 120_000);
  // Whatever down could not stop is ours to end.
  const state = readState(dir);
  for (const n of state ? stateNodes(state) : []) {
    try {
      process.kill(n.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('scripts/dr-drill on scripts/topology', () => {
  it('a planned failover loses no acknowledged write, and the performance secondary follows', async () => {
    const r = await drill(['--planned']);
    expect(r).toMatchObject({ ok: true, mode: 'planned', from: 'primary', to: 'dr', rpo_writes_lost: 0, missing_seqs: [] });
    expect(r.rto_seconds).toBeGreaterThan(0);
    expect(r.canaries_acknowledged).toBeGreaterThan(0);
    expect(r.canaries_verified).toBe(r.canaries_acknowledged);
    // The DR operation token came from the primary's recovery keys: every cluster is auto-unsealed.
    expect(r.steps.find((s: { name: string }) => s.name === 'promote')).toMatchObject({ ok: true });
    expect(r.performance_secondary).toMatchObject({ state: 'stream-wals', canary_read: true });
  });

  it('an unplanned failover (the whole primary SIGKILLed under load) counts what it lost and takes the old primary back as a secondary', async () => {
    const r = await drill(['--unplanned']);
    expect(r).toMatchObject({ ok: true, mode: 'unplanned', from: 'dr', to: 'primary' });
    expect(r.rpo_writes_lost).toBeGreaterThanOrEqual(0);
    expect(r.rpo_writes_lost + r.canaries_verified).toBe(r.canaries_acknowledged);
    expect(r.rto_seconds).toBeGreaterThan(0);
    expect(r.canaries_acknowledged_before_failure).toBeGreaterThan(0);
    // The killed nodes restarted from the state file and unsealed themselves through transit.
    expect(r.old_primary).toEqual({ came_back_as: 'primary', now: 'DR secondary of primary' });
    expect(r.performance_secondary).toMatchObject({ state: 'stream-wals', canary_read: true });
  });
});
