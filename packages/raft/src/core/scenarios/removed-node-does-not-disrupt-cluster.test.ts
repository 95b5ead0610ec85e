import { Cluster } from '../sim/test-support/cluster';

/*
 * A node removed while it was partitioned never learns of its removal: it still believes it is
 * a voter and keeps campaigning. Pre-vote and the followers' lease must make the cluster ignore
 * it; without them every campaign bumps the term and deposes the leader.
 */
function removeWhilePartitioned(preVote: boolean, checkQuorum: boolean): { cluster: Cluster; leader: string; term: number; removed: string } {
  const ids = ['n1', 'n2', 'n3'];
  const cluster = new Cluster({ ids, seed: 13, config: { preVote, checkQuorum } });
  const leader = cluster.waitForLeader();
  cluster.tick(2);
  const removed = ids.find((id) => id !== leader)!;
  cluster.isolate(removed);
  const index = cluster.proposeConfChange(leader, { type: 'remove', node: removed });
  cluster.tick(2);
  expect(cluster.hasApplied(leader, index)).toBe(true);
  expect(cluster.core(removed).status().conf.voters).toContain(removed); // it does not know
  cluster.tick(50);
  cluster.network.heal();
  return { cluster, leader, term: cluster.core(leader).status().term, removed };
}

test('with pre-vote and check-quorum the removed node campaigns in vain', () => {
  const { cluster, leader, term, removed } = removeWhilePartitioned(true, true);
  cluster.tick(200);
  expect(cluster.leader()).toBe(leader);
  expect(cluster.core(leader).status().term).toBe(term);
  expect(cluster.core(removed).status().role).not.toBe('leader');
  // The cluster keeps committing.
  const index = cluster.propose(leader, 'still-working')!;
  cluster.tick(2);
  expect(cluster.hasApplied(leader, index)).toBe(true);
});

test('without pre-vote and check-quorum the removed node keeps deposing the leader', () => {
  const { cluster, term } = removeWhilePartitioned(false, false);
  cluster.tick(200);
  const leader = cluster.leader();
  const now = Math.max(...['n1', 'n2', 'n3'].map((id) => cluster.core(id).status().term));
  expect(now).toBeGreaterThan(term + 2);
  expect(leader === null || cluster.core(leader).status().term > term).toBe(true);
});

test('a node that applies its own removal stops campaigning altogether', () => {
  const ids = ['n1', 'n2', 'n3'];
  const cluster = new Cluster({ ids, seed: 17 });
  const leader = cluster.waitForLeader();
  cluster.tick(2);
  const removed = ids.find((id) => id !== leader)!;
  const index = cluster.proposeConfChange(leader, { type: 'remove', node: removed });
  cluster.tick(3);
  expect(cluster.hasApplied(removed, index)).toBe(true);
  const term = cluster.core(removed).status().term;
  cluster.isolate(removed); // no leader to hear from any more: it would time out, if it could campaign
  cluster.tick(100);
  expect(cluster.core(removed).status()).toMatchObject({ role: 'follower', term });
});
