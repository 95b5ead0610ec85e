import { PassThrough } from 'node:stream';
import { FakeClock } from '@strongroom/base';
import { NotLeaderError } from '../core/errors';
import { encodeTxn } from './command';
import { TestCluster, waitFor } from './test-support/cluster';

const put = (key: string, value: string) => encodeTxn([{ type: 'put', key, value: Buffer.from(value) }]);
const ids = ['n1', 'n2', 'n3'];

// Waits are bounded by waitFor (20 s each); a loaded CI machine needs more than Jest's default per test.
jest.setTimeout(60_000);

describe('a three-node cluster on the memory transport', () => {
  let cluster: TestCluster;
  afterEach(() => cluster.close());

  async function valueOn(id: string, key: string): Promise<string | undefined> {
    return (await cluster.node(id).get(key))?.toString();
  }

  it('replicates, survives the loss of its leader, and catches the old leader up when it returns', async () => {
    cluster = await TestCluster.start(ids);
    const first = await cluster.leader();
    await first.propose(put('before', '1'));
    await cluster.waitApplied(first.applied);
    for (const id of ids) expect(await valueOn(id, 'before')).toBe('1');

    await cluster.stop(first.id);
    const second = await cluster.leader();
    expect(second.id).not.toBe(first.id);
    await second.propose(put('after', '2'));
    await second.readBarrier();
    expect((await second.get('before'))?.toString()).toBe('1');

    const back = await cluster.open(first.id);
    await waitFor(async () => (await valueOn(back.id, 'after')) === '2', 'the old leader to catch up');
    expect(back.isLeader).toBe(false);
  });

  it('tells the followers of a commit that no later write carries within commitAnnounceMs, long before a heartbeat', async () => {
    const clock = new FakeClock();
    cluster = await TestCluster.create();
    const peers = Object.fromEntries(ids.map((id) => [id, id]));
    // Ticks a second apart on a clock that moves only when told: no heartbeat can carry the commit.
    for (const [i, id] of ids.entries()) {
      await cluster.open(id, { bootstrap: { voters: ids, learners: [] }, peers, clock, tickMs: 1000, commitAnnounceMs: 5, raft: { random: () => i / 3 } });
    }
    const agreed = () => {
      const leaders = [...cluster.nodes.values()].filter((n) => n.isLeader);
      return leaders.length === 1 && ids.every((id) => cluster.node(id).leader === leaders[0]!.id) ? leaders[0] : undefined;
    };
    // Each step lets the real disk writes and deliveries the ticks started finish before the next.
    for (let i = 0; i < 60 && !agreed(); i++) {
      await clock.advance(1000);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const leader = agreed()!;
    expect(leader).toBeDefined();
    // The leader's first entry committed; the followers hear of it at the next tick at the latest.
    await clock.advance(1000);
    const before = leader.applied;
    await leader.propose(put('k', 'v'));
    expect(leader.applied).toBeGreaterThan(before);
    // Past commitAnnounceMs a millisecond at a time, then real time for the followers' work:
    // 10 ms of the clock at most, far from the next tick; up to 5 s of real time.
    const index = leader.applied;
    for (let i = 0; i < 500 && !ids.every((id) => cluster.node(id).applied >= index); i++) {
      if (i < 10) await clock.advance(1);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (const id of ids) expect(cluster.node(id).applied).toBeGreaterThanOrEqual(index);
    for (const id of ids) expect(await valueOn(id, 'k')).toBe('v');
  });

  it('brings a follower that fell behind the compacted log up to date with a streamed snapshot', async () => {
    cluster = await TestCluster.start(ids, { snapshotThreshold: 20, snapshotIntervalMs: 0, snapshotTrailing: 5 });
    const leader = await cluster.leader();
    const lagging = ids.find((id) => id !== leader.id)!;
    cluster.network.isolate(lagging);
    for (let i = 0; i < 100; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => leader.propose(put(`k/${i + j}`, String(i + j)))));
    }
    await waitFor(() => leader.status().firstIndex > cluster.node(lagging).status().lastIndex + 1, 'the leader to compact past the lagging follower');
    cluster.network.heal();
    await cluster.waitApplied(leader.applied, [lagging]);
    const node = cluster.node(lagging);
    // Both counters move a moment after the state machine reports the snapshot's index: the
    // follower's once its install returns, the leader's once the receiver has answered.
    await waitFor(() => node.stats().snapshotsInstalled >= 1, 'the lagging follower to install a snapshot');
    await waitFor(() => leader.stats().snapshotsSent >= 1, 'the leader to count the snapshot sent');
    expect((await node.list('k/')).length).toBe(100);
    expect(await valueOn(lagging, 'k/99')).toBe('99');
    // It keeps following from the log afterwards.
    await leader.propose(put('later', 'x'));
    await waitFor(async () => (await valueOn(lagging, 'later')) === 'x', 'replication after the snapshot');
  });

  it('writes a new snapshot for a follower behind a log compacted at checkpoints past the newest file', async () => {
    cluster = await TestCluster.start(ids, { snapshotThreshold: 1_000_000, snapshotIntervalMs: 3_600_000, snapshotMaxLogBytes: 2048, snapshotTrailing: 5 });
    const leader = await cluster.leader();
    const lagging = ids.find((id) => id !== leader.id)!;
    // A file from before the checkpoints: too old to send, since the log no longer goes on from it.
    await leader.propose(put('early', '1'));
    const early = await leader.snapshot();
    cluster.network.isolate(lagging);
    for (let i = 0; i < 100; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => leader.propose(put(`k/${i + j}`, 'v'.repeat(100)))));
    }
    await waitFor(() => leader.status().firstIndex > cluster.node(lagging).status().lastIndex + 1, 'the leader to compact past the lagging follower');
    expect(leader.stats().checkpoints).toBeGreaterThan(0);
    expect(leader.status().firstIndex).toBeGreaterThan(early.index + 1);
    const taken = leader.stats().snapshotsTaken;
    cluster.network.heal();
    await cluster.waitApplied(leader.applied, [lagging]);
    await waitFor(() => cluster.node(lagging).stats().snapshotsInstalled >= 1, 'the lagging follower to install a snapshot');
    expect(leader.stats().snapshotsTaken).toBeGreaterThan(taken);
    expect((await cluster.node(lagging).list('k/')).length).toBe(100);
    await leader.propose(put('later', 'x'));
    await waitFor(async () => (await valueOn(lagging, 'later')) === 'x', 'replication after the snapshot');
  });

  it('adds a learner, promotes it, hands it leadership, and removes a member', async () => {
    cluster = await TestCluster.start(ids);
    const leader = await cluster.leader();
    await leader.propose(put('data', 'before joining'));
    // The joiner knows only the node it joins through; the rest it learns from the leader.
    const joiner = await cluster.open('n4', { peers: { [leader.id]: leader.id } });
    await leader.addLearner('n4', 'n4');
    await leader.propose(put('more', 'while it catches up'));
    await waitFor(async () => (await valueOn('n4', 'data')) === 'before joining', 'the learner to catch up');
    expect(leader.status().conf.learners).toEqual(['n4']);

    await leader.promote('n4');
    expect(leader.status().conf.voters).toContain('n4');
    await waitFor(() => joiner.status().conf.voters.includes('n4'), 'the joiner to see its promotion');
    expect(joiner.status().addresses).toMatchObject({ n1: 'n1', n2: 'n2', n3: 'n3', n4: 'n4' });
    for (const id of ['n1', 'n2', 'n3', 'n4', 'n5']) expect(joiner.addressOf(id)).toBe(joiner.status().addresses[id]);

    await leader.transferLeadership('n4');
    const now = await cluster.leader();
    expect(now.id).toBe('n4');
    // Followers know the new leader from its first append, which leaves before its own write: it
    // takes conf changes only once an entry of its term has committed.
    await now.propose(put('led', 'by n4'));

    const removedId = ids.find((id) => id !== leader.id)!;
    const removed = cluster.node(removedId);
    const stopped = new Promise<void>((resolve) => removed.onRemoved(resolve));
    await now.removeNode(removedId);
    await stopped;
    await expect(removed.propose(put('x', 'y'))).rejects.toMatchObject({ code: 'raft_node_removed' });
    expect(now.status().conf.voters.sort()).toEqual(['n1', 'n2', 'n3', 'n4'].filter((id) => id !== removedId).sort());
    await now.propose(put('after', 'removal'));
    await cluster.stop(removedId);
    await cluster.waitApplied(now.applied);
  });

  it('serves linearizable reads only from a leader that can prove it still leads', async () => {
    cluster = await TestCluster.start(ids);
    const leader = await cluster.leader();
    const follower = cluster.node(ids.find((id) => id !== leader.id)!);
    await leader.propose(put('k', 'v1'));
    await Promise.all([leader.readBarrier(), leader.readBarrier(), leader.readBarrier()]);
    expect(await valueOn(leader.id, 'k')).toBe('v1');
    await expect(follower.readBarrier()).rejects.toBeInstanceOf(NotLeaderError);
    // A leader whose lease holds lets its own reads through without waiting for anything.
    await waitFor(() => leader.leaderReadBarrier() === null, 'the leader to hold its lease');
    await expect(follower.leaderReadBarrier()).rejects.toBeInstanceOf(NotLeaderError);

    // Cut the leader off: the others elect a new one and write; the old one must not answer reads.
    cluster.network.isolate(leader.id);
    let next: typeof leader | undefined;
    await waitFor(() => {
      next = [...cluster.nodes.values()].find((n) => n.isLeader && n.id !== leader.id);
      return next !== undefined;
    }, 'a new leader');
    await next!.propose(put('k', 'v2'));
    await expect(leader.readBarrier()).rejects.toThrow();
    await expect(leader.leaderReadBarrier()).rejects.toThrow();
    cluster.network.heal();
    await waitFor(async () => (await valueOn(leader.id, 'k')) === 'v2', 'the old leader to learn the new value');
  });

  it('restores a snapshot on every node', async () => {
    cluster = await TestCluster.start(ids);
    const leader = await cluster.leader();
    await leader.propose(put('a', 'snapshotted'));
    const chunks: Buffer[] = [];
    const out = new PassThrough();
    out.on('data', (c: Buffer) => chunks.push(c));
    await leader.writeSnapshot(out);
    await leader.propose(put('a', 'changed'));
    await leader.propose(put('b', 'not in the snapshot'));
    await cluster.waitApplied(leader.applied);

    await leader.restoreSnapshot(PassThrough.from([Buffer.concat(chunks)]));
    await cluster.waitApplied(leader.applied);
    for (const id of ids) {
      expect(await valueOn(id, 'a')).toBe('snapshotted');
      expect(await valueOn(id, 'b')).toBeUndefined();
    }
    await expect(cluster.node(ids.find((id) => id !== leader.id)!).restoreSnapshot(PassThrough.from([Buffer.concat(chunks)]))).rejects.toBeInstanceOf(NotLeaderError);
  });
});
