import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';
import { DR, drStatus, expect400, inSync, operationToken, stepsInOrder, writeLoad, writeSecret } from './test-support/dr-support';
import type { NodeHandle } from '../cluster-launcher';

/**
 * The reverse roles: a 3-node cluster as the DR secondary of a 1-node primary. Every node of the
 * secondary holds the data (its own Merkle index, from its own Raft log, has the primary's root);
 * DR operations sent to a follower reach the leader; the leader is killed mid-stream and the new
 * one resumes from the applied mark, so that after promotion every acknowledged write is there.
 */

jest.setTimeout(300_000);

let primary: TestCluster;
let secondary: TestCluster;

beforeAll(async () => {
  primary = await launchTestCluster('dr-reverse-primary', { nodes: 1, basePort: 25140 });
  secondary = await launchTestCluster('dr-reverse-secondary', { nodes: 3, basePort: 25160 });
});

afterAll(async () => {
  await primary?.destroy();
  await secondary?.destroy();
});

const pNode = (): NodeHandle => primary.cluster.nodes[0] as NodeHandle;
const pAddr = async () => pNode().apiAddr;
const running = (): NodeHandle[] => secondary.cluster.nodes.filter((n) => n.process !== null);

/**
 * The secondary's node that replicates: the Raft leader, the only one whose stream runs. The
 * primary names it (the address it pings from); its own status confirms it streams.
 */
async function secondaryLeader(timeoutMs = 60_000): Promise<NodeHandle> {
  return until('the secondary\'s leader to stream', timeoutMs, async () => {
    const p = await drStatus(pNode().apiAddr, 5_000);
    const addr = (p.secondaries as Array<{ api_address: string }> | undefined)?.[0]?.api_address;
    const n = running().find((x) => x.apiAddr === addr);
    if (!n) return undefined;
    const s = await drStatus(n.apiAddr, 5_000);
    return s.state === 'stream-wals' && s.connection_state === 'ready' ? n : undefined;
  }, 200);
}

const leaderAddr = async () => (await secondaryLeader()).apiAddr;

/** Every running node of the secondary answers status and its Merkle index has the primary's root. */
async function everyNodeHolds(what: string): Promise<void> {
  await until(what, 60_000, async () => {
    const root = (await drStatus(pNode().apiAddr)).merkle_root as string;
    for (const n of running()) {
      const s = await drStatus(n.apiAddr, 5_000);
      if (s.mode !== 'secondary' || s.merkle_root !== root) return undefined;
    }
    return true;
  }, 200);
}

const step = stepsInOrder();
const acknowledged: string[] = [];
let opToken = '';
/** The leader killed mid-stream: restarted, it unsealed with the primary's keys. */
let killedLeader: NodeHandle | null = null;

describe('DR replication, the reverse roles', () => {
  step('replicates to every node of a 3-node secondary', async () => {
    const root = primary.cluster.rootToken;
    const p = pNode().apiAddr;
    expect((await api(p, 'POST', 'sys/mounts/secret', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
    await writeSecret(p, root, 'canary', { value: 'before' });
    expect((await api(p, 'POST', `${DR}/primary/enable`, { token: root, body: {} })).status).toBe(200);
    const issued = await api(p, 'POST', `${DR}/primary/secondary-token`, { token: root, body: { id: 'dr-three' } });
    expect(issued.status).toBe(200);

    const sActive = await secondary.cluster.waitActive(60_000);
    const enabled = await api(sActive.apiAddr, 'POST', `${DR}/secondary/enable`, { token: secondary.cluster.rootToken, body: { token: issued.json.wrap_info.token } });
    if (enabled.status !== 200) throw new Error(`secondary/enable answered ${enabled.status}: ${enabled.text}`);
    secondary.cluster.keys = primary.cluster.keys;

    acknowledged.push(...await writeLoad(pAddr, root, 'first', 40));
    await inSync(pAddr, leaderAddr, 'the secondary to catch up');
    await everyNodeHolds('every secondary node to hold the primary\'s data');
    for (const n of running()) {
      const s = await drStatus(n.apiAddr);
      expect([n.id, s.mode, s.cluster_id]).toEqual([n.id, 'secondary', (await drStatus(p)).cluster_id]);
    }
  });

  step('forwards DR operations sent to a follower to the leader', async () => {
    const leader = await secondaryLeader();
    const follower = running().find((n) => n !== leader) as NodeHandle;
    const base = `${DR}/secondary/generate-operation-token`;
    await api(follower.apiAddr, 'DELETE', `${base}/attempt`);
    const attempt = await api(follower.apiAddr, 'POST', `${base}/attempt`, { body: {} });
    expect(attempt.status).toBe(200);
    const { nonce, otp } = attempt.json.data ?? attempt.json;
    // The progress read on any node shows the one attempt there is.
    for (const n of running()) {
      const progress = await api(n.apiAddr, 'GET', `${base}/attempt`);
      expect([n.id, progress.status, progress.json?.data?.nonce ?? progress.json?.nonce]).toEqual([n.id, 200, nonce]);
    }
    let last: any; // eslint-disable-line @typescript-eslint/no-explicit-any
    for (const key of primary.cluster.keys) {
      const r = await api(follower.apiAddr, 'POST', `${base}/update`, { body: { key, nonce } });
      expect(r.status).toBe(200);
      last = r.json.data ?? r.json;
      if (last.complete) break;
    }
    const encoded = Buffer.from(last.encoded_token as string, 'base64');
    const pad = Buffer.from(otp as string, 'utf8');
    opToken = Buffer.from(encoded.map((b, i) => b ^ (pad[i] as number))).toString('utf8');

    const check = await api(follower.apiAddr, 'POST', `${DR}/secondary/merkle-check`, { body: { dr_operation_token: opToken } });
    if (check.status !== 200) throw new Error(`merkle-check on a follower answered ${check.status}: ${check.text}`);
    expect(check.json.data.merkle_corruption_report.corrupted_root).toBe(false);
  });

  step('resumes from the applied mark when the secondary\'s leader is killed mid-stream', async () => {
    const root = primary.cluster.rootToken;
    const leader = await secondaryLeader();
    const before = await drStatus(leader.apiAddr);
    const loading = writeLoad(pAddr, root, 'mid-stream', 200);
    await until('a few writes to reach the secondary', 60_000, async () => {
      const s = await drStatus(leader.apiAddr).catch(() => null);
      return s && s.last_remote_wal > before.last_remote_wal ? true : undefined;
    }, 20);
    await secondary.cluster.kill(leader, 'SIGKILL');
    killedLeader = leader;
    acknowledged.push(...await writeLoad(pAddr, root, 'leaderless', 50));
    acknowledged.push(...await loading);
    const next = await secondaryLeader();
    expect(next).not.toBe(leader);
    const { s } = await inSync(pAddr, async () => next.apiAddr, 'the new leader to catch up');
    // It streamed on from the mark the old leader left in the cluster's Raft log: no Merkle sync.
    expect(s.merkle_sync_count).toBe(0);
    const log = readFileSync(join(next.dir, 'server.log'), 'utf8');
    const starts = log.split('\n').filter((l) => l.includes('streaming the primary')).map((l) => (JSON.parse(l) as { from_index: number }).from_index);
    expect(starts.length).toBeGreaterThan(0);
    expect(starts[0]).toBeGreaterThan(before.last_remote_wal);
    expect(log).not.toMatch(/Merkle sync/);

    // The killed node comes back sealed, unseals with the primary's keys and catches up too.
    await secondary.cluster.restart(leader);
    await everyNodeHolds('every secondary node, the restarted one too, to hold the primary\'s data');
  });

  step('loses no acknowledged write: after promotion every one is there', async () => {
    const root = primary.cluster.rootToken;
    acknowledged.push(...await writeLoad(pAddr, root, 'last', 20));
    await inSync(pAddr, leaderAddr, 'the last writes to reach the secondary');
    const leader = await secondaryLeader();
    const follower = running().find((n) => n !== leader) as NodeHandle;
    expect((await api(pNode().apiAddr, 'POST', `${DR}/primary/demote`, { token: root, body: {} })).status).toBe(200);

    // The token made before the leader changed is valid, but the root key its shares rebuilt
    // stayed in the old leader's memory: the refusal says what to do, and a new token does it.
    // (The restarted node, should it lead again, holds the primary's key from its unseal.)
    if (leader !== killedLeader) {
      expect400(await api(follower.apiAddr, 'POST', `${DR}/secondary/promote`, { body: { dr_operation_token: opToken } }), /root key.*generate the DR operation token/);
    }
    const fresh = await operationToken(follower.apiAddr, primary.cluster.keys);
    const promoted = await api(follower.apiAddr, 'POST', `${DR}/secondary/promote`, { body: { dr_operation_token: fresh } });
    if (promoted.status !== 200) throw new Error(`promote through a follower answered ${promoted.status}: ${promoted.text}`);
    const active = await secondary.cluster.waitActive(60_000);
    const canary = await api(active.apiAddr, 'GET', 'secret/data/canary', { token: root });
    expect(canary.json?.data?.data).toEqual({ value: 'before' });
    // The follower that took the promote handed it to the leader; like Vault's, a promotion
    // reaches the other nodes a moment after it is answered.
    await until('the follower to leave DR secondary mode', 60_000, async () => ((await drStatus(follower.apiAddr))?.mode === 'primary' ? true : undefined), 250);
    const missing: string[] = [];
    for (const k of acknowledged) {
      const r = await api(follower.apiAddr, 'GET', `secret/data/${k}`, { token: root });
      if (r.status !== 200) missing.push(`${k} (${r.status})`);
    }
    expect(missing).toEqual([]);
    expect(acknowledged.length).toBeGreaterThanOrEqual(300);
  });

  step('keeps an active node after promotion when the active node dies', async () => {
    // A node still unsealed with this cluster's old root key cannot serve the promoted data: if it
    // wins the election it seals itself and hands the lead to one unsealed with the primary's keys.
    const root = primary.cluster.rootToken;
    const active = await secondary.cluster.waitActive(60_000);
    await secondary.cluster.kill(active, 'SIGKILL');
    const next = await until('another node to serve as active', 90_000, async () => {
      for (const n of running()) {
        if (n === active) continue;
        const health = await api(n.apiAddr, 'GET', 'sys/health').catch(() => null);
        if (health?.status === 200) return n;
      }
      return undefined;
    }, 250);
    const canary = await api(next.apiAddr, 'GET', 'secret/data/canary', { token: root });
    expect(canary.json?.data?.data).toEqual({ value: 'before' });
  });
});
