import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';
import type { NodeHandle } from '../cluster-launcher';

/**
 * DR replication between real server processes: a 3-node primary and a 1-node DR secondary.
 * Writes under load reach the secondary (equal WAL index and Merkle root); the primary's active
 * node is killed mid-stream and the secondary catches up from the new one; then a planned
 * failover (demote, DR operation token from the key shares, promote, update-primary with a new
 * token) loses no acknowledged write, and the old root token and a policy token work on the new
 * primary.
 */

jest.setTimeout(300_000);

let primary: TestCluster;
let secondary: TestCluster;

beforeAll(async () => {
  primary = await launchTestCluster('dr-primary', { nodes: 3, basePort: 25000 });
  secondary = await launchTestCluster('dr-secondary', { nodes: 1, basePort: 25060 });
});

afterAll(async () => {
  await primary?.destroy();
  await secondary?.destroy();
});

async function activeOf(c: TestCluster): Promise<NodeHandle> {
  return c.cluster.waitActive(60_000);
}

async function drStatus(addr: string): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const r = await api(addr, 'GET', 'sys/replication/dr/status');
  expect(r.status).toBe(200);
  return r.json.data;
}

/** Waits until the secondary streams and holds everything the primary holds. */
async function inSync(primaryAddr: () => Promise<string>, secondaryAddr: string, what: string): Promise<void> {
  let seen: unknown[] = [];
  await until(what, 120_000, async () => {
    const p = await drStatus(await primaryAddr()).catch(() => null);
    const s = await drStatus(secondaryAddr).catch(() => null);
    seen = [p, s];
    if (!p || !s) return undefined;
    return s.state === 'stream-wals' && s.last_remote_wal === p.last_wal && s.merkle_root === p.merkle_root && p.merkle_root !== '' ? true : undefined;
  }, 200).catch((err: Error) => {
    throw new Error(`${err.message}; last statuses: ${JSON.stringify(seen)}`);
  });
}

async function write(addr: string, token: string, path: string, data: Record<string, unknown>): Promise<void> {
  const r = await api(addr, 'POST', `secret/data/${path}`, { token, body: { data } });
  if (r.status !== 200) throw new Error(`write ${path} answered ${r.status}: ${r.text}`);
}

/** A DR operation token made on `addr` from the key shares, decoded with the attempt's OTP. */
async function operationToken(addr: string, keys: string[]): Promise<string> {
  const base = 'sys/replication/dr/secondary/generate-operation-token';
  await api(addr, 'DELETE', `${base}/attempt`);
  const attempt = await api(addr, 'POST', `${base}/attempt`, { body: {} });
  expect(attempt.status).toBe(200);
  const { nonce, otp } = attempt.json.data ?? attempt.json;
  let last: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  for (const key of keys) {
    last = await api(addr, 'POST', `${base}/update`, { body: { key, nonce } });
    expect(last.status).toBe(200);
    if ((last.json.data ?? last.json).complete) break;
  }
  const encoded = Buffer.from((last.json.data ?? last.json).encoded_token, 'base64');
  const pad = Buffer.from(otp, 'utf8');
  return Buffer.from(encoded.map((b, i) => b ^ (pad[i] as number))).toString('utf8');
}

it('replicates a primary to a DR secondary, through a node loss and a planned failover', async () => {
  const p = primary.cluster;
  const s = secondary.cluster;
  let pActive = await activeOf(primary);
  const sNode = await activeOf(secondary);
  const root = p.rootToken;
  const primaryAddr = async () => (await activeOf(primary)).apiAddr;

  expect((await api(pActive.apiAddr, 'POST', 'sys/mounts/secret', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  await write(pActive.apiAddr, root, 'canary', { value: 'before' });
  await api(pActive.apiAddr, 'PUT', 'sys/policies/acl/reader', { token: root, body: { policy: 'path "secret/data/*" { capabilities = ["read"] }' } });
  const reader = (await api(pActive.apiAddr, 'POST', 'auth/token/create', { token: root, body: { policies: ['reader'] } })).json.auth.client_token as string;

  // Status before anything: disabled on both.
  expect((await drStatus(pActive.apiAddr)).mode).toBe('disabled');

  expect((await api(pActive.apiAddr, 'POST', 'sys/replication/dr/primary/enable', { token: root, body: {} })).status).toBe(200);
  const issued = await api(pActive.apiAddr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'dr-east' } });
  expect(issued.status).toBe(200);
  const activation = issued.json.wrap_info.token as string;
  expect(activation.split('.')).toHaveLength(3);

  const enabled = await api(sNode.apiAddr, 'POST', 'sys/replication/dr/secondary/enable', { token: s.rootToken, body: { token: activation } });
  if (enabled.status !== 200) throw new Error(`secondary/enable answered ${enabled.status}: ${enabled.text}`);
  // The token is spent.
  const again = await api(sNode.apiAddr, 'POST', 'sys/replication/dr/secondary/enable', { token: s.rootToken, body: { token: activation } });
  expect(again.status).toBe(400);

  await inSync(primaryAddr, sNode.apiAddr, 'the secondary to catch up with the primary');
  const sStatus = await drStatus(sNode.apiAddr);
  expect(sStatus).toMatchObject({ mode: 'secondary', secondary_id: 'dr-east', connection_state: 'ready' });
  expect(sStatus.cluster_id).toBe((await drStatus(pActive.apiAddr)).cluster_id);
  const pStatus = await drStatus(pActive.apiAddr);
  expect(pStatus).toMatchObject({ mode: 'primary', state: 'running', known_secondaries: ['dr-east'] });
  expect(pStatus.secondaries[0]).toMatchObject({ node_id: 'dr-east', connection_status: 'connected' });

  // A standby of the primary answers status too, from what its active node last recorded.
  const standby = p.nodes.find((n) => n !== pActive) as NodeHandle;
  await until('a primary standby to show the secondary connected', 30_000, async () => {
    const st = await drStatus(standby.apiAddr);
    return st.mode === 'primary' && st.secondaries[0]?.connection_status === 'connected' && st.merkle_root === pStatus.merkle_root ? true : undefined;
  }, 250);

  // A DR secondary serves only its own paths.
  expect((await api(sNode.apiAddr, 'GET', 'sys/health')).status).toBe(472);
  const refused = await api(sNode.apiAddr, 'GET', 'secret/data/canary', { token: root });
  expect(refused.status).toBe(400);
  expect(refused.text).toMatch(/DR secondary/);

  // Writes under load, then the primary's active node dies mid-stream.
  const acknowledged: string[] = [];
  const load = async (from: number, count: number) => {
    for (let i = from; i < from + count; i += 10) {
      const batch = Array.from({ length: 10 }, (_, j) => i + j);
      await Promise.all(batch.map(async (n) => {
        const addr = await primaryAddr();
        try {
          await write(addr, root, `load/k${n}`, { n });
          acknowledged.push(`k${n}`);
        } catch {
          // Not acknowledged (the node died under it): not counted.
        }
      }));
    }
  };
  await load(0, 100);
  const killed = pActive;
  await p.kill(killed, 'SIGKILL');
  await load(100, 60);
  await inSync(primaryAddr, sNode.apiAddr, 'the secondary to catch up from the new active node');
  await primary.cluster.restart(killed);
  pActive = await activeOf(primary);

  // Planned failover: demote the primary, promote the secondary with a DR operation token.
  expect((await api(pActive.apiAddr, 'POST', 'sys/replication/dr/primary/demote', { token: root, body: {} })).status).toBe(200);
  const badPromote = await api(sNode.apiAddr, 'POST', 'sys/replication/dr/secondary/promote', { body: { dr_operation_token: 'nope' } });
  expect(badPromote.status).toBe(400);
  const opToken = await operationToken(sNode.apiAddr, p.keys);
  const promoted = await api(sNode.apiAddr, 'POST', 'sys/replication/dr/secondary/promote', { body: { dr_operation_token: opToken } });
  expect(promoted.status).toBe(200);
  await until('the promoted secondary to serve', 60_000, async () => ((await api(sNode.apiAddr, 'GET', 'sys/health')).status === 200 ? true : undefined));

  // Nothing acknowledged was lost; the old tokens work.
  const canary = await api(sNode.apiAddr, 'GET', 'secret/data/canary', { token: reader });
  expect(canary.status).toBe(200);
  expect(canary.json.data.data).toEqual({ value: 'before' });
  for (const k of acknowledged) {
    const r = await api(sNode.apiAddr, 'GET', `secret/data/load/${k}`, { token: root });
    expect([k, r.status]).toEqual([k, 200]);
  }
  expect((await drStatus(sNode.apiAddr)).mode).toBe('primary');

  // The old primary follows the new one with a new token.
  await write(sNode.apiAddr, root, 'after-failover', { value: 'new primary' });
  const token2 = (await api(sNode.apiAddr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'dr-west' } })).json.wrap_info.token as string;
  const oldActive = await activeOf(primary).catch(() => pActive);
  const opToken2 = await operationToken(oldActive.apiAddr, p.keys);
  const both = await api(oldActive.apiAddr, 'POST', 'sys/replication/dr/secondary/update-primary', {
    body: { dr_operation_token: opToken2, token: token2, update_primary_addrs: ['127.0.0.1:1'] },
  });
  expect(both.status).toBe(400);
  const updated = await api(oldActive.apiAddr, 'POST', 'sys/replication/dr/secondary/update-primary', { body: { dr_operation_token: opToken2, token: token2 } });
  expect(updated.status).toBe(200);
  await inSync(async () => sNode.apiAddr, oldActive.apiAddr, 'the old primary to follow the new one');
});
