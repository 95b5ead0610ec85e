import { Cluster } from '../sim/test-support/cluster';

/*
 * The leader can still send but hears nothing back. Its heartbeats keep every follower loyal,
 * so no one else campaigns; without check-quorum the cluster stays up in name and commits
 * nothing, forever. With check-quorum the leader notices the silence and steps down, its
 * heartbeats stop, and the others elect a leader that can commit.
 */
function leaderDeafened(checkQuorum: boolean): { cluster: Cluster; old: string } {
  const cluster = new Cluster({ ids: ['n1', 'n2', 'n3'], seed: 3, config: { preVote: true, checkQuorum } });
  const old = cluster.waitForLeader();
  for (const id of ['n1', 'n2', 'n3']) if (id !== old) cluster.network.cutOneWay(id, old);
  return { cluster, old };
}

test('with check-quorum the deaf leader steps down within an election timeout and the others take over', () => {
  const { cluster, old } = leaderDeafened(true);
  cluster.tickUntil(() => cluster.core(old).status().role !== 'leader', cluster.config.electionTicks + 1, 'the old leader stepping down');
  const next = cluster.tickUntil(() => cluster.leader() !== null && cluster.leader() !== old, 4 * cluster.config.electionTicks, 'a new leader');
  expect(next).toBeGreaterThan(0);
  const leader = cluster.leader()!;
  const index = cluster.propose(leader, 'x')!;
  cluster.tick(3);
  expect(cluster.hasApplied(leader, index)).toBe(true);
  // The deaf node hears no one, so it keeps pre-campaigning, but that costs no terms and the
  // others (in their leader's lease) ignore it: the new leader stays.
  const term = cluster.core(leader).status().term;
  cluster.tick(100);
  expect(cluster.leader()).toBe(leader);
  expect(cluster.core(leader).status().term).toBe(term);
  expect(cluster.core(old).status().role).not.toBe('leader');
});

test('without check-quorum the deaf leader keeps leading and nothing commits', () => {
  const { cluster, old } = leaderDeafened(false);
  const index = cluster.propose(old, 'lost')!;
  cluster.tick(200);
  expect(cluster.leader()).toBe(old);
  expect(cluster.core(old).status().commit).toBeLessThan(index);
});
