import type { Message } from '../types';
import { Cluster } from '../sim/test-support/cluster';

/*
 * A lease read is answered from the leader's commit index without asking anyone: it is only
 * linearizable if no other leader can have been elected meanwhile. The Cluster throws on any
 * read answered below an index applied before the read began, so each test below would fail
 * (with a stale read) if the protection it names were missing.
 */

test('a timeoutNow delivered after the transfer was abandoned does not let the old leader serve stale lease reads', () => {
  const ids = ['n1', 'n2', 'n3', 'n4', 'n5'];
  const cluster = new Cluster({ ids, seed: 41 });
  const old = cluster.waitForLeader();
  cluster.tick(3);
  const target = ids.find((id) => id !== old);
  // Hold the timeoutNow back: the transfer times out and the old leader carries on.
  let held: Message | null = null;
  cluster.network.dropIf = (m) => {
    if (m.type !== 'timeoutNow') return false;
    held = m;
    return true;
  };
  cluster.core(old).transferLeadership(target!);
  cluster.tick(cluster.config.electionTicks + 2);
  cluster.network.dropIf = null;
  expect(held).not.toBeNull();
  expect(cluster.core(old).status()).toMatchObject({ role: 'leader', transferee: null });
  // Now the late timeoutNow arrives, and nothing reaches the old leader any more: it still
  // holds a quorum's recent heartbeat answers.
  for (const id of ids) if (id !== old) cluster.network.cutOneWay(id, old);
  cluster.core(target!).step(held!);
  cluster.settle();
  expect(cluster.core(target!).status().role).toBe('leader');
  const write = cluster.propose(target!, 'new-leader-write')!;
  cluster.tick(1);
  expect(cluster.hasApplied(target!, write)).toBe(true);
  expect(cluster.core(old).status().role).toBe('leader');
  // It sent timeoutNow in its term, so it no longer trusts its lease: the read needs a
  // heartbeat round, which cannot succeed (a lease read would have been stale).
  expect(cluster.core(old).leaseValid()).toBe(false);
  const read = cluster.read(old, 'lease')!;
  cluster.tick(cluster.config.electionTicks);
  expect(cluster.readsServed.some((r) => r.context === read)).toBe(false);
});

test('a restarted follower does not vote inside the lease it granted before crashing', () => {
  const ids = ['n1', 'n2', 'n3'];
  const cluster = new Cluster({ ids, seed: 43 });
  const old = cluster.waitForLeader();
  cluster.tick(3);
  const [b, c] = ids.filter((id) => id !== old);
  // c loses the leader; the lease now rests on b alone (old + b are a quorum).
  cluster.network.cutBoth(old, c!);
  cluster.tick(cluster.config.electionTicks);
  expect(cluster.core(old).leaseValid()).toBe(true);
  // b crashes and restarts at once, having forgotten whom it heard from; its answers to old are lost.
  cluster.crash(b!);
  cluster.restart(b!);
  cluster.network.cutOneWay(b!, old);
  cluster.core(c!).campaign();
  cluster.settle();
  // b keeps the old leader's lease: c cannot win while that lease holds.
  expect(cluster.core(c!).status().role).not.toBe('leader');
  expect(cluster.core(old).leaseValid()).toBe(true);
  cluster.read(old, 'lease'); // answered at once, and (checked by the Cluster) not stale
  cluster.tick(1);
  expect(cluster.readsServed).toHaveLength(1);
});
