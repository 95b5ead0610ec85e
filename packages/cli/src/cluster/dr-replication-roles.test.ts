import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';
import { DR, drStatus, expect400, inSync, operationToken, stepsInOrder, writeLoad, writeSecret } from './test-support/dr-support';
import type { NodeHandle } from '../cluster-launcher';

/**
 * DR replication's role changes and refusals between two real 1-node clusters: activation with a
 * secondary public key; used, expired and revoked activation tokens; bad input to each
 * endpoint; the secondary's node killed mid-stream and resumed from its applied mark;
 * revoke-secondary and a new token; the whole primary lost; primary disable/enable and
 * secondary disable.
 */

jest.setTimeout(300_000);

let primary: TestCluster;
let secondary: TestCluster;
let silent: Server | null = null;
const sockets = new Set<Socket>();

beforeAll(async () => {
  primary = await launchTestCluster('dr-roles-primary', { nodes: 1, basePort: 25100 });
  secondary = await launchTestCluster('dr-roles-secondary', { nodes: 1, basePort: 25120 });
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((r) => (silent ? silent.close(() => r()) : r()));
  await primary?.destroy();
  await secondary?.destroy();
});

const pNode = (): NodeHandle => primary.cluster.nodes[0] as NodeHandle;
const sNode = (): NodeHandle => secondary.cluster.nodes[0] as NodeHandle;
const pAddr = async () => pNode().apiAddr;
const serverLog = (node: NodeHandle): string => readFileSync(join(node.dir, 'server.log'), 'utf8');
const sAddr = async () => sNode().apiAddr;

/** A TCP port on loopback that accepts connections and never answers: a primary that hangs. */
async function silentPort(): Promise<number> {
  silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((r) => silent?.listen(0, '127.0.0.1', () => r()));
  return (silent.address() as AddressInfo).port;
}

async function issue(id: string, body: Record<string, unknown> = {}): Promise<{ status: number; json: any; text: string }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return api(pNode().apiAddr, 'POST', `${DR}/primary/secondary-token`, { token: primary.cluster.rootToken, body: { id, ...body } });
}

let opToken = '';
const step = stepsInOrder();

describe('DR replication roles', () => {
  step('activates a secondary with a token encrypted to its public key, refusing bad tokens first', async () => {
    const root = primary.cluster.rootToken;
    const p = pNode().apiAddr;
    const s = sNode().apiAddr;
    expect((await api(p, 'POST', 'sys/mounts/secret', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
    await writeSecret(p, root, 'canary', { value: 'before' });
    // The Merkle index serves replication only: it rests until a role is enabled.
    expect(serverLog(pNode())).not.toMatch(/merkle index follows/);

    expect((await api(p, 'POST', `${DR}/primary/enable`, { token: root, body: {} })).status).toBe(200);
    await until('the primary\'s Merkle index to follow the feed', 10_000, async () => (/merkle index follows/.test(serverLog(pNode())) ? true : undefined), 100);
    expect400(await issue(''), /"id"/);
    expect400(await api(p, 'POST', `${DR}/primary/secondary-token`, { token: root, body: {} }), /missing required field "id"/);

    const enable = (token: string) => api(s, 'POST', `${DR}/secondary/enable`, { token: secondary.cluster.rootToken, body: { token } });
    expect400(await enable('not-a-token'), /"token".*not an activation token/);
    expect400(await enable('a.b.c'), /token.*not an activation token/);

    // Expired before use.
    const short = await issue('short', { ttl: '1s' });
    expect(short.status).toBe(200);
    await new Promise((r) => setTimeout(r, 2_500));
    expect400(await enable(short.json.wrap_info.token), /"token".*expired/);

    // Revoked before use.
    const revoked = await issue('revoked');
    expect(revoked.status).toBe(200);
    expect((await api(p, 'POST', `${DR}/primary/revoke-secondary`, { token: root, body: { id: 'revoked' } })).status).toBe(204);
    expect400(await enable(revoked.json.wrap_info.token), /"token".*(revoked|refused)/);
    expect((await drStatus(s)).mode).toBe('disabled');

    // Data of the secondary's own, which enabling wipes while the copy from the primary begins.
    const sRoot = secondary.cluster.rootToken;
    expect((await api(s, 'POST', 'sys/mounts/secret', { token: sRoot, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
    expect(await writeLoad(sAddr, sRoot, 'own', 400)).toHaveLength(400);

    // The token encrypted to the secondary's public key.
    const generated = await api(s, 'POST', `${DR}/secondary/generate-public-key`, { token: secondary.cluster.rootToken, body: {} });
    expect(generated.status).toBe(200);
    const publicKey = generated.json.data.secondary_public_key as string;
    expect400(await issue('dr-east', { secondary_public_key: 'garbage' }), /"secondary_public_key"/);
    expect400(await issue('dr-east', { ttl: 'soon' }), /"ttl"/);
    expect400(await issue('dr-east', { ttl: '-5m' }), /"ttl"/);
    expect400(await issue('east/west'), /"id"/);
    const sealedToken = await issue('dr-east', { secondary_public_key: publicKey });
    expect(sealedToken.status).toBe(200);
    expect(sealedToken.json.wrap_info).toBeNull();
    const enabled = await enable(sealedToken.json.data.token);
    if (enabled.status !== 200) throw new Error(`secondary/enable answered ${enabled.status}: ${enabled.text}`);
    // From now on the secondary unseals with the primary's keys.
    secondary.cluster.keys = primary.cluster.keys;

    // Enabling again: a DR secondary serves no such path.
    expect400(await enable(sealedToken.json.data.token), /DR secondary/);
    await inSync(pAddr, sAddr, 'the secondary to catch up with the primary');
    const status = await drStatus(s);
    expect(status).toMatchObject({ mode: 'secondary', secondary_id: 'dr-east', connection_state: 'ready' });
    const pStatus = await drStatus(p);
    expect(pStatus.known_secondaries).toContain('dr-east');
    expect(pStatus.secondaries).toEqual([expect.objectContaining({ node_id: 'dr-east', connection_status: 'connected' })]);

    opToken = await operationToken(s, primary.cluster.keys);
    // The spent token, offered again through update-primary, is refused by the primary.
    expect400(await api(s, 'POST', `${DR}/secondary/update-primary`, { body: { dr_operation_token: opToken, token: sealedToken.json.data.token } }), /"token".*already used/);
  });

  step('refuses bad input to the secondary endpoints with a 400 naming the field', async () => {
    const s = sNode().apiAddr;
    expect400(await api(s, 'POST', `${DR}/secondary/promote`, { body: {} }), /missing required field "dr_operation_token"/);
    expect400(await api(s, 'POST', `${DR}/secondary/promote`, { body: { dr_operation_token: 'wrong' } }), /invalid value for "dr_operation_token"/);
    expect400(await api(s, 'POST', `${DR}/secondary/disable`, { body: { dr_operation_token: 'wrong' } }), /invalid value for "dr_operation_token"/);
    expect400(await api(s, 'POST', `${DR}/secondary/update-primary`, {
      body: { dr_operation_token: opToken, token: 'x.y.z', update_primary_addrs: ['127.0.0.1:1'] },
    }), /"token" and "update_primary_addrs"/);
    expect400(await api(s, 'POST', `${DR}/secondary/update-primary`, { body: { dr_operation_token: opToken, update_primary_addrs: ['not an address'] } }), /"update_primary_addrs"/);

    // An address that refuses, and one that accepts and never answers: each a 400 within the
    // client's bound, never a hang (the request's own timeout would fail the test).
    const hanging = await silentPort();
    for (const addr of ['127.0.0.1:1', `127.0.0.1:${hanging}`]) {
      const r = await api(s, 'POST', `${DR}/secondary/update-primary`, { body: { dr_operation_token: opToken, update_primary_addrs: [addr] }, timeoutMs: 45_000 });
      expect400(r, /invalid value for "update_primary_addrs"/);
    }
    // The primary's real cluster address is pinged and kept.
    const primaryCluster = `127.0.0.1:${pNode().clusterPort}`;
    const moved = await api(s, 'POST', `${DR}/secondary/update-primary`, { body: { dr_operation_token: opToken, update_primary_addrs: ['127.0.0.1:1', primaryCluster] } });
    expect(moved.status).toBe(200);
    expect((await drStatus(s)).known_primary_cluster_addrs[0]).toBe(primaryCluster);
    await inSync(pAddr, sAddr, 'the secondary to stream from the picked address');
  });

  step('resumes from the applied mark after the secondary\'s node is killed mid-stream', async () => {
    const root = primary.cluster.rootToken;
    const before = await drStatus(sNode().apiAddr);
    const loading = writeLoad(pAddr, root, 'mid-stream', 150);
    await until('a few writes to reach the secondary', 60_000, async () => {
      const s = await drStatus(sNode().apiAddr).catch(() => null);
      return s && s.last_remote_wal > before.last_remote_wal ? true : undefined;
    }, 20);
    await secondary.cluster.kill(sNode(), 'SIGKILL');
    // Writes the secondary misses while it is down.
    const whileDown = await writeLoad(pAddr, root, 'down', 50);
    secondary.cluster.start(sNode());
    const written = await loading;
    expect(written).toHaveLength(150);
    expect(whileDown).toHaveLength(50);
    await secondary.cluster.waitUp(sNode());
    // It starts sealed, and unseals with the primary's keys.
    expect((await api(sNode().apiAddr, 'GET', 'sys/seal-status')).json.sealed).toBe(true);
    await secondary.cluster.unseal(sNode());
    const { p, s } = await inSync(pAddr, sAddr, 'the restarted secondary to catch up');
    expect(s.merkle_root).toBe(p.merkle_root);
    // It streamed on from its mark (past everything it had applied before it died), with no Merkle sync.
    expect(s.merkle_sync_count).toBe(0);
    const sinceRestart = serverLog(sNode()).split('==> Strongroom server started').pop() ?? '';
    const starts = sinceRestart.split('\n').filter((l) => l.includes('streaming the primary')).map((l) => (JSON.parse(l) as { from_index: number }).from_index);
    expect(starts.length).toBeGreaterThan(0);
    expect(starts[0]).toBeGreaterThan(before.last_remote_wal);
    expect(sinceRestart).not.toMatch(/Merkle sync/);
  });

  step('revoke-secondary cuts the secondary off until it gets a new token', async () => {
    const root = primary.cluster.rootToken;
    const p = pNode().apiAddr;
    const s = sNode().apiAddr;
    expect400(await api(p, 'POST', `${DR}/primary/revoke-secondary`, { token: root, body: {} }), /missing required field "id"/);
    expect400(await api(p, 'POST', `${DR}/primary/revoke-secondary`, { token: root, body: { id: 'nobody' } }), /"id"/);
    expect((await api(p, 'POST', `${DR}/primary/revoke-secondary`, { token: root, body: { id: 'dr-east' } })).status).toBe(204);
    await until('the revoked secondary to show it is cut off', 15_000, async () => {
      const st = await drStatus(s);
      return st.state === 'idle' && st.connection_state === 'disconnected' ? true : undefined;
    }, 200);
    const pStatus = await drStatus(p);
    expect(pStatus.known_secondaries).not.toContain('dr-east');
    expect(pStatus.secondaries.filter((x: { connection_status: string }) => x.connection_status === 'connected')).toEqual([]);

    // Writes made meanwhile do not reach it; a new token brings it back.
    await writeSecret(p, root, 'after-revoke', { value: 'x' });
    const again = await issue('dr-east');
    expect(again.status).toBe(200);
    const updated = await api(s, 'POST', `${DR}/secondary/update-primary`, { body: { dr_operation_token: opToken, token: again.json.wrap_info.token } });
    if (updated.status !== 200) throw new Error(`update-primary answered ${updated.status}: ${updated.text}`);
    await inSync(pAddr, sAddr, 'the secondary to follow again with its new token');
  });

  step('shows the primary lost within seconds, and a status read does not wait on it', async () => {
    const s = sNode().apiAddr;
    await primary.cluster.kill(pNode(), 'SIGKILL');
    const lost = await until('the secondary to show its primary lost', 15_000, async () => {
      const st = await drStatus(s, 3_000);
      const entry = (st.primaries as Array<{ connection_status: string }>)[0];
      return st.state === 'idle' && entry?.connection_status === 'disconnected' ? st : undefined;
    }, 200);
    expect(lost.connection_state).toBe('disconnected');
    // Each read answers from what the node knows, well within a bound the primary's dial would exceed.
    for (let i = 0; i < 5; i++) await drStatus(s, 3_000);
    await primary.cluster.restart(pNode());
    await primary.cluster.waitActive(60_000);
    await inSync(pAddr, sAddr, 'the secondary to reconnect to the restarted primary');
  });

  step('primary disable and enable give a new cluster ID; secondary disable leaves a cluster of its own', async () => {
    const root = primary.cluster.rootToken;
    const p = pNode().apiAddr;
    const s = sNode().apiAddr;
    await writeSecret(p, root, 'last', { value: 'replicated' });
    await inSync(pAddr, sAddr, 'the last write to reach the secondary');
    const oldId = (await drStatus(p)).cluster_id as string;
    expect((await api(p, 'POST', `${DR}/primary/disable`, { token: root, body: {} })).status).toBe(200);
    expect((await drStatus(p)).mode).toBe('disabled');
    await until('the primary\'s Merkle index to rest', 10_000, async () => (/merkle index rests/.test(serverLog(pNode())) ? true : undefined), 100);
    expect((await api(p, 'POST', `${DR}/primary/enable`, { token: root, body: {} })).status).toBe(200);
    const newId = (await drStatus(p)).cluster_id as string;
    expect(newId).not.toBe(oldId);
    // The secondary cannot follow the re-enabled primary: another set, another CA.
    await until('the secondary to show it lost its primary', 30_000, async () => {
      const st = await drStatus(s);
      return st.state === 'idle' && st.connection_state === 'disconnected' ? true : undefined;
    }, 200);
    expect((await drStatus(p)).known_secondaries).toEqual([]);

    expect400(await api(s, 'POST', `${DR}/secondary/disable`, { body: {} }), /missing required field "dr_operation_token"/);
    // A deleted DR operation token is refused from then on.
    expect((await api(s, 'POST', `${DR}/secondary/operation-token/delete`, { body: { dr_operation_token: opToken } })).status).toBe(204);
    expect400(await api(s, 'POST', `${DR}/secondary/disable`, { body: { dr_operation_token: opToken } }), /invalid value for "dr_operation_token"/);
    opToken = await operationToken(s, primary.cluster.keys);
    const disabled = await api(s, 'POST', `${DR}/secondary/disable`, { body: { dr_operation_token: opToken } });
    if (disabled.status !== 200) throw new Error(`secondary/disable answered ${disabled.status}: ${disabled.text}`);
    await until('the former secondary to serve', 60_000, async () => ((await api(s, 'GET', 'sys/health')).status === 200 ? true : undefined), 200);
    expect((await drStatus(s)).mode).toBe('disabled');
    // It serves what it replicated, to the primary's root token.
    for (const [path, value] of [['canary', 'before'], ['last', 'replicated'], ['after-revoke', 'x']] as const) {
      const r = await api(s, 'GET', `secret/data/${path}`, { token: root });
      expect([path, r.status, r.json?.data?.data]).toEqual([path, 200, { value }]);
    }
    const loaded = await api(s, 'GET', 'secret/data/mid-stream/k149', { token: root });
    expect(loaded.status).toBe(200);
    // What it held before it became a secondary was wiped.
    expect((await api(s, 'GET', 'secret/data/own/k0', { token: root })).status).toBe(404);
    // And takes writes of its own.
    await writeSecret(s, root, 'own', { value: 'standalone' });
  });
});
