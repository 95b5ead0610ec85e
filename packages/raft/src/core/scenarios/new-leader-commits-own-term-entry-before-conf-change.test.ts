import { ConfChangeError } from '../errors';
import { Cluster } from '../sim/test-support/cluster';

/*
 * Single-server membership changes are only safe if a new leader first commits an entry of its
 * own term (the bug Ongaro reported in 2015): otherwise a change appended by an earlier
 * leader, uncommitted, can be overwritten after a quorum of a different membership acted on it.
 */
test('a new leader refuses a membership change until its own empty entry commits', () => {
  const cluster = new Cluster({ ids: ['n1', 'n2', 'n3', 'n4'], voters: ['n1', 'n2', 'n3'], learners: ['n4'], seed: 9 });
  const first = cluster.waitForLeader();
  cluster.tick(2);
  cluster.crash(first);
  // Votes get through, acknowledgements of appends do not: the next leader cannot commit yet.
  cluster.network.dropIf = (m) => m.type === 'appendResp';
  const leader = cluster.waitForLeader(60);
  const status = cluster.core(leader).status();
  expect(cluster.core(leader).logTerm(status.lastIndex)).toBe(status.term); // its empty entry, appended
  expect(cluster.core(leader).logTerm(status.commit)).not.toBe(status.term); // ...but not committed
  expect(() => cluster.proposeConfChange(leader, { type: 'promote', node: 'n4' })).toThrow(ConfChangeError);
  expect(() => cluster.proposeConfChange(leader, { type: 'promote', node: 'n4' })).toThrow(/not yet committed an entry of its term/);

  cluster.network.dropIf = null;
  cluster.tick(2);
  expect(cluster.core(leader).logTerm(cluster.core(leader).status().commit)).toBe(status.term);
  const index = cluster.proposeConfChange(leader, { type: 'promote', node: 'n4' });
  cluster.tick(2);
  expect(cluster.hasApplied(leader, index)).toBe(true);
  expect(cluster.core(leader).status().conf.voters).toContain('n4');
});
