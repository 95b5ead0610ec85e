import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LocalCluster, NodeHandle } from '../cluster-launcher';
import { api, launchTestCluster, runCli, startAndUnseal, until, type TestCluster } from './test-support/cluster-fixture';

/**
 * A three-node cluster of real server processes, driven through the HTTP API and the CLI:
 * forwarding, leader and health reporting, membership, failover after a crash, catch-up after
 * a restart, snapshots (same cluster and another one) and peer removal. The steps share one
 * cluster and run in order; each leaves it with three healthy voters unless it says otherwise.
 */

// Ports 24100-24121 for this cluster, 24200-24221 for the second one (see cluster-fixture).
const BASE_PORT = 24100;
const OTHER_BASE_PORT = 24200;

jest.setTimeout(60_000);

let tc: TestCluster | undefined;
let other: TestCluster | undefined;

function cluster(): LocalCluster {
  if (!tc) throw new Error('the cluster did not start (see beforeAll)');
  return tc.cluster;
}

function token(): string {
  return cluster().rootToken;
}

function live(): NodeHandle[] {
  return cluster().nodes.filter((n) => n.process !== null);
}

async function kvPut(addr: string, key: string, value: string): Promise<void> {
  const r = await api(addr, 'PUT', `kv/${key}`, { token: token(), body: { value } });
  if (r.status !== 204) throw new Error(`write of kv/${key} through ${addr}: ${r.status} ${r.text}`);
}

async function kvGet(addr: string, key: string, tok = token()): Promise<string | null> {
  const r = await api(addr, 'GET', `kv/${key}`, { token: tok });
  if (r.status === 404) return null;
  if (r.status !== 200) throw new Error(`read of kv/${key} through ${addr}: ${r.status} ${r.text}`);
  return r.json.data.value as string;
}

/** Nodes whose process ended by itself, as the launcher told of them (not those it stopped). */
const exits: string[] = [];

/** Every write acknowledged so far and still expected (null: deleted or rolled back). */
const acknowledged = new Map<string, string | null>();

async function put(addr: string, key: string, value: string): Promise<void> {
  await kvPut(addr, key, value);
  acknowledged.set(key, value);
}

/** Reads every acknowledged key back through each of `nodes`. */
async function expectAcknowledged(nodes: NodeHandle[]): Promise<void> {
  for (const n of nodes) {
    const seen: Record<string, string | null> = {};
    for (const key of acknowledged.keys()) seen[key] = await kvGet(n.apiAddr, key);
    expect({ node: n.id, values: seen }).toEqual({ node: n.id, values: Object.fromEntries(acknowledged) });
  }
}

interface Peer {
  node_id: string;
  address: string;
  leader: boolean;
  voter: boolean;
}

async function peers(addr: string): Promise<Peer[]> {
  const r = await api(addr, 'GET', 'sys/storage/raft/configuration', { token: token() });
  expect(r.status).toBe(200);
  return r.json.data.config.servers as Peer[];
}

async function autopilot(addr: string) {
  const r = await api(addr, 'GET', 'sys/storage/raft/autopilot/state', { token: token() });
  expect(r.status).toBe(200);
  return r.json.data as { healthy: boolean; failure_tolerance: number; leader: string; voters: string[]; servers: Record<string, { healthy: boolean; last_index: number; status: string }> };
}

/** Waits until autopilot on the active node sees `count` healthy voters (a restarted node has caught up). */
async function waitHealthy(count: number, timeoutMs = 20_000): Promise<void> {
  await until(`${count} healthy voters`, timeoutMs, async () => {
    const active = await cluster().waitActive();
    const state = await autopilot(active.apiAddr);
    return state.healthy && state.voters.length === count ? true : undefined;
  });
}

beforeAll(async () => {
  tc = await launchTestCluster('cluster', {
    nodes: 3, basePort: BASE_PORT, onNodeExit: (n, code, signal) => exits.push(`${n.id} ${signal ?? code}`),
  });
  const active = await tc.cluster.waitActive();
  const mount = await api(active.apiAddr, 'POST', 'sys/mounts/kv', { token: tc.cluster.rootToken, body: { type: 'kv', options: { version: '1' } } });
  expect(mount.status).toBe(204);
}, 90_000);

afterAll(async () => {
  // Both run even if one throws, so no server process outlives the file.
  await Promise.allSettled([tc?.destroy(), other?.destroy()]);
});

test('a write through any node is stored once and reads back through every node', async () => {
  const c = cluster();
  for (const n of c.nodes) await put(n.apiAddr, `from-${n.id}`, `written through ${n.id}`);
  // Overwrite through a standby, delete through another: forwarding carries every operation.
  const standbys = c.nodes.filter((n) => n !== c.nodes[0]);
  await put((standbys[0] as NodeHandle).apiAddr, 'from-node1', 'overwritten through a standby');
  const del = await api((standbys[1] as NodeHandle).apiAddr, 'DELETE', 'kv/from-node2', { token: token() });
  expect(del.status).toBe(204);
  acknowledged.set('from-node2', null);
  await expectAcknowledged(c.nodes);
  // LIST is forwarded too.
  const list = await api((standbys[0] as NodeHandle).apiAddr, 'GET', 'kv/?list=true', { token: token() });
  expect(list.status).toBe(200);
  expect((list.json.data.keys as string[]).sort()).toEqual(['from-node1', 'from-node3']);
});

test('sys/leader names the active node everywhere; sys/health is 200 on it and 429 on the standbys', async () => {
  const c = cluster();
  const active = await c.waitActive();
  for (const n of c.nodes) {
    const leader = await api(n.apiAddr, 'GET', 'sys/leader');
    expect(leader.status).toBe(200);
    expect(leader.json).toMatchObject({ ha_enabled: true, is_self: n === active, leader_address: active.apiAddr, leader_cluster_address: `https://127.0.0.1:${active.clusterPort}` });
    const health = await api(n.apiAddr, 'GET', 'sys/health');
    expect({ node: n.id, status: health.status, standby: health.json.standby, sealed: health.json.sealed })
      .toEqual({ node: n.id, status: n === active ? 200 : 429, standby: n !== active, sealed: false });
  }
});

test('the raft configuration lists three voters and one leader, through any node; autopilot is healthy with failure tolerance 1', async () => {
  const c = cluster();
  const active = await c.waitActive();
  for (const n of c.nodes) {
    const servers = await peers(n.apiAddr);
    expect(servers.map((s) => s.node_id).sort()).toEqual(['node1', 'node2', 'node3']);
    expect(servers.every((s) => s.voter)).toBe(true);
    expect(servers.filter((s) => s.leader).map((s) => s.node_id)).toEqual([active.id]);
    for (const s of servers) expect(s.address).toBe(`127.0.0.1:${c.nodes.find((x) => x.id === s.node_id)?.clusterPort}`);
  }
  await waitHealthy(3);
  const state = await autopilot(active.apiAddr);
  expect(state).toMatchObject({ healthy: true, failure_tolerance: 1, leader: active.id });
  expect([...state.voters].sort()).toEqual(['node1', 'node2', 'node3']);
  expect(Object.values(state.servers).map((s) => s.status).sort()).toEqual(['leader', 'voter', 'voter']);
});

test('the CLI lists the peers and the autopilot state, through a standby', async () => {
  const c = cluster();
  const active = await c.waitActive();
  const standby = c.nodes.find((n) => n !== active) as NodeHandle;
  const list = await runCli(['operator', 'raft', 'list-peers'], { addr: standby.apiAddr, token: token() });
  expect(list).toMatchObject({ code: 0, err: '' });
  const lines = list.out.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^Node\s+Address\s+State\s+Voter$/);
  expect(lines[1]).toMatch(/^-+\s+-+\s+-+\s+-+$/);
  const rows = lines.slice(2).map((l) => l.split(/\s+/));
  expect(rows.sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual(c.nodes.map((n) => [
    n.id, `127.0.0.1:${n.clusterPort}`, n === active ? 'leader' : 'follower', 'true',
  ]));

  const auto = await runCli(['operator', 'raft', 'autopilot', 'state'], { addr: standby.apiAddr, token: token() });
  expect(auto.code).toBe(0);
  expect(auto.out).toMatch(/^Healthy:\s+true$/m);
  expect(auto.out).toMatch(/^Failure Tolerance:\s+1$/m);
  expect(auto.out).toMatch(new RegExp(`^Leader:\\s+${active.id}$`, 'm'));

  // Without a token the server refuses, and the CLI says so with a non-zero exit.
  const denied = await runCli(['operator', 'raft', 'list-peers'], { addr: standby.apiAddr });
  expect(denied.code).not.toBe(0);
  expect(denied.err).toMatch(/403|permission denied/i);
});

test('a snapshot restored into the same cluster brings its data back to the snapshot\'s state, on every node', async () => {
  const c = cluster();
  const active = await c.waitActive();
  await put(active.apiAddr, 'snap-a', 'before the snapshot');
  await put(active.apiAddr, 'snap-b', 'before the snapshot');
  const before = new Map(acknowledged);

  // Taken through a standby (forwarded), streamed as one binary body.
  const standby = c.nodes.find((n) => n !== active) as NodeHandle;
  const res = await fetch(`${standby.apiAddr}/v1/sys/storage/raft/snapshot`, { headers: { 'x-vault-token': token() }, signal: AbortSignal.timeout(15_000) });
  expect(res.status).toBe(200);
  const snapshot = Buffer.from(await res.arrayBuffer());
  expect(snapshot.length).toBeGreaterThan(0);

  await put(active.apiAddr, 'snap-a', 'after the snapshot');
  await put(active.apiAddr, 'snap-c', 'after the snapshot');
  const del = await api(active.apiAddr, 'DELETE', 'kv/snap-b', { token: token() });
  expect(del.status).toBe(204);

  const restored = await api(standby.apiAddr, 'POST', 'sys/storage/raft/snapshot', { token: token(), raw: snapshot, timeoutMs: 30_000 });
  expect({ status: restored.status, body: restored.text }).toEqual({ status: 204, body: '' });
  acknowledged.clear();
  for (const [k, v] of before) acknowledged.set(k, v);
  acknowledged.set('snap-c', null);

  // The restore reactivates the leader; the cluster answers again within moments.
  await c.waitActive();
  await until('reads after the restore', 15_000, async () => ((await kvGet(active.apiAddr, 'snap-a')) !== undefined ? true : undefined));
  await expectAcknowledged(c.nodes);
  // The followers replaced their state too: their Raft logs match the leader's.
  await waitHealthy(3);
});

test('the CLI saves a snapshot to a file and restores it', async () => {
  const c = cluster();
  const active = await c.waitActive();
  const file = join((tc as TestCluster).dir, 'cli.snap');
  const saved = await runCli(['operator', 'raft', 'snapshot', 'save', file], { addr: active.apiAddr, token: token() });
  expect(saved).toMatchObject({ code: 0, err: '' });
  const size = readFileSync(file).length;
  expect(saved.out).toBe(`Snapshot saved to ${file} (${size} bytes)\n`);
  const before = new Map(acknowledged);

  await put(active.apiAddr, 'cli-snap', 'after the CLI snapshot');
  const standby = c.nodes.find((n) => n !== active) as NodeHandle;
  const restored = await runCli(['operator', 'raft', 'snapshot', 'restore', file], { addr: standby.apiAddr, token: token() });
  expect(restored).toMatchObject({ code: 0, err: '', out: `Snapshot restored from ${file} (${size} bytes)\n` });
  acknowledged.clear();
  for (const [k, v] of before) acknowledged.set(k, v);
  acknowledged.set('cli-snap', null);
  await c.waitActive();
  await expectAcknowledged(c.nodes);

  // Garbage is refused as a bad request, and changes nothing.
  const junk = join((tc as TestCluster).dir, 'junk.snap');
  writeFileSync(junk, 'this is not a snapshot');
  const refused = await runCli(['operator', 'raft', 'snapshot', 'restore', junk], { addr: active.apiAddr, token: token() });
  expect(refused.code).not.toBe(0);
  expect(refused.err).toMatch(/400|not a valid snapshot/);
  await expectAcknowledged([await c.waitActive()]);
  await waitHealthy(3);
});

test('automated snapshots run on the active node, carry on after a leader change with none skipped or doubled, and restore with the CLI', async () => {
  const c = cluster();
  await waitHealthy(3);
  const active = await c.waitActive();
  const standby = c.nodes.find((n) => n !== active) as NodeHandle;
  const dir = join((tc as TestCluster).dir, 'auto-snapshots');
  const INTERVAL_MS = 2_000;
  // Configured through a standby: forwarded like every other request.
  const config = await api(standby.apiAddr, 'POST', 'sys/storage/raft/snapshot-auto/config/every2s', {
    token: token(), body: { interval: '2s', retain: 100, path_prefix: dir, storage_type: 'local', local_max_space: 1_000_000_000 },
  });
  expect(config.status).toBe(204);
  const status = async (addr: string) => (await api(addr, 'GET', 'sys/storage/raft/snapshot-auto/status/every2s', { token: token() })).json.data as Record<string, unknown>;
  await until('a first automated snapshot', 10_000, async () => ((await status(standby.apiAddr))['last_snapshot_url'] ? true : undefined));

  const killedAt = Date.now();
  await c.kill(active);
  const next = await c.waitActive(15_000);
  const after = await until('two snapshots by the new active node', 20_000, async () => {
    const s = await status(next.apiAddr);
    const ended = Date.parse(s['last_snapshot_end'] as string);
    return ended > killedAt + 2 * INTERVAL_MS && s['consecutive_errors'] === 0 ? s : undefined;
  });
  const del = await api(next.apiAddr, 'DELETE', 'sys/storage/raft/snapshot-auto/config/every2s', { token: token() });
  expect(del.status).toBe(204);

  // Names carry the start time in Unix ns: no two closer than the interval, no gap much longer.
  const stamps = readdirSync(dir).filter((f) => f.endsWith('.snap')).map((f) => Number(/-(\d+)\.snap$/.exec(f)?.[1]) / 1e6).sort((a, b) => a - b);
  expect(stamps.length).toBeGreaterThanOrEqual(3);
  const gaps = stamps.slice(1).map((t, i) => t - (stamps[i] as number));
  expect(Math.min(...gaps)).toBeGreaterThanOrEqual(INTERVAL_MS - 50);
  expect(Math.max(...gaps)).toBeLessThan(2 * INTERVAL_MS + 5_000);
  expect(readdirSync(dir).filter((f) => f.startsWith('.'))).toEqual([]);

  await startAndUnseal(c, active);
  await waitHealthy(3);
  const file = fileURLToPath(after['last_snapshot_url'] as string);
  const before = new Map(acknowledged);
  const now = await c.waitActive();
  await put(now.apiAddr, 'after-auto-snapshot', 'gone after the restore');
  const restored = await runCli(['operator', 'raft', 'snapshot', 'restore', file], { addr: standby.apiAddr, token: token() });
  expect(restored).toMatchObject({ code: 0, err: '' });
  acknowledged.clear();
  for (const [k, v] of before) acknowledged.set(k, v);
  acknowledged.set('after-auto-snapshot', null);
  const back = await c.waitActive();
  await expectAcknowledged(c.nodes);
  // The snapshot holds the configuration as it was when taken; remove it again.
  await until('the restored configuration to be deletable', 10_000, async () => {
    const r = await api(back.apiAddr, 'DELETE', 'sys/storage/raft/snapshot-auto/config/every2s', { token: token() });
    return r.status === 204 ? true : undefined;
  });
  await waitHealthy(3);
});

let killed: NodeHandle | undefined;

test('after the active node is SIGKILLed another becomes active within seconds, and every acknowledged write is still there', async () => {
  const c = cluster();
  await waitHealthy(3);
  const active = await c.waitActive();
  for (let i = 0; i < 10; i++) await put(c.nodes[i % 3]?.apiAddr as string, `before-crash-${i}`, `value ${i}`);

  const t0 = Date.now();
  await c.kill(active);
  killed = active;
  const next = await c.waitActive(15_000);
  const failoverMs = Date.now() - t0;
  expect(next).not.toBe(active);
  // Elections take 10-20 ticks of 50 ms; activation adds a read barrier. A few seconds is plenty.
  expect(failoverMs).toBeLessThan(5_000);

  await expectAcknowledged(live());
  // Two of three voters still make a quorum: writes go on, through either survivor.
  for (const n of live()) await put(n.apiAddr, `during-outage-${n.id}`, `written while ${active.id} was down`);
  // A member counts as healthy for a new leader only once it has answered that leader, which
  // the killed node never does.
  const state = await until('autopilot to see the dead node', 5_000, async () => {
    const s = await autopilot(next.apiAddr);
    return s.servers[active.id]?.healthy === false ? s : undefined;
  });
  expect(state).toMatchObject({ healthy: false, failure_tolerance: 0, leader: next.id });
});

test('the killed node, restarted and unsealed, catches up on what it missed and serves it as the active node', async () => {
  const c = cluster();
  const r = killed as NodeHandle;
  await startAndUnseal(c, r);
  await waitHealthy(3);
  await expectAcknowledged(c.nodes);

  // Make the restarted node the only possible leader, so that it must serve reads from its own
  // state: kill a standby, write (the restarted node must acknowledge it), kill the active node,
  // and bring back the standby whose log is now behind; it cannot win an election against r.
  const active = await c.waitActive();
  const standby = c.nodes.find((n) => n !== active && n !== r) as NodeHandle;
  if (active === r) {
    // Already leading (it won an election while catching up): its reads are its own.
    await expectAcknowledged([r]);
    return;
  }
  await c.kill(standby);
  await put(active.apiAddr, 'acked-by-restarted-node', 'only node ' + r.id + ' and ' + active.id + ' have it');
  await c.kill(active);
  await startAndUnseal(c, standby);
  const next = await c.waitActive(15_000);
  expect(next.id).toBe(r.id);
  await expectAcknowledged([r]);
  await startAndUnseal(c, active);
  await waitHealthy(3);
  await expectAcknowledged(c.nodes);
});

test('the launcher tells of a node that dies by itself, and not of those it stops', async () => {
  const c = cluster();
  // Every stop so far came from the launcher (kill, restart): none is reported.
  expect(exits).toEqual([]);
  await waitHealthy(3);
  const victim = c.nodes.find((n) => n.process !== null && n !== c.nodes[0]) as NodeHandle;
  process.kill(victim.process?.pid as number, 'SIGKILL');
  await until('the launcher to notice', 10_000, async () => (exits.length > 0 ? true : undefined));
  expect(exits).toEqual([`${victim.id} SIGKILL`]);
  expect(victim.process).toBeNull();
  await startAndUnseal(c, victim);
  await waitHealthy(3);
});

describe('a snapshot of this cluster restored into another cluster', () => {
  let snapshot: Buffer;
  let followersSealed: boolean[] = [];

  beforeAll(async () => {
    const active = await cluster().waitActive();
    const res = await fetch(`${active.apiAddr}/v1/sys/storage/raft/snapshot`, { headers: { 'x-vault-token': token() }, signal: AbortSignal.timeout(15_000) });
    expect(res.status).toBe(200);
    snapshot = Buffer.from(await res.arrayBuffer());
    other = await launchTestCluster('other-cluster', { nodes: 3, basePort: OTHER_BASE_PORT });
    const otherActive = await other.cluster.waitActive();
    const mount = await api(otherActive.apiAddr, 'POST', 'sys/mounts/kv', { token: other.cluster.rootToken, body: { type: 'kv', options: { version: '1' } } });
    expect(mount.status).toBe(204);
    const w = await api(otherActive.apiAddr, 'PUT', 'kv/own', { token: other.cluster.rootToken, body: { value: 'the other cluster\'s own data' } });
    expect(w.status).toBe(204);
  }, 90_000);

  // Two separate inits never share keys, so "restore without force into another cluster with
  // the same keys" cannot be arranged here; the same-keys path is covered by the same-cluster tests.

  test('is refused without force (its keys are not this cluster\'s), and changes nothing', async () => {
    const o = (other as TestCluster).cluster;
    const otherActive = await o.waitActive();
    const r = await api(otherActive.apiAddr, 'POST', 'sys/storage/raft/snapshot', { token: o.rootToken, raw: snapshot, timeoutMs: 30_000 });
    expect(r.status).toBe(400);
    expect(r.json.errors.join(' ')).toMatch(/other unseal keys/);
    for (const n of o.nodes) {
      const read = await api(n.apiAddr, 'GET', 'kv/own', { token: o.rootToken });
      expect({ node: n.id, status: read.status, value: read.json?.data?.value }).toEqual({ node: n.id, status: 200, value: 'the other cluster\'s own data' });
    }
    expect((await api(otherActive.apiAddr, 'GET', 'sys/health')).status).toBe(200);
  });

  test('is restored with force: the cluster seals, and unsealed with the snapshot\'s keys it serves the snapshot\'s data', async () => {
    const o = (other as TestCluster).cluster;
    const otherActive = await o.waitActive();
    const r = await api(otherActive.apiAddr, 'POST', 'sys/storage/raft/snapshot-force', { token: o.rootToken, raw: snapshot, timeoutMs: 30_000 });
    expect({ status: r.status, body: r.text }).toEqual({ status: 204, body: '' });

    await until('the restored node to seal', 10_000, async () => ((await api(otherActive.apiAddr, 'GET', 'sys/seal-status')).json.sealed === true ? true : undefined));
    // Every node's copy of the data is now sealed with other keys, so every node seals.
    followersSealed = await until('the followers to seal', 3_000, async () => {
      const states = await Promise.all(o.nodes.map(async (n) => (await api(n.apiAddr, 'GET', 'sys/seal-status')).json.sealed === true));
      return states.every(Boolean) ? states : undefined;
    }).catch(async () => Promise.all(o.nodes.map(async (n) => (await api(n.apiAddr, 'GET', 'sys/seal-status')).json.sealed === true)));
    // The cluster's keys are now the snapshot's; every node is unsealed with them.
    const otherRootToken = o.rootToken;
    o.keys = cluster().keys;
    o.rootToken = cluster().rootToken;
    for (const n of o.nodes) {
      const status = await api(n.apiAddr, 'GET', 'sys/seal-status');
      if (status.json.sealed) await o.unseal(n);
    }
    const active = await o.waitActive(15_000);
    for (const n of o.nodes) {
      for (const [key, value] of acknowledged) {
        const read = await api(n.apiAddr, 'GET', `kv/${key}`, { token: o.rootToken });
        expect({ node: n.id, key, value: read.status === 404 ? null : read.json?.data?.value }).toEqual({ node: n.id, key, value });
      }
      // The other cluster's own data is gone, and so is its old root token.
      expect((await api(n.apiAddr, 'GET', 'kv/own', { token: o.rootToken })).status).toBe(404);
      expect((await api(n.apiAddr, 'GET', 'kv/own', { token: otherRootToken })).status).toBe(403);
    }
    const state = await api(active.apiAddr, 'GET', 'sys/storage/raft/autopilot/state', { token: o.rootToken });
    expect(state.json.data.voters.length).toBe(3);
  });

  // Every node applies the restore and finds its root key no longer opens the keyring.
  test('seals every node, not only the leader, after a forced restore', () => {
    expect(followersSealed).toEqual([true, true, true]);
  });
});

test('remove-peer (through the CLI) takes a standby out: the configuration and autopilot show two voters, and writes go on', async () => {
  const c = cluster();
  await waitHealthy(3);
  const active = await c.waitActive();
  const victim = c.nodes.find((n) => n !== active) as NodeHandle;
  const removed = await runCli(['operator', 'raft', 'remove-peer', victim.id], { addr: active.apiAddr, token: token() });
  expect(removed).toMatchObject({ code: 0, out: 'Peer removed successfully!\n' });

  await until('two members', 10_000, async () => ((await peers(active.apiAddr)).length === 2 ? true : undefined));
  const servers = await peers(active.apiAddr);
  expect(servers.map((s) => s.node_id).sort()).toEqual(c.nodes.filter((n) => n !== victim).map((n) => n.id).sort());
  expect(servers.every((s) => s.voter)).toBe(true);
  await waitHealthy(2);
  const state = await autopilot(active.apiAddr);
  expect(state.failure_tolerance).toBe(0);
  expect(Object.keys(state.servers).sort()).toEqual(servers.map((s) => s.node_id).sort());

  // Removing it again, or a node that never was a member, is a bad request.
  const again = await api(active.apiAddr, 'POST', 'sys/storage/raft/remove-peer', { token: token(), body: { server_id: victim.id } });
  expect(again.status).toBe(400);

  // The removed node's process is stopped, as an operator would; the two left still commit.
  await c.kill(victim);
  const rest = c.nodes.filter((n) => n !== victim);
  for (const n of rest) await put(n.apiAddr, `after-remove-${n.id}`, 'two voters');
  await expectAcknowledged(rest);
});
