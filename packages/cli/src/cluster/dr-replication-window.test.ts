import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { api, launchTestCluster, until, type TestCluster } from './test-support/cluster-fixture';

/**
 * DR replication past a small WAL window, and the Merkle index on disk: a primary keeping only
 * 20 WAL entries (`replication { logshipper_buffer_length = 20 }`), a secondary cut off (its
 * process stopped) while 120 writes go by: it must leave stream-wals for merkle-diff and
 * merkle-sync, count it, and converge to equal roots. Then a flipped byte in one of the
 * secondary's stored Merkle pages is found by merkle-check and repaired by reindex.
 */

jest.setTimeout(240_000);

let primary: TestCluster;
let secondary: TestCluster;

beforeAll(async () => {
  primary = await launchTestCluster('dr-window-primary', { nodes: 1, basePort: 25200, extraConfig: 'replication {\n  logshipper_buffer_length = 20\n}\n' });
  secondary = await launchTestCluster('dr-window-secondary', { nodes: 1, basePort: 25250 });
});

afterAll(async () => {
  await primary?.destroy();
  await secondary?.destroy();
});

async function drStatus(addr: string): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const r = await api(addr, 'GET', 'sys/replication/dr/status');
  if (r.status !== 200) throw new Error(`status answered ${r.status}`);
  return r.json.data;
}

async function inSync(p: string, s: string, what: string): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any
  let seen: unknown[] = [];
  return until(what, 120_000, async () => {
    const [ps, ss] = await Promise.all([drStatus(p).catch(() => null), drStatus(s).catch(() => null)]);
    seen = [ps, ss];
    if (!ps || !ss) return undefined;
    return ss.state === 'stream-wals' && ss.last_remote_wal === ps.last_wal && ss.merkle_root === ps.merkle_root ? ss : undefined;
  }, 200).catch((err: Error) => {
    throw new Error(`${err.message}; last statuses: ${JSON.stringify(seen)}`);
  });
}

async function operationToken(addr: string, keys: string[]): Promise<string> {
  const base = 'sys/replication/dr/secondary/generate-operation-token';
  const attempt = await api(addr, 'POST', `${base}/attempt`, { body: {} });
  if (attempt.status !== 200) throw new Error(`attempt answered ${attempt.status}: ${attempt.text}`);
  const { nonce, otp } = attempt.json;
  let last = attempt;
  for (const key of keys) {
    last = await api(addr, 'POST', `${base}/update`, { body: { key, nonce } });
    if (last.json.complete) break;
  }
  const encoded = Buffer.from(last.json.encoded_token, 'base64');
  const pad = Buffer.from(otp, 'utf8');
  return Buffer.from(encoded.map((b, i) => b ^ (pad[i] as number))).toString('utf8');
}

it('falls back to a Merkle sync past the window, and repairs a damaged Merkle page by reindex', async () => {
  const p = primary.cluster.nodes[0]!;
  const sNode = secondary.cluster.nodes[0]!;
  const root = primary.cluster.rootToken;
  expect((await api(p.apiAddr, 'POST', 'sys/mounts/secret', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  await api(p.apiAddr, 'POST', 'sys/replication/dr/primary/enable', { token: root, body: {} });
  const token = (await api(p.apiAddr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'window' } })).json.wrap_info.token;
  const enabled = await api(sNode.apiAddr, 'POST', 'sys/replication/dr/secondary/enable', { token: secondary.cluster.rootToken, body: { token } });
  expect(enabled.status).toBe(200);
  const first = await inSync(p.apiAddr, sNode.apiAddr, 'the first sync');
  expect(first.merkle_sync_count).toBe(0);

  // Cut off: the secondary's process stops answering while the primary writes past its window.
  process.kill(sNode.process!.pid!, 'SIGSTOP');
  try {
    // Long enough for the primary to give the link up (no heartbeat answered), so that what is
    // written next is not already on its way in the stream's buffers.
    await until('the primary to see the secondary gone', 60_000, async () => {
      const ps = await drStatus(p.apiAddr);
      return ps.secondaries[0]?.connection_status === 'disconnected' ? true : undefined;
    }, 500);
    for (let i = 0; i < 120; i += 10) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, j) => api(p.apiAddr, 'POST', `secret/data/w/${i + j}`, { token: root, body: { data: { i: i + j } } })));
      for (const a of answers) expect(a.status).toBe(200);
    }
  } finally {
    process.kill(sNode.process!.pid!, 'SIGCONT');
  }
  const after = await inSync(p.apiAddr, sNode.apiAddr, 'the secondary to converge by Merkle sync');
  expect(after.merkle_sync_count).toBeGreaterThanOrEqual(1);

  // A flipped byte in a stored page of the secondary's Merkle index, while it is stopped.
  await secondary.cluster.kill(sNode, 'SIGTERM');
  const db = new ClassicLevel<string, Buffer>(join(sNode.dir, 'data', 'merkle'), { keyEncoding: 'utf8', valueEncoding: 'buffer', compression: false });
  await db.open();
  let damaged = '';
  for await (const [key, value] of db.iterator({ gte: 'p0', lt: 'p1' })) {
    if (value.some((b) => b !== 0)) {
      const copy = Buffer.from(value);
      const at = copy.findIndex((b) => b !== 0);
      copy[at] = (copy[at] as number) ^ 0xff;
      await db.put(key, copy);
      damaged = key;
      break;
    }
  }
  await db.close();
  expect(damaged).not.toBe('');
  secondary.cluster.start(sNode);
  await secondary.cluster.waitUp(sNode);
  // A DR secondary unseals with its primary's keys.
  for (const key of primary.cluster.keys) await api(sNode.apiAddr, 'POST', 'sys/unseal', { body: { key } });

  const opToken = await operationToken(sNode.apiAddr, primary.cluster.keys);
  const check = await api(sNode.apiAddr, 'POST', 'sys/replication/dr/secondary/merkle-check', { body: { dr_operation_token: opToken } });
  expect(check.status).toBe(200);
  const report = check.json.data.merkle_corruption_report;
  expect(report.corrupted_root).toBe(true);
  expect(report.corrupted_tree_map['1'].corrupted_subtree_root).toBe(true);
  expect(Object.keys(report.corrupted_tree_map['1'].corrupted_index_tuples_map)).toContain(String(Number.parseInt(damaged.slice(2), 16)));

  const reindex = await api(sNode.apiAddr, 'POST', 'sys/replication/dr/secondary/reindex', { body: { dr_operation_token: opToken } });
  expect(reindex.status).toBe(200);
  await until('the reindex to repair the tree', 60_000, async () => {
    const r = await api(sNode.apiAddr, 'POST', 'sys/replication/dr/secondary/merkle-check', { body: { dr_operation_token: opToken } });
    return r.status === 200 && r.json.data.merkle_corruption_report.corrupted_root === false ? true : undefined;
  }, 500);
  await inSync(p.apiAddr, sNode.apiAddr, 'equal roots after the reindex');
});
