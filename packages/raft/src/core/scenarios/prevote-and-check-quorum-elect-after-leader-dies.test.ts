import { Cluster } from '../sim/test-support/cluster';

/*
 * Pre-vote and the followers' lease both make nodes refuse votes while a leader seems alive.
 * When the leader really dies, the lease must run out and a pre-vote must succeed, or the
 * cluster would stay leaderless.
 */
test.each([3, 5])('%i voters elect a new leader and commit after the leader crashes', (size) => {
  const ids = Array.from({ length: size }, (_, i) => `n${i + 1}`);
  const cluster = new Cluster({ ids, seed: 11, config: { preVote: true, checkQuorum: true } });
  const old = cluster.waitForLeader();
  const oldTerm = cluster.core(old).status().term;
  const index = cluster.propose(old, 'before')!;
  cluster.tick(2);
  expect(cluster.hasApplied(old, index)).toBe(true);

  cluster.crash(old);
  const electionTicks = cluster.config.electionTicks;
  // At most: the followers' lease (electionTicks), one randomized timeout (< 2*electionTicks), a round trip.
  const waited = cluster.tickUntil(() => cluster.leader() !== null, 3 * electionTicks, 'a new leader');
  expect(waited).toBeGreaterThanOrEqual(electionTicks); // the lease was honoured first
  const next = cluster.leader()!;
  expect(next).not.toBe(old);
  expect(cluster.core(next).status().term).toBe(oldTerm + 1); // pre-votes cost no terms
  const after = cluster.propose(next, 'after')!;
  cluster.tickUntil(() => cluster.hasApplied(next, after), 5, 'the proposal applied');
  expect(cluster.appliedValue(after)).toBe('normal:after');

  // The old leader comes back as a follower of the new one.
  cluster.restart(old);
  cluster.tick(electionTicks);
  expect(cluster.core(old).status()).toMatchObject({ role: 'follower', leader: next });
});
