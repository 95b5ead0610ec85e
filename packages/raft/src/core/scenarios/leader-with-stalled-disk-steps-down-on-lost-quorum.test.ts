import { Cluster } from '../sim/test-support/cluster';

/*
 * The leader's disk hangs: its Readies are never processed, so nothing it decides is persisted
 * or sent, but its clock still ticks. The others stop hearing from it and elect a new leader.
 * The stalled leader must notice the lost quorum from ticks alone and step down; otherwise it
 * keeps believing it leads (and would, for instance, keep accepting proposals that can never commit).
 */
function stallLeader(checkQuorum: boolean): { cluster: Cluster; old: string } {
  const cluster = new Cluster({ ids: ['n1', 'n2', 'n3'], seed: 5, config: { preVote: true, checkQuorum } });
  const old = cluster.waitForLeader();
  cluster.node(old).stalled = true;
  return { cluster, old };
}

test('with check-quorum the stalled leader steps down, and the others elect a leader that commits', () => {
  const { cluster, old } = stallLeader(true);
  cluster.tickUntil(() => cluster.core(old).status().role === 'follower', cluster.config.electionTicks + 1, 'the stalled leader stepping down');
  expect(cluster.core(old).leaseValid()).toBe(false);
  expect(() => cluster.core(old).propose(new Uint8Array([1]))).toThrow(expect.objectContaining({ code: 'not_leader' }));
  const leader = cluster.waitForLeader(4 * cluster.config.electionTicks);
  expect(leader).not.toBe(old);
  const index = cluster.propose(leader, 'x')!;
  cluster.tick(3);
  expect(cluster.hasApplied(leader, index)).toBe(true);
});

test('without check-quorum only a message from a newer leader deposes it: while those are lost, it leads forever', () => {
  const { cluster, old } = stallLeader(false);
  const others = ['n1', 'n2', 'n3'].filter((id) => id !== old);
  for (const id of others) cluster.network.cutOneWay(id, old);
  cluster.tick(200);
  expect(cluster.core(old).status().role).toBe('leader');
  expect(() => cluster.core(old).propose(new Uint8Array([1]))).not.toThrow();
  expect(others.some((id) => cluster.core(id).status().role === 'leader')).toBe(true);
});

test('with check-quorum the same stalled, unreachable leader still steps down', () => {
  const { cluster, old } = stallLeader(true);
  for (const id of ['n1', 'n2', 'n3']) if (id !== old) cluster.network.cutOneWay(id, old);
  cluster.tick(cluster.config.electionTicks + 1);
  expect(cluster.core(old).status().role).toBe('follower');
});
