import { api, launchTestCluster, runCli, until, type TestCluster } from './test-support/cluster-fixture';
import { drStatus, inSync, operationToken, writeSecret } from './test-support/dr-support';

/**
 * `operator replication status` and `reindex` through the built command against a real DR pair
 * (a 1-node primary and a 1-node secondary): the primary's row for its secondary, the
 * secondary's view of its primary, and a reindex followed to its end with stderr piped.
 */

jest.setTimeout(240_000);

let primary: TestCluster;
let secondary: TestCluster;

beforeAll(async () => {
  primary = await launchTestCluster('cli-dr-primary', { nodes: 1, basePort: 26250 });
  secondary = await launchTestCluster('cli-dr-secondary', { nodes: 1, basePort: 26260 });
});

afterAll(async () => {
  await primary?.destroy();
  await secondary?.destroy();
});

it('shows a DR pair from both ends, and reindexes the secondary to its end', async () => {
  const p = primary.cluster.nodes[0]!;
  const s = secondary.cluster.nodes[0]!;
  const root = primary.cluster.rootToken;
  expect((await api(p.apiAddr, 'POST', 'sys/mounts/secret', { token: root, body: { type: 'kv', options: { version: '2' } } })).status).toBe(204);
  await writeSecret(p.apiAddr, root, 'canary', { v: 1 });
  expect((await api(p.apiAddr, 'POST', 'sys/replication/dr/primary/enable', { token: root, body: {} })).status).toBe(200);
  const activation = (await api(p.apiAddr, 'POST', 'sys/replication/dr/primary/secondary-token', { token: root, body: { id: 'dr-east' } })).json.wrap_info.token;
  const enabled = await api(s.apiAddr, 'POST', 'sys/replication/dr/secondary/enable', { token: secondary.cluster.rootToken, body: { token: activation } });
  if (enabled.status !== 200) throw new Error(`secondary/enable answered ${enabled.status}: ${enabled.text}`);
  await inSync(async () => p.apiAddr, async () => s.apiAddr, 'the secondary to hold the primary\'s data');

  const onPrimary = await runCli(['operator', 'replication', 'status'], { addr: p.apiAddr });
  expect(onPrimary).toMatchObject({ code: 0, err: '' });
  expect(onPrimary.out).toMatch(/^Mode\s+primary$/m);
  expect(onPrimary.out).toMatch(/^Secondary\s+Connection\s+Last Heartbeat\s+Lag \(WAL\)\s+Cluster Address$/m);
  expect(onPrimary.out).toMatch(/^dr-east\s+(connected|disconnected)\s+(\d+s ago|-)\s+\d+\s+\S+$/m);
  expect(onPrimary.out.split('== Performance ==')[1]).toMatch(/^Mode\s+disabled$/m);
  // The primary learns a secondary's WAL index from its heartbeats (every 2 s): the lag reaches 0 by the next one.
  await until('the primary to show the secondary with no lag', 30_000, async () => {
    const r = await runCli(['operator', 'replication', 'status'], { addr: p.apiAddr });
    return /^dr-east\s+connected\s+\d+s ago\s+0\s+127\.0\.0\.1:\d+$/m.test(r.out) ? true : undefined;
  }, 500);

  const onSecondary = await runCli(['operator', 'replication', 'status'], { addr: s.apiAddr });
  expect(onSecondary).toMatchObject({ code: 0, err: '' });
  expect(onSecondary.out).toMatch(/^Mode\s+secondary$/m);
  expect(onSecondary.out).toMatch(/^State\s+stream-wals$/m);
  expect(onSecondary.out).toMatch(/^Last Remote WAL\s+\d+$/m);
  expect(onSecondary.out).toMatch(new RegExp(`^127\\.0\\.0\\.1:${p.clusterPort}\\s+connected\\s+\\d+s ago\\s+-?\\d+ms$`, 'm'));

  const before = (await drStatus(s.apiAddr)).last_reindex_epoch;
  const opToken = await operationToken(s.apiAddr, primary.cluster.keys);
  const reindexed = await runCli(['operator', 'replication', 'reindex', opToken], { addr: s.apiAddr }, 120_000);
  expect(reindexed).toMatchObject({ code: 0, err: '' });
  expect(reindexed.out).toMatch(/^Success! The Merkle index was rebuilt from storage at \S+ \(Merkle root [0-9a-f]{12}\)\.\n$/);
  expect(reindexed.out).not.toContain(opToken);
  const after = await drStatus(s.apiAddr);
  expect(after.last_reindex_epoch).not.toBe(before);
  expect(after.reindex_in_progress).toBeUndefined();
  await inSync(async () => p.apiAddr, async () => s.apiAddr, 'equal roots after the reindex');
});
