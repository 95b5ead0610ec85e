import { CompactedError, ConfChangeError, NotLeaderError, ProposalDroppedError, TransferError } from './errors';
import { decodeConfChange, encodeConfChange } from './conf-change';
import { RaftCore, type RaftInit } from './raft-core';
import type { Entry, Message, NodeId, RaftConfig, ReadState, Ready } from './types';

/*
 * Behaviour of one core, message by message. `Net` delivers synchronously and persists at once,
 * so every test is exact; the messy cases (loss, reordering, crashes) are the simulation's job.
 */

const utf8 = new TextEncoder();

function config(id: NodeId, over: Partial<RaftConfig> = {}): RaftConfig {
  return {
    id,
    electionTicks: 10,
    heartbeatTicks: 1,
    preVote: false,
    checkQuorum: false,
    maxEntriesPerMsg: 100,
    maxBytesPerMsg: 1 << 20,
    maxInflight: 256,
    random: () => 0,
    ...over,
  };
}

const cc = (type: 'addLearner' | 'promote' | 'remove', node: NodeId) => ({ type, node });
const ent = (index: number, term: number, type: Entry['type'] = 'normal'): Entry => ({ index, term, type, data: utf8.encode(`e${index}`) });

/** A synchronous network of cores; `drop` decides which messages are lost. */
class Net {
  readonly cores = new Map<NodeId, RaftCore>();
  readonly delivered: Message[] = [];
  /** Every read answered, per node. */
  readonly readStates = new Map<NodeId, ReadState[]>();
  drop: (m: Message) => boolean = () => false;

  static bootstrap(ids: NodeId[], over: Partial<RaftConfig> = {}, learners: NodeId[] = []): Net {
    const net = new Net();
    for (const id of [...ids, ...learners]) net.cores.set(id, new RaftCore(config(id, over), { bootstrap: { voters: ids, learners } }));
    net.stabilize();
    return net;
  }

  core(id: NodeId): RaftCore {
    return this.cores.get(id)!;
  }

  /**
   * Processes every Ready and delivers every message until quiet; returns what was delivered.
   * A leader's commit index not yet sent goes out once all else is quiet, as the runtime's
   * short wait (commitAnnounceMs) would have it.
   */
  stabilize(): Message[] {
    const start = this.delivered.length;
    for (let busy = true; busy; ) {
      busy = false;
      for (const core of this.cores.values()) {
        if (!core.hasReady()) continue;
        busy = true;
        this.step(core);
      }
      if (busy) continue;
      for (const core of this.cores.values()) {
        if (!core.commitAnnouncePending) continue;
        busy = true;
        core.announceCommit();
      }
    }
    return this.delivered.slice(start);
  }

  /** One Ready of `core`, as if persisted and applied, its messages delivered. */
  private step(core: RaftCore): void {
    const rd = core.ready();
    core.advance(rd);
    const id = core.status().id;
    this.readStates.set(id, [...(this.readStates.get(id) ?? []), ...rd.readStates]);
    for (const m of sent(rd)) {
      if (this.drop(m)) continue;
      this.delivered.push(m);
      this.cores.get(m.to)?.step(m);
    }
  }

  tick(n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const core of this.cores.values()) core.tick();
      this.stabilize();
    }
  }

  elect(id: NodeId): RaftCore {
    this.core(id).campaign();
    this.stabilize();
    expect(this.core(id).status().role).toBe('leader');
    return this.core(id);
  }
}

/** Takes a core's Ready and advances at once, as if persisted, sent and applied. */
function drain(core: RaftCore): Ready {
  const rd = core.ready();
  core.advance(rd);
  return rd;
}

/** Every message of a Ready, early or not. */
function sent(rd: Ready): Message[] {
  return [...rd.earlyMessages, ...rd.messages];
}

function restored(id: NodeId, init: RaftInit, over: Partial<RaftConfig> = {}): RaftCore {
  const core = new RaftCore(config(id, over), init);
  if (core.hasReady()) drain(core);
  return core;
}

describe('elections', () => {
  test('a follower campaigns once its randomized timeout in [electionTicks, 2*electionTicks) runs out', () => {
    for (const [r, timeout] of [
      [0, 10],
      [0.5, 15],
      [0.9999, 19],
    ] as const) {
      const core = new RaftCore(config('a', { random: () => r }), { bootstrap: { voters: ['a', 'b', 'c'], learners: [] } });
      for (let i = 1; i < timeout; i++) core.tick();
      expect(core.status().role).toBe('follower');
      core.tick();
      expect(core.status()).toMatchObject({ role: 'candidate', term: 1, vote: 'a' });
    }
  });

  test('a candidate with a majority leads and appends an empty entry of its term', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    expect(a.status()).toMatchObject({ term: 1, leader: 'a', lastIndex: 1, lastTerm: 1, commit: 1 });
    expect(net.core('b').status()).toMatchObject({ role: 'follower', leader: 'a', commit: 1 });
  });

  test('a sole voter leads on its first tick, and commits its entry once it has persisted it', () => {
    const core = new RaftCore(config('solo', { preVote: true, checkQuorum: true }), { bootstrap: { voters: ['solo'], learners: [] } });
    core.tick();
    expect(core.status().role).toBe('leader');
    const rd = drain(core);
    expect(rd.entries.map((e) => e.type)).toEqual(['empty']);
    expect(rd.committed).toEqual([]);
    expect(drain(core).committed.map((e) => e.type)).toEqual(['empty']);
  });

  test('a node grants one vote per term, and only to a log at least as up to date as its own', () => {
    const b = restored('b', { hardState: { term: 2, vote: null, commit: 0 }, snapshot: { index: 0, term: 0, conf: { voters: ['a', 'b', 'c'], learners: [] } }, entries: [ent(1, 1), ent(2, 2)] });
    const vote = (from: NodeId, term: number, index: number, logTerm: number): Message | undefined => {
      b.step({ type: 'vote', from, to: 'b', term, index, logTerm });
      return drain(b).messages.find((m) => m.type === 'voteResp');
    };
    expect(vote('a', 3, 1, 1)).toMatchObject({ reject: true, term: 3 }); // older last term
    expect(vote('a', 3, 5, 1)).toMatchObject({ reject: true }); // longer but older
    expect(vote('c', 3, 2, 2)).toMatchObject({ reject: false, term: 3 });
    expect(b.status().vote).toBe('c');
    expect(vote('a', 3, 9, 3)).toMatchObject({ reject: true }); // already voted in term 3
    expect(vote('c', 3, 2, 2)).toMatchObject({ reject: false }); // a repeated request is answered the same
  });

  test('pre-vote changes no term: a losing pre-candidate and its voters keep theirs', () => {
    const net = Net.bootstrap(['a', 'b', 'c'], { preVote: true });
    net.elect('a');
    net.drop = (m) => m.from === 'c' || m.to === 'c';
    net.tick(30); // c cannot reach anyone: it pre-campaigns over and over
    expect(net.core('c').status()).toMatchObject({ term: 1, role: 'preCandidate' });
    net.drop = () => false;
    net.tick(2);
    expect(net.core('a').status()).toMatchObject({ role: 'leader', term: 1 });
    expect(net.core('c').status()).toMatchObject({ role: 'follower', leader: 'a', term: 1 });
  });

  test('without pre-vote the same isolated node inflates its term and deposes the leader on return', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    net.elect('a');
    net.drop = (m) => m.from === 'c' || m.to === 'c';
    net.tick(30);
    expect(net.core('c').status().term).toBeGreaterThan(1);
    net.drop = () => false;
    net.tick(10); // c's next election, at a term above a's
    expect(net.core('a').status()).toMatchObject({ role: 'follower' });
    expect(net.core('a').status().term).toBeGreaterThan(1);
  });

  test('a candidate steps down on an append from a leader of its term, and anyone on a higher term', () => {
    const a = restored('a', { bootstrap: { voters: ['a', 'b', 'c'], learners: [] } });
    a.campaign();
    expect(a.status()).toMatchObject({ role: 'candidate', term: 1 });
    a.step({ type: 'append', from: 'b', to: 'a', term: 1, index: 0, logTerm: 0, entries: [], commit: 0 });
    expect(a.status()).toMatchObject({ role: 'follower', leader: 'b', term: 1 });
    a.step({ type: 'heartbeatResp', from: 'c', to: 'a', term: 7 });
    expect(a.status()).toMatchObject({ role: 'follower', leader: null, term: 7, vote: null });
  });

  test('with check-quorum a follower that hears from its leader ignores votes, unless sent for a transfer', () => {
    const net = Net.bootstrap(['a', 'b', 'c'], { checkQuorum: true });
    net.elect('a');
    const b = net.core('b');
    drain(b);
    b.step({ type: 'vote', from: 'c', to: 'b', term: 5, index: 99, logTerm: 99 });
    expect(b.status().term).toBe(1);
    expect(drain(b).messages).toEqual([]);
    b.step({ type: 'vote', from: 'c', to: 'b', term: 5, index: 99, logTerm: 99, transfer: true });
    expect(b.status()).toMatchObject({ term: 5, vote: 'c' });
  });

  test('a restarted node keeps its last leader\'s lease for one election timeout', () => {
    const init: RaftInit = { hardState: { term: 3, vote: 'a', commit: 0 }, snapshot: { index: 0, term: 0, conf: { voters: ['a', 'b', 'c'], learners: [] } } };
    const b = restored('b', init, { checkQuorum: true, random: () => 0.99 });
    b.step({ type: 'vote', from: 'c', to: 'b', term: 4, index: 0, logTerm: 0 });
    expect(b.status().term).toBe(3);
    for (let i = 0; i < 10; i++) b.tick();
    b.step({ type: 'vote', from: 'c', to: 'b', term: 4, index: 0, logTerm: 0 });
    expect(b.status()).toMatchObject({ term: 4, vote: 'c' });
  });

  test('learners and blank nodes never campaign', () => {
    const learner = restored('l', { bootstrap: { voters: ['a'], learners: ['l'] } });
    const blank = restored('x', {});
    for (let i = 0; i < 50; i++) {
      learner.tick();
      blank.tick();
    }
    expect([learner.status().role, blank.status().role]).toEqual(['follower', 'follower']);
    expect(learner.hasReady() || blank.hasReady()).toBe(false);
  });
});

describe('log replication', () => {
  test('proposals commit on a majority and reach followers in committed order', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    const { index } = a.propose(utf8.encode('x'));
    a.propose(utf8.encode('y'));
    const rd = a.ready();
    expect(rd.entries.map((e) => e.index)).toEqual([index, index + 1]);
    a.advance(rd);
    for (const m of sent(rd)) net.core(m.to).step(m);
    const b = net.core('b');
    const rdB = b.ready();
    b.advance(rdB);
    for (const m of rdB.messages) a.step(m);
    expect(a.status().commit).toBe(index + 1);
    net.stabilize();
    expect(b.status().commit).toBe(index + 1);
    expect(net.core('c').status()).toMatchObject({ lastIndex: index + 1, commit: index + 1 });
    expect(() => b.propose(utf8.encode('z'))).toThrow(NotLeaderError);
    expect(() => b.propose(utf8.encode('z'))).toThrow(expect.objectContaining({ leader: 'a' }));
  });

  test('a leader sends its appends before its own write, and counts itself toward commit only after it', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    const { index } = a.propose(utf8.encode('x'));
    const rd = a.ready();
    expect(rd.entries.map((e) => e.index)).toEqual([index]);
    expect(rd.earlyMessages.filter((m) => m.type === 'append').map((m) => m.to)).toEqual(['b', 'c']);
    expect(rd.messages).toEqual([]);
    // b persists and answers while a's own write is still under way: a alone plus b would be a
    // quorum, but a does not hold the entry durably yet.
    const b = net.core('b');
    b.step(rd.earlyMessages.find((m) => m.to === 'b')!);
    for (const m of drain(b).messages) a.step(m);
    expect(a.status().commit).toBe(index - 1);
    a.advance(rd);
    expect(a.status().commit).toBe(index);
    const next = drain(a);
    expect(next.hardState).toMatchObject({ commit: index });
    expect(next.committed.map((e) => e.index)).toEqual([index]);
  });

  test('a new commit index rides on the next append, or goes out alone only when the runtime announces it', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    const b = net.core('b');
    const c = net.core('c');
    const { index } = a.propose(utf8.encode('x'));
    const rd = drain(a);
    for (const m of sent(rd)) net.core(m.to).step(m);
    for (const m of drain(b).messages) a.step(m);
    expect(a.status().commit).toBe(index);
    // No append that would carry only the commit index: each costs a follower a Ready and an apply.
    const committed = drain(a);
    expect(committed.committed.map((e) => e.index)).toEqual([index]);
    expect(sent(committed).filter((m) => m.type === 'append')).toEqual([]);
    expect(a.commitAnnouncePending).toBe(true);
    // The next write's appends carry it.
    a.propose(utf8.encode('y'));
    const next = drain(a);
    expect(next.earlyMessages.filter((m) => m.type === 'append').map((m) => [m.to, m.commit, m.entries!.length])).toEqual([
      ['b', index, 1],
      ['c', index, 1],
    ]);
    // Announcing then finds every follower told already.
    a.announceCommit();
    expect(a.commitAnnouncePending).toBe(false);
    expect(a.hasReady()).toBe(false);
    for (const m of sent(next)) net.core(m.to).step(m);
    for (const m of drain(c).messages) a.step(m);
    drain(b);
    // With no write following, the announcement sends the commit index alone.
    drain(a);
    expect(a.commitAnnouncePending).toBe(true);
    a.announceCommit();
    const announced = drain(a);
    expect(announced.earlyMessages.filter((m) => m.type === 'append').map((m) => [m.to, m.commit, m.entries!.length])).toEqual([
      ['b', index + 1, 0],
      ['c', index + 1, 0],
    ]);
  });

  test('the commit of a membership change goes out at once', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    const b = net.core('b');
    const { index } = a.proposeConfChange(cc('remove', 'c'));
    const rd = drain(a);
    for (const m of sent(rd)) net.core(m.to).step(m);
    for (const m of drain(b).messages) a.step(m);
    const committed = drain(a);
    expect(committed.committed.map((e) => e.index)).toEqual([index]);
    // c hears of its own removal only through this append: the leader drops it once applied.
    expect(committed.earlyMessages.filter((m) => m.type === 'append').map((m) => [m.to, m.commit])).toEqual([
      ['b', index],
      ['c', index],
    ]);
  });

  test('a sole voter replicating to a learner never sends a commit index covering its unpersisted entries', () => {
    const net = Net.bootstrap(['solo'], {}, ['l']);
    const solo = net.core('solo');
    solo.tick();
    const elected = solo.ready();
    // Its term and vote are in this very write: nothing it sends may precede it.
    expect(elected.hardState).toMatchObject({ term: 1, vote: 'solo' });
    expect(elected.earlyMessages).toEqual([]);
    expect(elected.messages.map((m) => [m.type, m.to])).toEqual([['append', 'l']]);
    solo.advance(elected);
    for (const m of elected.messages) net.core(m.to).step(m);
    net.stabilize();
    expect(solo.status().commit).toBe(1);
    const { index } = solo.propose(utf8.encode('x'));
    const rd = solo.ready();
    expect(rd.earlyMessages).toEqual([expect.objectContaining({ type: 'append', to: 'l', commit: index - 1 })]);
    expect(rd.committed).toEqual([]);
    solo.advance(rd);
    expect(solo.status().commit).toBe(index);
  });

  test('appends respect maxEntriesPerMsg and maxBytesPerMsg', () => {
    const net = Net.bootstrap(['a', 'b'], { maxEntriesPerMsg: 3, maxBytesPerMsg: 10 });
    const a = net.elect('a');
    for (let i = 0; i < 7; i++) a.propose(utf8.encode('12345'));
    const appends = net.stabilize().filter((m) => m.type === 'append' && m.entries!.length > 0);
    for (const m of appends) {
      expect(m.entries!.length).toBeLessThanOrEqual(3);
      const bytes = m.entries!.reduce((n, e) => n + e.data.length, 0);
      expect(m.entries!.length === 1 || bytes <= 10).toBe(true);
    }
    expect(net.core('b').status().commit).toBe(8);
  });

  test('a replicating follower has at most maxInflight appends outstanding', () => {
    const net = Net.bootstrap(['a', 'b', 'c'], { maxEntriesPerMsg: 1, maxInflight: 2 });
    const a = net.elect('a');
    for (let i = 0; i < 6; i++) a.propose(utf8.encode(`p${i}`));
    const rd = drain(a);
    const toB = sent(rd).filter((m) => m.to === 'b' && m.type === 'append');
    expect(toB.map((m) => m.entries!.map((e) => e.index))).toEqual([[2], [3]]);
    expect(a.status().progress.b).toMatchObject({ state: 'replicate', next: 4 });
    for (const m of sent(rd)) net.core(m.to).step(m);
    net.stabilize();
    expect(net.core('b').status().lastIndex).toBe(7);
  });

  test('a probing follower gets one append until it answers', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    net.drop = (m) => m.to === 'c';
    const a = net.elect('a');
    expect(a.status().progress.c).toMatchObject({ state: 'probe' });
    a.propose(utf8.encode('p1'));
    a.propose(utf8.encode('p2'));
    // c never answered the probe sent at election: the proposals are not sent to it.
    const out = sent(drain(a));
    expect(out.filter((m) => m.to === 'c')).toEqual([]);
    expect(out.filter((m) => m.to === 'b' && m.type === 'append')).toHaveLength(1);
  });

  test('heartbeats carry min(commit, the follower\'s match)', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    net.drop = (m) => m.to === 'c' && m.type === 'append';
    a.propose(utf8.encode('p'));
    net.stabilize();
    a.tick();
    const hbs = sent(drain(a)).filter((m) => m.type === 'heartbeat');
    expect(hbs.find((m) => m.to === 'b')!.commit).toBe(2);
    expect(hbs.find((m) => m.to === 'c')!.commit).toBe(1);
  });

  test('a new leader never commits an entry of an earlier term by counting replicas (figure 8)', () => {
    const conf = { voters: ['a', 'b', 'c'], learners: [] };
    const a = restored('a', { hardState: { term: 2, vote: 'a', commit: 1 }, snapshot: { index: 0, term: 0, conf }, entries: [ent(1, 1), ent(2, 2)] });
    a.campaign();
    a.step({ type: 'voteResp', from: 'b', to: 'a', term: 3, reject: false });
    expect(a.status()).toMatchObject({ role: 'leader', term: 3, lastIndex: 3 });
    drain(a);
    // b holds index 2 (of term 2) as well: a majority, but of an earlier term.
    a.step({ type: 'appendResp', from: 'b', to: 'a', term: 3, index: 2 });
    expect(a.status().commit).toBe(1);
    a.step({ type: 'appendResp', from: 'b', to: 'a', term: 3, index: 3 });
    expect(a.status().commit).toBe(3);
  });

  test('a follower drops its conflicting uncommitted suffix and takes the leader\'s', () => {
    const conf = { voters: ['a', 'b'], learners: [] };
    const b = restored('b', { hardState: { term: 2, vote: null, commit: 1 }, snapshot: { index: 0, term: 0, conf }, entries: [ent(1, 1), ent(2, 2), ent(3, 2)] });
    b.step({ type: 'append', from: 'a', to: 'b', term: 3, index: 1, logTerm: 1, entries: [ent(2, 3)], commit: 1 });
    const rd = drain(b);
    expect(rd.entries).toEqual([ent(2, 3)]);
    expect(b.status()).toMatchObject({ lastIndex: 2, lastTerm: 3 });
    expect(rd.messages).toEqual([expect.objectContaining({ type: 'appendResp', index: 2 })]);
  });

  test('unsent acknowledgements of entries about to be overwritten are withdrawn', () => {
    const conf = { voters: ['a', 'b', 'c'], learners: [] };
    const b = restored('b', { hardState: { term: 2, vote: null, commit: 1 }, snapshot: { index: 0, term: 0, conf }, entries: [ent(1, 1)] });
    b.step({ type: 'append', from: 'a', to: 'b', term: 2, index: 1, logTerm: 1, entries: [ent(2, 2), ent(3, 2)], commit: 1 });
    // Before the Ready holding that ack goes out, a newer leader overwrites index 2.
    b.step({ type: 'append', from: 'c', to: 'b', term: 3, index: 1, logTerm: 1, entries: [ent(2, 3)], commit: 1 });
    const acks = drain(b).messages.filter((m) => m.type === 'appendResp');
    expect(acks.map((m) => [m.to, m.index])).toEqual([['c', 2]]);
  });

  test('conflict hints let the leader skip a whole term per round trip', () => {
    const conf = { voters: ['a', 'b'], learners: [] };
    const leaderLog = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6].map((t, i) => ent(i + 1, t));
    const followerLog = [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3].map((t, i) => ent(i + 1, t));
    const net = new Net();
    net.cores.set('a', restored('a', { hardState: { term: 6, vote: 'a', commit: 3 }, snapshot: { index: 0, term: 0, conf }, entries: leaderLog }));
    net.cores.set('b', restored('b', { hardState: { term: 6, vote: 'a', commit: 3 }, snapshot: { index: 0, term: 0, conf }, entries: followerLog }));
    net.core('a').campaign(); // term 7; b grants (a's log is more up to date)
    const delivered = net.stabilize();
    const rejects = delivered.filter((m) => m.type === 'appendResp' && m.reject);
    expect(rejects.length).toBeLessThanOrEqual(2);
    expect(net.core('b').status()).toMatchObject({ lastIndex: 11, lastTerm: 7, commit: 11 });
    for (let i = 4; i <= 11; i++) expect(net.core('b').logTerm(i)).toBe(net.core('a').logTerm(i));
  });
});

describe('reads', () => {
  test('a safe read is answered after a quorum acknowledges a heartbeat, at the commit index it arrived at', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    net.drop = (m) => m.type === 'heartbeatResp';
    a.readIndex('r1');
    net.stabilize();
    expect(drain(a).readStates).toEqual([]);
    net.drop = () => false;
    a.readIndex('r2');
    let answered: Ready['readStates'] = [];
    const rd = a.ready();
    a.advance(rd);
    for (const m of sent(rd)) net.core(m.to).step(m);
    for (const id of ['b', 'c']) {
      const f = net.core(id).ready();
      net.core(id).advance(f);
      for (const m of f.messages) a.step(m);
      answered = answered.concat(drain(a).readStates);
    }
    // One quorum answer to the later round confirms both reads.
    expect(answered).toEqual([
      { index: 1, context: 'r1' },
      { index: 1, context: 'r2' },
    ]);
  });

  test('reads wait until the leader commits an entry of its own term', () => {
    const net = Net.bootstrap(['a', 'b', 'c'], { checkQuorum: true });
    net.drop = (m) => m.type === 'appendResp';
    const a = net.elect('a');
    net.tick(1); // heartbeats answered: the lease holds, yet nothing of term 1 is committed
    expect(a.leaseValid()).toBe(true);
    expect(a.leaseReadIndex()).toBeNull();
    a.readIndex('early', 'lease');
    a.readIndex('early-safe');
    net.tick(1);
    expect(a.status().commit).toBe(0);
    expect(net.readStates.get('a')).toEqual([]);
    net.drop = () => false;
    net.tick(1);
    expect(a.status().commit).toBe(1);
    expect(net.readStates.get('a')).toEqual([
      { index: 1, context: 'early' },
      { index: 1, context: 'early-safe' },
    ]);
    expect(a.leaseReadIndex()).toBe(1);
  });

  test('followers refuse reads with a leader hint', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    net.elect('a');
    expect(() => net.core('b').readIndex('r')).toThrow(expect.objectContaining({ code: 'not_leader', leader: 'a' }));
  });

  test('a lease read is answered at once while the lease holds, and falls back to a heartbeat round when not', () => {
    const net = Net.bootstrap(['a', 'b', 'c'], { checkQuorum: true });
    const a = net.elect('a');
    expect(a.leaseValid()).toBe(false); // no heartbeat answered yet
    net.tick(1);
    expect(a.leaseValid()).toBe(true);
    a.readIndex('fast', 'lease');
    const rd = drain(a);
    expect(rd.readStates).toEqual([{ index: 1, context: 'fast' }]);
    expect(sent(rd)).toEqual([]);
    // Heartbeat answers stop (appends keep the leader in contact, so it stays leader): the lease runs out.
    net.drop = (m) => m.type === 'heartbeatResp';
    for (let i = 0; i < 10; i++) {
      a.propose(utf8.encode(`keepalive${i}`));
      net.tick(1);
    }
    expect(a.status().role).toBe('leader');
    expect(a.leaseValid()).toBe(false);
    a.readIndex('slow', 'lease');
    const slow = drain(a);
    expect(slow.readStates).toEqual([]);
    expect(sent(slow).filter((m) => m.type === 'heartbeat' && m.context === 'slow')).toHaveLength(2);
  });

  test('the lease runs from when the answered heartbeat was sent, not from when the answer arrived', () => {
    const net = Net.bootstrap(['a', 'b', 'c'], { checkQuorum: true });
    const a = net.elect('a');
    a.tick();
    const heartbeats = sent(drain(a)).filter((m) => m.type === 'heartbeat');
    for (let i = 0; i < 5; i++) a.tick(); // the heartbeats are slow to arrive
    drain(a);
    for (const hb of heartbeats) {
      const f = net.core(hb.to);
      f.step(hb);
      for (const m of drain(f).messages) a.step(m);
    }
    expect(a.leaseValid()).toBe(true);
    for (let i = 0; i < 2; i++) a.tick();
    expect(a.leaseValid()).toBe(true); // 7 ticks after sending
    a.tick();
    // 8 ticks after sending, though only 3 after the answers: the lease ends two ticks short
    // of the election timeout, for tick phase and rate differences between nodes.
    expect(a.leaseValid()).toBe(false);
    expect(a.status().role).toBe('leader');
  });

  test('without check-quorum there is no lease', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    net.tick(2);
    expect(a.leaseValid()).toBe(false);
  });
});

describe('check-quorum', () => {
  test('a leader that hears from no quorum for an election timeout steps down', () => {
    const net = Net.bootstrap(['a', 'b', 'c'], { checkQuorum: true });
    const a = net.elect('a');
    net.drop = (m) => m.to === 'a';
    net.tick(9);
    expect(a.status().role).toBe('leader');
    net.tick(1);
    expect(a.status()).toMatchObject({ role: 'follower', leader: null, term: 1 });
  });
});

describe('leadership transfer', () => {
  test('the leader catches the target up, then hands over with timeoutNow', () => {
    const net = Net.bootstrap(['a', 'b', 'c'], { preVote: true, checkQuorum: true });
    const a = net.elect('a');
    net.drop = (m) => m.to === 'c' && m.type === 'append';
    a.propose(utf8.encode('x'));
    net.stabilize();
    net.drop = () => false;
    a.transferLeadership('c');
    expect(a.status().transferee).toBe('c');
    expect(() => a.propose(utf8.encode('refused'))).toThrow(ProposalDroppedError);
    const delivered = net.stabilize();
    expect(delivered.some((m) => m.type === 'timeoutNow' && m.to === 'c')).toBe(true);
    expect(delivered.some((m) => m.type === 'vote' && m.transfer === true)).toBe(true);
    expect(net.core('c').status()).toMatchObject({ role: 'leader', term: 2 });
    expect(a.status()).toMatchObject({ role: 'follower', leader: 'c' });
  });

  test('a transfer that does not finish within an election timeout is abandoned', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    net.drop = (m) => m.to === 'c' || m.from === 'c';
    a.transferLeadership('c');
    net.tick(9);
    expect(a.status().transferee).toBe('c');
    net.tick(1);
    expect(a.status().transferee).toBeNull();
    expect(() => a.propose(utf8.encode('ok'))).not.toThrow();
  });

  test('only a voter can be the target, and only the leader transfers', () => {
    const net = Net.bootstrap(['a', 'b'], {}, ['l']);
    const a = net.elect('a');
    expect(() => a.transferLeadership('l')).toThrow(TransferError);
    expect(() => net.core('b').transferLeadership('a')).toThrow(NotLeaderError);
  });
});

describe('membership', () => {

  test('the leader refuses a change before it has committed an entry of its term', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    net.drop = (m) => m.type === 'appendResp';
    const a = net.elect('a');
    expect(() => a.proposeConfChange(cc('addLearner', 'd'))).toThrow(/not yet committed an entry of its term/);
  });

  test('one change at a time, and invalid changes are refused', () => {
    const net = Net.bootstrap(['a', 'b']);
    const a = net.elect('a');
    expect(() => a.proposeConfChange(cc('promote', 'b'))).toThrow(ConfChangeError);
    expect(() => a.proposeConfChange(cc('addLearner', 'b'))).toThrow(/already a member/);
    a.proposeConfChange(cc('addLearner', 'd'));
    expect(() => a.proposeConfChange(cc('addLearner', 'e'))).toThrow(/still pending/);
    net.stabilize();
    expect(a.status().conf).toEqual({ voters: ['a', 'b'], learners: ['d'] });
    expect(() => a.proposeConfChange(cc('addLearner', 'e'))).not.toThrow();
  });

  test('a learner receives the log but does not count toward commit until promoted', () => {
    const net = Net.bootstrap(['a', 'b']);
    const a = net.elect('a');
    net.cores.set('l', new RaftCore(config('l'), {}));
    a.proposeConfChange({ type: 'addLearner', node: 'l', context: utf8.encode('addr') });
    net.stabilize();
    net.tick(2);
    expect(net.core('l').status()).toMatchObject({ lastIndex: a.status().lastIndex, conf: { voters: ['a', 'b'], learners: ['l'] } });
    // With b gone, a and the learner are not a quorum of {a, b}.
    net.drop = (m) => m.to === 'b' || m.from === 'b';
    const p = a.propose(utf8.encode('x'));
    net.stabilize();
    expect(a.status().commit).toBeLessThan(p.index);
    net.drop = () => false;
    net.stabilize();
    net.tick(1);
    a.proposeConfChange(cc('promote', 'l'));
    net.stabilize();
    net.drop = (m) => m.to === 'b' || m.from === 'b';
    const q = a.propose(utf8.encode('y'));
    net.stabilize();
    expect(a.status().conf.voters).toEqual(['a', 'b', 'l']);
    expect(a.status().commit).toBe(q.index);
  });

  test('a peer counts as answered only once it has answered this leader: not when added, not after a new leader takes over', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    // A learner that never answers (unreachable) has a fresh contact count but no answer.
    net.drop = (m) => m.from === 'l' || m.to === 'l';
    a.proposeConfChange({ type: 'addLearner', node: 'l', context: utf8.encode('addr') });
    net.stabilize();
    net.tick(1);
    expect(a.status().progress['l']).toMatchObject({ answered: false });
    expect(a.status().progress['b']).toMatchObject({ answered: true });
    // c goes down, then a new leader takes over: c has not answered it, however few ticks passed.
    net.drop = (m) => m.from === 'c' || m.to === 'c' || m.from === 'l' || m.to === 'l';
    const b = net.elect('b');
    expect(b.status().progress['c']).toMatchObject({ answered: false, ticksSinceContact: 0 });
    expect(b.status().progress['a']).toMatchObject({ answered: true });
    net.drop = () => false;
    net.tick(1);
    expect(b.status().progress['c']).toMatchObject({ answered: true });
  });

  test('a leader that applies its own removal steps down and never campaigns again', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    a.proposeConfChange(cc('remove', 'a'));
    net.stabilize();
    expect(a.status()).toMatchObject({ role: 'follower', conf: { voters: ['b', 'c'] } });
    net.tick(40);
    expect(a.status().role).toBe('follower');
    // (b and c split their votes forever here: every core draws the same timeout in this test.)
    net.core('b').campaign();
    net.stabilize();
    expect(net.core('b').status()).toMatchObject({ role: 'leader', conf: { voters: ['b', 'c'] } });
  });

  test('conf entries take effect when applied, and are replayed from the log on restart', () => {
    const conf = { voters: ['a', 'b'], learners: [] };
    const add: Entry = { index: 2, term: 1, type: 'conf', data: encodeConfChange(cc('addLearner', 'c')) };
    const entries = [ent(1, 1, 'empty'), add];
    const applied = restored('a', { hardState: { term: 1, vote: 'a', commit: 2 }, snapshot: { index: 0, term: 0, conf }, entries, applied: 2 });
    expect(applied.status().conf.learners).toEqual(['c']);
    const notYet = new RaftCore(config('a'), { hardState: { term: 1, vote: 'a', commit: 2 }, snapshot: { index: 0, term: 0, conf }, entries, applied: 1 });
    expect(notYet.status().conf.learners).toEqual([]);
    const rd = notYet.ready();
    expect(rd.committed).toEqual([add]); // handed out again, after `applied`
    notYet.advance(rd);
    expect(notYet.status().conf.learners).toEqual(['c']);
    expect(decodeConfChange(add.data)).toEqual(cc('addLearner', 'c'));
  });
});

describe('compaction and snapshots', () => {
  test('a follower behind the leader\'s snapshot is sent one; the leader waits in snapshot state', () => {
    const net = Net.bootstrap(['a', 'b', 'c']);
    const a = net.elect('a');
    net.drop = (m) => m.to === 'c';
    for (let i = 0; i < 5; i++) a.propose(utf8.encode(`v${i}`));
    net.stabilize();
    const meta = a.compact(4);
    expect(meta).toEqual({ index: 4, term: 1, conf: { voters: ['a', 'b', 'c'], learners: [] } });
    expect(a.status().firstIndex).toBe(5);
    net.drop = (m) => m.to === 'c' && m.type === 'snapshot';
    net.tick(1);
    expect(a.status().progress.c).toMatchObject({ state: 'snapshot' });
    net.tick(3);
    expect(a.status().progress.c).toMatchObject({ state: 'snapshot' }); // nothing sent while waiting
    a.reportSnapshot('c', false);
    expect(a.status().progress.c).toMatchObject({ state: 'probe' });
    net.drop = () => false;
    net.tick(2);
    const c = net.core('c');
    expect(c.status()).toMatchObject({ firstIndex: 5, commit: 6, lastIndex: 6 });
  });

  test('compact refuses indexes below the snapshot or above applied', () => {
    const net = Net.bootstrap(['a']);
    const a = net.core('a');
    net.tick(1);
    a.propose(utf8.encode('x'));
    net.stabilize();
    a.compact(2);
    expect(() => a.compact(1)).toThrow(CompactedError);
    expect(() => a.compact(9)).toThrow(RangeError);
    expect(a.compact(2).index).toBe(2);
  });

  test('a snapshot the follower\'s log already matches only moves its commit; the log stays', () => {
    const conf = { voters: ['a', 'b'], learners: [] };
    const b = restored('b', { hardState: { term: 1, vote: null, commit: 1 }, snapshot: { index: 0, term: 0, conf }, entries: [ent(1, 1), ent(2, 1), ent(3, 1)] });
    b.step({ type: 'snapshot', from: 'a', to: 'b', term: 1, snapshot: { index: 2, term: 1, conf } });
    const rd = drain(b);
    expect(rd.snapshot).toBeUndefined();
    expect(b.status()).toMatchObject({ commit: 2, lastIndex: 3 });
    expect(rd.messages).toEqual([expect.objectContaining({ type: 'appendResp', index: 2 })]);
  });

  test('a snapshot at or below the follower\'s commit is ignored', () => {
    const conf = { voters: ['a', 'b'], learners: [] };
    const b = restored('b', { hardState: { term: 1, vote: null, commit: 3 }, snapshot: { index: 0, term: 0, conf }, entries: [ent(1, 1), ent(2, 1), ent(3, 1)] });
    b.step({ type: 'snapshot', from: 'a', to: 'b', term: 1, snapshot: { index: 2, term: 5, conf } });
    expect(drain(b).messages).toEqual([expect.objectContaining({ type: 'appendResp', index: 3 })]);
  });

  test('a blank node joining a cluster that never compacted gets the membership as an index-0 snapshot', () => {
    const net = Net.bootstrap(['a']);
    const a = net.core('a');
    net.tick(1);
    net.cores.set('j', new RaftCore(config('j'), {}));
    a.proposeConfChange(cc('addLearner', 'j'));
    net.stabilize();
    net.tick(2);
    const snap = net.delivered.find((m) => m.type === 'snapshot' && m.to === 'j');
    expect(snap?.snapshot).toEqual({ index: 0, term: 0, conf: { voters: ['a'], learners: [] } });
    expect(net.core('j').status()).toMatchObject({ lastIndex: a.status().lastIndex, conf: { voters: ['a'], learners: ['j'] } });
  });
});

describe('the Ready hand-off', () => {
  test('a bootstrap hands out its membership as an index-0 snapshot, and a restart restores it', () => {
    const core = new RaftCore(config('a'), { bootstrap: { voters: ['a', 'b'], learners: [] } });
    const rd = core.ready();
    expect(rd.snapshot).toEqual({ index: 0, term: 0, conf: { voters: ['a', 'b'], learners: [] } });
    core.advance(rd);
    expect(core.hasReady()).toBe(false);
    core.campaign();
    const hs = drain(core).hardState!;
    const again = new RaftCore(config('a'), { hardState: hs, snapshot: rd.snapshot! });
    expect(again.status()).toMatchObject({ term: 1, vote: 'a', conf: { voters: ['a', 'b'] } });
  });

  test('ready() twice without advance() is an error, and hasReady() is false meanwhile', () => {
    const core = new RaftCore(config('a'), { bootstrap: { voters: ['a'], learners: [] } });
    const rd = core.ready();
    core.tick();
    expect(core.hasReady()).toBe(false);
    expect(() => core.ready()).toThrow(/before advance/);
    expect(() => core.advance({ ...rd })).toThrow();
    core.advance(rd);
    expect(core.hasReady()).toBe(true);
  });

  test('step never throws on malformed or misaddressed input', () => {
    const core = restored('a', { bootstrap: { voters: ['a', 'b'], learners: [] } });
    const junk: unknown[] = [
      null,
      {},
      { type: 'nope', from: 'b', to: 'a', term: 1 },
      { type: 'append', from: 'b', to: 'a', term: -1 },
      { type: 'append', from: 'b', to: 'a', term: 1, index: 0, logTerm: 0, entries: [null] },
      { type: 'append', from: 'b', to: 'a', term: 1, index: 0, logTerm: 0, entries: [{ index: 5, term: 1, type: 'normal', data: new Uint8Array() }] },
      { type: 'snapshot', from: 'b', to: 'a', term: 1, snapshot: { index: 3 } },
      { type: 'heartbeat', from: 'b', to: 'z', term: 1 },
      { type: 'appendResp', from: 'b', to: 'a', term: 1, index: 'x' },
      { type: 'heartbeat', from: 'b', to: 'a', term: 1, commit: 'lots' },
      { type: 'append', from: 'b', to: 'a', term: 1, index: 0, logTerm: 0, entries: [], commit: Number.NaN },
    ];
    for (const m of junk) expect(() => core.step(m as Message)).not.toThrow();
    expect(core.status()).toMatchObject({ lastIndex: 0, commit: 0 });
  });
});
