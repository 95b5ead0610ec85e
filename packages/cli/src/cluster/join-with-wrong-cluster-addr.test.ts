import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { LocalCluster, NodeHandle } from '../cluster-launcher';
import { api, launchTestCluster, runCli, until, type TestCluster } from './test-support/cluster-fixture';

/**
 * A node whose listener has no cluster_address (so its cluster port is the API port plus one)
 * and whose cluster_addr advertises another port, where nothing listens: the leader cannot reach
 * it. Its join must fail within seconds, naming cluster_addr, leave it a new node that can join
 * again, and never reach the leader's membership; once its config is fixed, it joins and is
 * promoted after the stabilization time. Two voters run meanwhile, so that losing the third
 * later leaves a quorum and the leader can say why that member is unhealthy.
 */

const BASE_PORT = 24600; // 24600-24629 (24629: a port where nothing listens)
const BIN = resolve(__dirname, '../../bin/strongroom.js');
const TICK_MS = 50;

jest.setTimeout(120_000);

let tc: TestCluster | undefined;
let joiner: ChildProcess | null = null;

const apiPort = BASE_PORT + 20;
const apiAddr = `http://127.0.0.1:${apiPort}`;
const dir = () => join((tc as TestCluster).dir, 'node3');

function cluster(): LocalCluster {
  if (!tc) throw new Error('the cluster did not start (see beforeAll)');
  return tc.cluster;
}

/** Starts node3 with the given cluster_addr and no cluster_address in its listener. */
async function startJoiner(clusterAddr: string): Promise<void> {
  await stopJoiner();
  mkdirSync(dir(), { recursive: true });
  const file = join(dir(), 'server.hcl');
  writeFileSync(file, [
    'storage "raft" {',
    `  path    = "${join(dir(), 'data')}"`,
    '  node_id = "node3"',
    '}',
    'listener "tcp" {',
    `  address     = "127.0.0.1:${apiPort}"`,
    '  tls_disable = true',
    '}',
    `api_addr     = "${apiAddr}"`,
    `cluster_addr = "${clusterAddr}"`,
    '',
  ].join('\n'));
  const log = openSync(join(dir(), 'server.log'), 'a');
  const child = spawn(process.execPath, [BIN, 'server', '--config', file], {
    stdio: ['ignore', log, log], env: { ...process.env, STRONGROOM_RAFT_TICK_MS: String(TICK_MS) },
  });
  closeSync(log);
  joiner = child;
  child.on('exit', () => {
    if (joiner === child) joiner = null;
  });
  await until('node3 to answer', 30_000, async () => ((await api(apiAddr, 'GET', 'sys/seal-status')).status === 200 ? true : undefined));
}

async function stopJoiner(): Promise<void> {
  const child = joiner;
  if (!child) return;
  await new Promise<void>((r) => {
    child.once('exit', () => r());
    child.kill('SIGKILL');
  });
}

async function autopilot(addr: string) {
  const r = await api(addr, 'GET', 'sys/storage/raft/autopilot/state', { token: cluster().rootToken });
  expect(r.status).toBe(200);
  return r.json.data as { healthy: boolean; voters: string[]; non_voters: string[]; servers: Record<string, { healthy: boolean; status: string; reason: string }> };
}

async function members(addr: string): Promise<string[]> {
  const r = await api(addr, 'GET', 'sys/storage/raft/configuration', { token: cluster().rootToken });
  expect(r.status).toBe(200);
  return (r.json.data.config.servers as { node_id: string }[]).map((s) => s.node_id).sort();
}

function logOf(n: NodeHandle): string {
  return readFileSync(join(n.dir, 'server.log'), 'utf8');
}

beforeAll(async () => {
  tc = await launchTestCluster('join-check', { nodes: 2, basePort: BASE_PORT, tickMs: TICK_MS });
}, 90_000);

afterAll(async () => {
  await stopJoiner();
  await tc?.destroy();
});

test('a node the leader cannot reach at its cluster_addr fails to join within seconds, stays a new node, and is never a member', async () => {
  const c = cluster();
  const active = await c.waitActive();
  // Its cluster listener is on the API port plus one; it advertises a port where nothing listens.
  await startJoiner(`https://127.0.0.1:${apiPort + 9}`);
  for (let attempt = 1; attempt <= 2; attempt++) {
    const joined = await api(apiAddr, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: active.apiAddr } });
    expect({ attempt, status: joined.status, body: joined.json }).toEqual({ attempt, status: 200, body: { joined: true } });
    // Unseal completes the join, and must fail fast rather than wait for data that cannot come.
    const unsealed = await api(apiAddr, 'PUT', 'sys/unseal', { body: { key: c.keys[0] }, timeoutMs: 30_000 });
    expect({ attempt, status: unsealed.status }).toEqual({ attempt, status: 400 });
    expect(unsealed.json.errors[0]).toMatch(new RegExp(`cluster_addr 127\\.0\\.0\\.1:${apiPort + 9}`));
    // A new node again: not initialized, nothing stored that would make it a member after a restart.
    const status = await api(apiAddr, 'GET', 'sys/seal-status');
    expect({ attempt, initialized: status.json.initialized, sealed: status.json.sealed }).toEqual({ attempt, initialized: false, sealed: true });
    expect(existsSync(join(dir(), 'data', 'tls.json'))).toBe(false);
    expect(existsSync(join(dir(), 'data', 'raft'))).toBe(false);
  }
  // The leader never took it in, and keeps serving with its two voters.
  for (let i = 0; i < 10; i++) {
    expect(await members(active.apiAddr)).toEqual(['node1', 'node2']);
    await new Promise((r) => setTimeout(r, 100));
  }
  const state = await autopilot(active.apiAddr);
  expect({ healthy: state.healthy, voters: [...state.voters].sort(), non_voters: state.non_voters }).toEqual({ healthy: true, voters: ['node1', 'node2'], non_voters: [] });
  expect(logOf(active).split('\n').filter((l) => l.includes('promoted') && l.includes('node3'))).toEqual([]);
});

test('with its cluster_addr fixed the same node joins, stays a non-voter for the stabilization time, then is promoted', async () => {
  const c = cluster();
  const active = await c.waitActive();
  await startJoiner(`https://127.0.0.1:${apiPort + 1}`);
  const joined = await api(apiAddr, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: active.apiAddr } });
  expect(joined.status).toBe(200);
  const unsealed = await api(apiAddr, 'PUT', 'sys/unseal', { body: { key: c.keys[0] }, timeoutMs: 30_000 });
  expect({ status: unsealed.status, sealed: unsealed.json?.sealed }).toEqual({ status: 200, sealed: false });
  // 100 ticks of stabilization (5 s here), then a promotion within a few autopilot rounds.
  await until('node3 to be a voter', 60_000, async () => ((await autopilot(active.apiAddr)).voters.includes('node3') ? true : undefined));
  const lines = logOf(active).split('\n').filter((l) => l.includes('"node3"'));
  const waited = lines.findIndex((l) => l.includes('waiting out server_stabilization_time'));
  const promoted = lines.findIndex((l) => l.includes('promoted a member to voter'));
  expect(waited).toBeGreaterThan(-1);
  expect(promoted).toBeGreaterThan(waited);
  await until('autopilot to see three healthy voters', 30_000, async () => {
    const s = await autopilot(active.apiAddr);
    return s.healthy && s.voters.length === 3 ? true : undefined;
  });
});

test('the leader says why a member is unhealthy, in the autopilot state and through the CLI, logs it once, and refuses a removal that would cost the quorum', async () => {
  const c = cluster();
  const active = await c.waitActive();
  await stopJoiner();
  const state = await until('autopilot to see node3 silent', 30_000, async () => {
    const s = await autopilot(active.apiAddr);
    return /no answer to the leader.*cluster_addr/.test(s.servers['node3']?.reason ?? '') ? s : undefined;
  });
  expect(state.servers['node3']).toMatchObject({ healthy: false, status: 'voter' });
  expect(state.servers[active.id]?.reason).toBe('');
  const cli = await runCli(['operator', 'raft', 'autopilot', 'state'], { addr: active.apiAddr, token: c.rootToken });
  expect(cli.code).toBe(0);
  expect(cli.out).toMatch(/^node3\s.*\sfalse\s.*no answer to the leader/m);
  // Several autopilot rounds later, the reason is still logged once.
  await new Promise((r) => setTimeout(r, 2_000));
  const lines = logOf(active).split('\n').filter((l) => l.includes('no answer to the leader') && l.includes('node3'));
  expect(lines).toHaveLength(1);

  // With node3 gone, removing the other live voter would leave the leader alone among two: refused.
  const live = c.nodes.find((n) => n !== active) as NodeHandle;
  const refused = await api(active.apiAddr, 'POST', 'sys/storage/raft/remove-peer', { token: c.rootToken, body: { server_id: live.id } });
  expect(refused.status).toBe(400);
  expect(refused.json.errors[0]).toMatch(/reachable quorum/);
  const removed = await api(active.apiAddr, 'POST', 'sys/storage/raft/remove-peer', { token: c.rootToken, body: { server_id: 'node3' } });
  expect(removed.status).toBe(204);
  expect(await members(active.apiAddr)).toEqual(['node1', 'node2']);
});
