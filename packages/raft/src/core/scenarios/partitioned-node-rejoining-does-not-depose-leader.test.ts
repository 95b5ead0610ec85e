import { Cluster } from '../sim/test-support/cluster';

/*
 * A node cut off from the cluster keeps timing out. Without pre-vote every timeout raises its
 * term, and when it returns that term forces the healthy leader to step down for nothing.
 * With pre-vote it never raises its term, since no one would vote for it.
 */
function isolateAndRejoin(preVote: boolean, checkQuorum: boolean): { before: { leader: string; term: number }; after: { leader: string | null; term: number } } {
  const cluster = new Cluster({ ids: ['n1', 'n2', 'n3'], seed: 7, config: { preVote, checkQuorum } });
  const leader = cluster.waitForLeader();
  const term = cluster.core(leader).status().term;
  const outsider = ['n1', 'n2', 'n3'].find((id) => id !== leader)!;
  cluster.isolate(outsider);
  cluster.tick(100);
  cluster.network.heal();
  cluster.tick(30);
  const now = cluster.leader();
  return { before: { leader, term }, after: { leader: now, term: now === null ? 0 : cluster.core(now).status().term } };
}

test('with pre-vote the rejoining node finds the same leader in the same term', () => {
  const { before, after } = isolateAndRejoin(true, true);
  expect(after).toEqual(before);
});

test('with pre-vote alone (no check-quorum) the leader also survives', () => {
  const { before, after } = isolateAndRejoin(true, false);
  expect(after).toEqual(before);
});

test('without pre-vote or check-quorum the rejoining node forces a new term', () => {
  const { before, after } = isolateAndRejoin(false, false);
  expect(after.term).toBeGreaterThan(before.term);
});
