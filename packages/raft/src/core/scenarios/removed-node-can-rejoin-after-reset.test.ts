import { Cluster } from '../sim/test-support/cluster';

/*
 * A node is removed, its disk wiped, and it comes back blank under the same id. It must be
 * able to rejoin: added as a learner, caught up through a snapshot (the log it needs is
 * compacted away), then promoted to a voter that counts toward the quorum.
 */
test('a wiped node rejoins as a learner, catches up via snapshot and becomes a voter', () => {
  const ids = ['n1', 'n2', 'n3'];
  const cluster = new Cluster({ ids, seed: 23 });
  const leader = cluster.waitForLeader();
  cluster.tick(2);
  const node = ids.find((id) => id !== leader)!;
  const third = ids.find((id) => id !== leader && id !== node)!;

  let index = cluster.proposeConfChange(leader, { type: 'remove', node });
  cluster.tick(3);
  expect(cluster.core(leader).status().conf.voters).not.toContain(node);
  cluster.wipe(node);
  expect(cluster.core(node).status()).toMatchObject({ term: 0, lastIndex: 0, conf: { voters: [], learners: [] } });

  for (let i = 0; i < 20; i++) cluster.propose(leader, `w${i}`);
  cluster.tick(2);
  const snap = cluster.compact(leader)!;
  cluster.compact(third);
  expect(snap.index).toBeGreaterThan(20);

  index = cluster.proposeConfChange(leader, { type: 'addLearner', node });
  cluster.tick(5);
  const rejoined = cluster.node(node);
  expect(rejoined.snapshotsInstalled).toBe(1);
  expect(rejoined.disk.snapshot?.index).toBeGreaterThanOrEqual(snap.index);
  expect(cluster.core(node).status()).toMatchObject({ conf: { learners: [node] }, commit: cluster.core(leader).status().commit });
  expect(cluster.hasApplied(node, index)).toBe(true);

  index = cluster.proposeConfChange(leader, { type: 'promote', node });
  cluster.tick(3);
  expect(cluster.core(leader).status().conf.voters).toContain(node);
  // It now counts: with the third node gone, leader + rejoined node still commit.
  cluster.isolate(third);
  const write = cluster.propose(leader, 'after-promotion')!;
  cluster.tick(2);
  expect(cluster.hasApplied(leader, write)).toBe(true);
  expect(cluster.hasApplied(node, write)).toBe(true);
});
