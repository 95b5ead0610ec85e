import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { api, until } from '../cluster/test-support/cluster-fixture';
import { operationToken } from '../cluster/test-support/dr-support';
import { generateRoot } from '../cluster/test-support/performance-support';
import type { Credentials } from './bootstrap';
import { startNode, status } from './local-topology';
import { isRunning } from './process-control';
import { readState, stateNodes, type NodeState, type TopologyState } from './state-file';

/**
 * `scripts/topology up` runs the compose topology from its own role configs as local processes:
 * a transit seal provider, a 3-node primary, a 3-node DR secondary and a performance secondary,
 * all auto-unsealed and replicating, with an automated snapshot in the S3 emulator. One `up`
 * serves every check of this file; `down` ends it. Runs the BUILT scripts (`tsc -b` first).
 */

const BASE_PORT = 26540; // 26540-26558
const ROOT = resolve(__dirname, '../../../..');
const TOPOLOGY = join(ROOT, 'scripts', 'topology');
const BOOTSTRAP = join(ROOT, 'scripts', 'bootstrap');

jest.setTimeout(600_000);

let dir: string;
let upOutput = '';
let state: TopologyState;
let creds: Credentials;

/** A Vault client's settings in the operator's shell, which no node may take for its seal's. */
const CLIENT_ENV = { VAULT_TOKEN: 'not-a-seal-token', VAULT_NAMESPACE: 'elsewhere', VAULT_ADDR: 'http://127.0.0.1:9' };

function run(script: string, args: string[], timeoutMs = 540_000): Promise<{ code: number | null; out: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [script, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...CLIENT_ENV } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`${script} ${args[0]} did not finish in ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      done({ code, out });
    });
  });
}

function node(name: string): NodeState {
  const n = stateNodes(readState(dir) as TopologyState).find((x) => x.name === name);
  if (!n) throw new Error(`no node ${name}`);
  return n;
}

async function sealedState(addr: string): Promise<boolean | undefined> {
  const r = await api(addr, 'GET', 'sys/seal-status', { timeoutMs: 5_000 }).catch(() => null);
  return r?.status === 200 ? r.json.sealed as boolean : undefined;
}

/** SIGKILLs a node, starts it again from the state file, and waits until it is unsealed by itself. */
async function crashAndRestart(name: string): Promise<void> {
  const before = node(name);
  process.kill(before.pid, 'SIGKILL');
  await until(`${name} to die`, 30_000, async () => (isRunning(before.pid, before.start) ? undefined : true));
  const after = startNode(dir, name);
  expect(after.pid).not.toBe(before.pid);
  expect(node(name).pid).toBe(after.pid);
  await until(`${name} to unseal itself after its restart`, 180_000, async () => ((await sealedState(after.api_addr)) === false ? true : undefined), 250);
}

function logFiles(at: string): string[] {
  return readdirSync(at, { withFileTypes: true }).flatMap((e) => {
    const path = join(at, e.name);
    if (e.isDirectory()) return logFiles(path);
    return e.name.endsWith('.log') ? [path] : [];
  });
}

function secrets(): string[] {
  const all: string[] = [];
  for (const c of Object.values(creds)) {
    if (!c) continue;
    all.push(c.root_token, ...(c.unseal_keys_b64 ?? []), ...(c.recovery_keys_b64 ?? []));
  }
  for (const f of readdirSync(join(dir, 'seal'))) all.push(readFileSync(join(dir, 'seal', f), 'utf8').trim());
  return all.filter((s) => s.length >= 8);
}

const HEALTH = 'sys/health?standbyok=true&perfstandbyok=true&drsecondarycode=200&performancestandbycode=200';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'strongroom-topology-'));
  const up = await run(TOPOLOGY, ['up', '--dir', dir, '--base-port', String(BASE_PORT)]);
  upOutput = up.out;
  if (up.code !== 0) throw new Error(`up exited ${up.code}:\n${up.out}`);
  state = readState(dir) as TopologyState;
  creds = JSON.parse(readFileSync(join(dir, 'operator', 'credentials.json'), 'utf8')) as Credentials;
}, 600_000);

afterAll(async () => {
  if (dir && readState(dir)) await run(TOPOLOGY, ['down', '--dir', dir], 120_000);
  if (dir && !process.env['KEEP_CLUSTER_DIRS']) rmSync(dir, { recursive: true, force: true });
});

test('every node is healthy, and both secondaries stream the primary\'s WALs', async () => {
  const lines: string[] = [];
  await until('status to report everything up', 120_000, async () => {
    lines.length = 0;
    return (await status(dir, (l) => lines.push(l))) ? true : undefined;
  }, 1_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${lines.join('\n')}`);
  });
  for (const n of stateNodes(state)) expect([n.name, (await api(n.api_addr, 'GET', HEALTH)).status]).toEqual([n.name, 200]);
  const dr = await Promise.all(state.clusters.dr.nodes.map(async (n) => (await api(n.api_addr, 'GET', 'sys/replication/dr/status')).json.data));
  expect(dr.some((d) => d.mode === 'secondary' && d.state === 'stream-wals')).toBe(true);
  const perf = (await api(node('perf-1').api_addr, 'GET', 'sys/replication/performance/status')).json.data;
  expect(perf).toMatchObject({ mode: 'secondary', state: 'stream-wals' });
  expect(Object.keys(creds).sort()).toEqual(['dr', 'perf', 'primary', 'unseal']);
});

test('a KV write on the primary is readable on the performance secondary', async () => {
  const primary = node('primary-1').api_addr;
  const token = creds.primary?.root_token as string;
  expect((await api(primary, 'POST', 'sys/mounts/app', { token, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  expect((await api(primary, 'POST', 'app/data/db', { token, body: { data: { password: 'from-the-primary' } } })).status).toBe(200);
  // A performance secondary keeps its own tokens: one is made there from the primary's recovery keys.
  const perf = node('perf-1').api_addr;
  const perfToken = await generateRoot(perf, creds.primary?.recovery_keys_b64 as string[]);
  const read = await until('the secret on perf-1', 60_000, async () => {
    const r = await api(perf, 'GET', 'app/data/db', { token: perfToken });
    return r.status === 200 ? r.json.data.data : undefined;
  }, 250);
  expect(read).toEqual({ password: 'from-the-primary' });
});

test('the automated snapshot is an object in the S3 emulator', async () => {
  const topology = JSON.parse(readFileSync(join(dir, 'topology.json'), 'utf8')) as { snapshot: { bucket: string; path_prefix: string } };
  const res = await fetch(`${state.emulators.s3.endpoint}/${topology.snapshot.bucket}?list-type=2&prefix=${encodeURIComponent(topology.snapshot.path_prefix)}`);
  const xml = await res.text();
  expect(res.status).toBe(200);
  const keys = [...xml.matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]);
  expect(keys.length).toBeGreaterThan(0);
  expect(keys[0]).toContain(topology.snapshot.path_prefix);
});

test('the DR operation token is generated on the DR secondary from the primary\'s recovery keys, not its own', async () => {
  const dr = node('dr-1').api_addr;
  const base = 'sys/replication/dr/secondary/generate-operation-token';
  await api(dr, 'DELETE', `${base}/attempt`);
  const attempt = await api(dr, 'POST', `${base}/attempt`, { body: {} });
  expect(attempt.status).toBe(200);
  const { nonce } = attempt.json.data ?? attempt.json;
  const own = await api(dr, 'POST', `${base}/update`, { body: { key: creds.dr?.recovery_keys_b64?.[0], nonce } });
  expect(own.status).toBe(400);
  await api(dr, 'DELETE', `${base}/attempt`);
  const token = await operationToken(dr, creds.primary?.recovery_keys_b64 as string[]);
  expect(token.length).toBeGreaterThan(10);
});

test('credentials and seal tokens are 0600, and no key or token is in any log or in the output of up', () => {
  expect(statSync(join(dir, 'operator', 'credentials.json')).mode & 0o777).toBe(0o600);
  for (const f of readdirSync(join(dir, 'seal'))) expect([f, statSync(join(dir, 'seal', f)).mode & 0o777]).toEqual([f, 0o600]);
  const all = secrets();
  expect(all.length).toBeGreaterThanOrEqual(11);
  for (const file of [...logFiles(dir), join(dir, 'topology-state.json')]) {
    const text = readFileSync(file, 'utf8');
    for (const s of all) if (text.includes(s)) throw new Error(`a key or token is in ${file}`);
  }
  for (const s of all) if (upOutput.includes(s)) throw new Error('a key or token is in the output of up');
  expect(upOutput).toContain('bootstrap: done');
});

test('a SIGKILLed node of each cluster, started again from the state file, unseals itself', async () => {
  await crashAndRestart('primary-2');
  await crashAndRestart('dr-2');
  await crashAndRestart('perf-1');
  const perf = await until('perf-1 to stream again', 120_000, async () => {
    const d = (await api(node('perf-1').api_addr, 'GET', 'sys/replication/performance/status')).json?.data;
    return d?.state === 'stream-wals' ? d : undefined;
  }, 500);
  expect(perf.mode).toBe('secondary');
});

test('bootstrap run again exits 0 without initializing anything, and up on a running topology too', async () => {
  const again = await run(BOOTSTRAP, ['--topology', join(dir, 'topology.json'), '--operator-dir', join(dir, 'operator'), '--seal-token-dir', join(dir, 'seal')], 300_000);
  expect(again.code).toBe(0);
  expect(again.out).not.toMatch(/initializing|activating|issuing/);
  expect(JSON.parse(readFileSync(join(dir, 'operator', 'credentials.json'), 'utf8'))).toEqual(creds);
  const up = await run(TOPOLOGY, ['up', '--dir', dir], 300_000);
  expect(up.code).toBe(0);
  expect(up.out).toContain('already running');
});

test('down stops every process of the topology and leaves its data', async () => {
  // An expired seal token, as after a long stop: the next up must issue another and restart the nodes it seals.
  const unseal = node('unseal').api_addr;
  const sealToken = readFileSync(join(dir, 'seal', 'primary.token'), 'utf8').trim();
  expect((await api(unseal, 'POST', 'auth/token/revoke', { token: creds.unseal?.root_token as string, body: { token: sealToken } })).status).toBe(204);
  const before = readState(dir) as TopologyState;
  const down = await run(TOPOLOGY, ['down', '--dir', dir], 120_000);
  expect(down.code).toBe(0);
  const procs = [...stateNodes(before).map((n) => ({ pid: n.pid, start: n.start })), ...Object.values(before.emulators)];
  for (const p of procs) expect([p.start.argv.slice(1).join(' '), isRunning(p.pid, p.start)]).toEqual([p.start.argv.slice(1).join(' '), false]);
  expect(statSync(join(dir, 'primary-1', 'data')).isDirectory()).toBe(true);
  expect((await run(TOPOLOGY, ['status', '--dir', dir], 60_000)).code).toBe(1);
});

test('up on a stopped topology starts every process again from its state, and all of it unseals', async () => {
  const before = readState(dir) as TopologyState;
  const up = await run(TOPOLOGY, ['up', '--dir', dir], 300_000);
  if (up.code !== 0) throw new Error(`up exited ${up.code}:\n${up.out}`);
  expect(up.out).toContain('started 11 processes');
  expect(up.out).toContain('restarting the primary nodes to read their new seal token');
  const after = readState(dir) as TopologyState;
  for (const n of stateNodes(after)) {
    expect(n.pid).not.toBe(stateNodes(before).find((b) => b.name === n.name)?.pid);
    expect(isRunning(n.pid, n.start)).toBe(true);
  }
  const lines: string[] = [];
  await until('status to report everything up again', 120_000, async () => {
    lines.length = 0;
    return (await status(dir, (l) => lines.push(l))) ? true : undefined;
  }, 1_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${lines.join('\n')}`);
  });
});
