import { applyConfChange, cloneConfState, confChangeProblem, decodeConfChange, encodeConfChange } from './conf-change';
import { CompactedError, ConfChangeError, NotLeaderError, ProposalDroppedError, TransferError } from './errors';
import { RaftLog } from './log';
import { PeerProgress } from './progress';
import { hasQuorum, majorityIndex, quorumValue, voteResult } from './quorum';
import { ReadOnlyQueue } from './read-only';
import type {
  ConfChange,
  ConfState,
  Entry,
  EntryType,
  HardState,
  Message,
  NodeId,
  Progress,
  RaftConfig,
  ReadState,
  Ready,
  Role,
  SnapshotMeta,
  SoftState,
  Status,
} from './types';


/** What a restarted node hands back to the core; see the constructor. */
export interface RaftInit {
  hardState?: HardState;
  snapshot?: SnapshotMeta;
  /** Entries after `snapshot.index` (after 0 without one), as persisted. */
  entries?: Entry[];
  /** The state machine's applied index (>= snapshot.index); committed entries after it are handed out again. */
  applied?: number;
  /** Only for a brand-new node with no persisted state. */
  bootstrap?: ConfState;
}

type ReadMode = 'safe' | 'lease';
/** A message before the core stamps its own id as the sender. */
type Outgoing = Omit<Message, 'from'>;

const EMPTY_DATA = new Uint8Array(0);

/**
 * The Raft consensus algorithm with no I/O, no clock and no randomness of its own (see DESIGN.md).
 * Time advances only through `tick()`, input arrives through `step()` and the local calls, and
 * everything the caller must do comes out of `ready()`.
 *
 * Ownership: one caller drives a core, never concurrently. Between `ready()` and `advance()` the
 * caller may keep calling `step`, `tick` and the proposal methods; their effects go out in the
 * next Ready.
 */
/** How much sooner than an election timeout a leader's lease ends (see leaseValid). */
export const LEASE_MARGIN_TICKS = 2;

export class RaftCore {
  private readonly cfg: RaftConfig;
  private readonly id: NodeId;

  // Durable state (HardState) and the log.
  private term = 0;
  private vote: NodeId | null = null;
  private readonly log: RaftLog;

  // Membership. `conf` is the applied membership: conf entries take effect when applied (in advance()).
  private conf: ConfState;
  /** Index of the last conf entry (or snapshot) reflected in `conf`. */
  private confIndex: number;
  /** Membership after each applied conf entry above the snapshot, for snapshot metadata at any applied index. */
  private confHistory: { index: number; conf: ConfState }[] = [];
  private snapshotMeta: SnapshotMeta;
  /** False for a node started with no state and no bootstrap: it knows no membership until a leader's snapshot arrives. */
  private initialized: boolean;

  // Volatile state.
  private role: Role = 'follower';
  private lead: NodeId | null = null;
  private stepRole: (m: Message) => void;
  private tickRole: () => void;
  /** Ticks since this node started: the leader stamps heartbeats with it for the lease. */
  private ticks = 0;
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  /**
   * A restarted node has forgotten which leader it last heard from and when, so it keeps that
   * leader's lease for one election timeout after start, as if it had just heard from it.
   */
  private bootLeaseTicks: number;
  private votes = new Map<NodeId, boolean>();

  // Leader state.
  private progress = new Map<NodeId, PeerProgress>();
  /** Index of the last conf entry appended; no new change until it is applied. */
  private pendingConfIndex = 0;
  /** The commit index advanced without an append to every follower (see commitAndAnnounce). */
  private commitUnannounced = false;
  private transferee: NodeId | null = null;
  /**
   * Set once this leader has sent timeoutNow in its term: the transferee may campaign at any
   * later moment (the message can be delayed) with votes that bypass leases, so lease reads
   * are unsafe for the rest of the term.
   */
  private leaseRevoked = false;
  private readonly readOnly = new ReadOnlyQueue();
  /** Reads that arrived before this leader committed an entry of its term. */
  private waitingReads: { context: string; mode: ReadMode }[] = [];
  /** Proposals were appended since the last broadcast: they go out together at ready(). */
  private proposalsPending = false;

  // The Ready hand-off.
  private msgs: Message[] = [];
  private readStates: ReadState[] = [];
  private pendingSnapshot: SnapshotMeta | null = null;
  private prevHard: HardState;
  private prevSoft: SoftState = { leader: null, role: 'follower' };
  private outstanding: Ready | null = null;

  /** Restores from persisted state. With no hardState/snapshot/entries and a `bootstrap` conf, starts a fresh cluster with that membership (index 0, term 0). */
  constructor(config: RaftConfig, init: RaftInit) {
    if (config.electionTicks < 1 || config.heartbeatTicks < 1 || config.heartbeatTicks >= config.electionTicks) {
      throw new RangeError('need 1 <= heartbeatTicks < electionTicks');
    }
    this.cfg = config;
    this.id = config.id;
    const entries = init.entries ?? [];
    const fresh = init.hardState === undefined && init.snapshot === undefined && entries.length === 0;
    let snapshot = init.snapshot;
    if (snapshot === undefined && fresh && init.bootstrap !== undefined) {
      snapshot = { index: 0, term: 0, conf: cloneConfState(init.bootstrap) };
      // The first Ready carries the membership as an index-0 snapshot, so that it is persisted
      // like any other snapshot meta and comes back in `init.snapshot` after a restart.
      this.pendingSnapshot = snapshot;
    }
    this.initialized = snapshot !== undefined;
    this.snapshotMeta = snapshot ?? { index: 0, term: 0, conf: { voters: [], learners: [] } };
    this.conf = cloneConfState(this.snapshotMeta.conf);
    this.confIndex = this.snapshotMeta.index;

    const hs = init.hardState;
    this.term = hs?.term ?? 0;
    this.vote = hs?.vote ?? null;
    this.log = new RaftLog(this.snapshotMeta.index, this.snapshotMeta.term, entries, hs?.commit ?? 0, init.applied ?? this.snapshotMeta.index);
    // The state machine already holds conf entries up to `applied`: rebuild the membership from them.
    for (const e of this.log.between(this.snapshotMeta.index + 1, this.log.applied)) {
      if (e.type === 'conf') this.applyConfEntry(e);
    }
    this.prevHard = this.hardState();
    this.bootLeaseTicks = config.checkQuorum && this.term > 0 ? config.electionTicks : 0;
    this.stepRole = this.stepFollower;
    this.tickRole = this.tickElection;
    this.resetTimers();
  }

  // ---------------------------------------------------------------------------------------------
  // Public API

  tick(): void {
    this.ticks++;
    this.tickRole();
  }

  /** Feeds one message from a peer. Stale, misaddressed or malformed messages are ignored; never throws. */
  step(m: Message): void {
    if (!wellFormed(m) || m.to !== this.id || m.from === this.id) return;
    if (m.term > this.term) {
      if ((m.type === 'vote' || m.type === 'preVote') && m.transfer !== true && this.inLease()) {
        // We heard from a live leader within the minimum election timeout: this candidate is
        // partitioned, removed or impatient. Ignore it without adopting its term.
        return;
      }
      if (m.type === 'preVote' || (m.type === 'preVoteResp' && m.reject !== true)) {
        // A pre-vote (or its grant) carries the term the candidate would use; ours does not change.
      } else {
        const fromLeader = m.type === 'append' || m.type === 'heartbeat' || m.type === 'snapshot';
        this.becomeFollower(m.term, fromLeader ? m.from : null);
      }
    } else if (m.term < this.term) {
      if ((this.cfg.checkQuorum || this.cfg.preVote) && (m.type === 'append' || m.type === 'heartbeat')) {
        // A stale leader (partitioned while we moved on). Tell it our term so it steps down;
        // otherwise a node whose term rose without it winning would be stuck out forever.
        this.send({ type: 'appendResp', to: m.from, term: this.term });
      } else if (m.type === 'preVote') {
        this.send({ type: 'preVoteResp', to: m.from, term: this.term, reject: true });
      }
      return;
    }
    if (m.type === 'vote' || m.type === 'preVote') {
      this.handleVoteRequest(m);
      return;
    }
    this.stepRole(m);
  }

  propose(data: Uint8Array): { index: number; term: number } {
    this.requireLeader();
    if (this.transferee !== null) throw new ProposalDroppedError(`leadership is being transferred to ${this.transferee}`);
    return this.appendAsLeader('normal', data);
  }

  proposeConfChange(cc: ConfChange): { index: number; term: number } {
    this.requireLeader();
    if (this.transferee !== null) throw new ProposalDroppedError(`leadership is being transferred to ${this.transferee}`);
    if (this.log.term(this.log.committed) !== this.term) {
      throw new ConfChangeError('the leader has not yet committed an entry of its term');
    }
    if (this.pendingConfIndex > this.log.applied) {
      throw new ConfChangeError(`a membership change at index ${this.pendingConfIndex} is still pending`);
    }
    const problem = confChangeProblem(this.conf, cc);
    if (problem !== null) throw new ConfChangeError(problem);
    const at = this.appendAsLeader('conf', encodeConfChange(cc));
    this.pendingConfIndex = at.index;
    return at;
  }

  /**
   * Asks for a linearizable read; the answer arrives as a Ready.readState with this `context`
   * (contexts must be unique among waiting reads; a repeated one is answered once). 'safe' confirms
   * leadership with a heartbeat round; 'lease' answers at once while the lease holds and falls
   * back to 'safe' otherwise. Reads still waiting when this node stops leading are dropped: the
   * caller must time them out.
   */
  readIndex(context: string, mode: ReadMode = 'safe'): void {
    this.requireLeader();
    if (!this.committedInTerm()) {
      // Our commit index may lag the cluster's until an entry of our term commits.
      this.waitingReads.push({ context, mode });
      return;
    }
    this.serveRead(context, mode);
  }

  /** The leader catches `to` up, then tells it to campaign at once. Aborts after an election timeout. */
  transferLeadership(to: NodeId): void {
    this.requireLeader();
    if (to === this.id) {
      this.transferee = null;
      return;
    }
    if (!this.conf.voters.includes(to)) throw new TransferError(to, 'not a voter');
    if (this.transferee === to) return;
    this.transferee = to;
    this.electionElapsed = 0;
    const pr = this.progress.get(to)!;
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(to);
    else this.sendAppends(to, true);
  }

  /** Starts an election now (with a pre-vote first when configured). No-op for leaders and non-voters. */
  campaign(): void {
    this.hup(false);
  }

  /** False while a Ready is out (between ready() and advance()). */
  hasReady(): boolean {
    if (this.outstanding !== null) return false;
    return (
      this.proposalsPending ||
      this.msgs.length > 0 ||
      this.readStates.length > 0 ||
      this.pendingSnapshot !== null ||
      this.log.hasUnstable() ||
      this.log.hasNextCommitted() ||
      this.lead !== this.prevSoft.leader ||
      this.role !== this.prevSoft.role ||
      this.term !== this.prevHard.term ||
      this.vote !== this.prevHard.vote ||
      this.log.committed !== this.prevHard.commit
    );
  }

  /** Work for the caller, in the order documented on Ready. Throws if the previous Ready was not advanced. */
  ready(): Ready {
    if (this.outstanding !== null) throw new Error('ready() called again before advance()');
    this.flushProposals();
    const hard = this.hardState();
    // Early messages may not depend on this Ready's write: with a new term or vote (a sole voter
    // elects itself in one step) or a snapshot to install, every message waits for it.
    const durableTerm = hard.term === this.prevHard.term && hard.vote === this.prevHard.vote && this.pendingSnapshot === null;
    const early: Message[] = [];
    const late: Message[] = [];
    for (const m of this.msgs) (durableTerm && LEADER_MESSAGES.has(m.type) ? early : late).push(m);
    const rd: Ready = {
      entries: this.log.unstable(),
      earlyMessages: early,
      messages: late,
      committed: this.log.nextCommitted(),
      readStates: this.readStates,
    };
    const soft = this.softState();
    if (!sameSoft(soft, this.prevSoft)) rd.softState = soft;
    if (!sameHard(hard, this.prevHard)) rd.hardState = hard;
    if (this.pendingSnapshot !== null) rd.snapshot = cloneMeta(this.pendingSnapshot);
    this.prevSoft = soft;
    this.prevHard = hard;
    this.msgs = [];
    this.readStates = [];
    this.pendingSnapshot = null;
    this.outstanding = rd;
    return rd;
  }

  /**
   * The caller persisted, sent and applied what `rd` held. Conf entries in `rd.committed` take
   * effect here, and a leader's own newly persisted entries start counting toward commit.
   */
  advance(rd: Ready): void {
    if (rd !== this.outstanding) throw new Error('advance() must be given the Ready from the last ready()');
    this.outstanding = null;
    const lastEntry = rd.entries[rd.entries.length - 1];
    if (lastEntry !== undefined) this.log.stableTo(lastEntry.index, lastEntry.term);
    const lastCommitted = rd.committed[rd.committed.length - 1];
    if (lastCommitted !== undefined) {
      this.log.applied = Math.max(this.log.applied, lastCommitted.index);
      for (const e of rd.committed) if (e.type === 'conf') this.applyConfEntry(e);
    }
    if (lastEntry !== undefined && this.role === 'leader') this.commitAndAnnounce();
  }

  /**
   * The runtime snapshotted its state machine at `index` (<= applied): entries up to it are
   * dropped and (index, term, membership at index) becomes the snapshot a lagging follower is
   * sent. Returns that meta, for the runtime to persist. Throws CompactedError below the current
   * snapshot.
   */
  compact(index: number): SnapshotMeta {
    if (index < this.log.snapshotIndex()) throw new CompactedError(index, this.log.snapshotIndex());
    if (index > this.log.applied) throw new RangeError(`cannot compact to ${index}: applied is ${this.log.applied}`);
    if (index > this.log.snapshotIndex()) {
      const term = this.log.term(index)!;
      this.snapshotMeta = { index, term, conf: this.confAt(index) };
      this.log.compact(index);
      this.confHistory = this.confHistory.filter((h) => h.index > index);
    }
    return cloneMeta(this.snapshotMeta);
  }

  /** The runtime finished (ok) or gave up (not ok) streaming a snapshot to `to`. */
  reportSnapshot(to: NodeId, ok: boolean): void {
    const pr = this.role === 'leader' ? this.progress.get(to) : undefined;
    if (pr === undefined || pr.state !== 'snapshot') return;
    if (!ok) pr.pendingSnapshot = 0;
    pr.becomeProbe();
    // Wait for the follower's answer (or the next heartbeat's) before probing.
    pr.probeSent = true;
  }

  /** Sending to `to` failed: stop streaming to it and probe instead. */
  reportUnreachable(to: NodeId): void {
    const pr = this.role === 'leader' ? this.progress.get(to) : undefined;
    if (pr?.state === 'replicate') pr.becomeProbe();
  }

  get currentTerm(): number {
    return this.term;
  }

  status(): Status {
    const progress: Record<NodeId, Progress> = {};
    if (this.role === 'leader') for (const [id, pr] of this.progress) progress[id] = pr.toStatus();
    return {
      id: this.id,
      term: this.term,
      vote: this.vote,
      role: this.role,
      leader: this.lead,
      commit: this.log.committed,
      applied: this.log.applied,
      lastIndex: this.log.lastIndex(),
      lastTerm: this.log.lastTerm(),
      firstIndex: this.log.firstIndex(),
      conf: cloneConfState(this.conf),
      progress,
      transferee: this.transferee,
    };
  }

  /**
   * True while this leader can be sure no other leader exists: check-quorum is on, a quorum of
   * voters answered heartbeats sent less than an election timeout ago (each of them ignores
   * votes for that long after receiving one), and no leadership transfer is or was under way in
   * this term. Assumes every node's ticks run at the same rate.
   */
  leaseValid(): boolean {
    if (this.role !== 'leader' || !this.cfg.checkQuorum || this.transferee !== null || this.leaseRevoked) return false;
    // Two ticks short of the followers' vote-refusal window: their ticks run out of phase with
    // ours by up to one, and a tick of rate drift between machines is allowed for.
    return hasQuorum(this.conf.voters, (v) => v === this.id || this.ticks - (this.progress.get(v)?.leaseAckTick ?? -Infinity) < this.cfg.electionTicks - LEASE_MARGIN_TICKS);
  }

  /**
   * The tick (of this node's count) at which the heartbeats were sent whose answers make the
   * lease (the newest such tick a quorum has answered); null when the lease does not hold. The
   * runtime turns it into time: ticks assume a steady clock, which a stalled process is not.
   */
  leaseStartTick(): number | null {
    if (!this.leaseValid()) return null;
    const t = quorumValue(this.conf.voters, (v) => (v === this.id ? this.ticks : this.progress.get(v)?.leaseAckTick ?? -Infinity));
    return t === undefined || t === -Infinity ? null : t;
  }

  /** Ticks since this core was made (the clock of `leaseStartTick`). */
  get tickCount(): number {
    return this.ticks;
  }

  /**
   * The index a read may be served at with no round trip: the commit index, while the lease
   * holds (leaseValid) and this leader has committed an entry of its term (before that, its
   * commit index may lag the cluster's); null otherwise. Cheap enough to ask on every request.
   */
  leaseReadIndex(): number | null {
    return this.leaseValid() && this.committedInTerm() ? this.log.committed : null;
  }

  /** The term of the entry at `index`, undefined when compacted or beyond the log. For diagnostics and tests. */
  logTerm(index: number): number | undefined {
    return this.log.term(index);
  }

  // ---------------------------------------------------------------------------------------------
  // Roles. Each role swaps in its own step and tick functions.

  private becomeFollower(term: number, lead: NodeId | null): void {
    this.reset(term);
    this.role = 'follower';
    this.lead = lead;
    this.stepRole = this.stepFollower;
    this.tickRole = this.tickElection;
  }

  private becomePreCandidate(): void {
    // A pre-candidate keeps its term and vote: the pre-vote changes nothing durable.
    this.resetTimers();
    this.votes.clear();
    this.lead = null;
    this.role = 'preCandidate';
    this.stepRole = this.stepCandidate;
    this.tickRole = this.tickElection;
  }

  private becomeCandidate(): void {
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = 'candidate';
    this.stepRole = this.stepCandidate;
    this.tickRole = this.tickElection;
  }

  private becomeLeader(): void {
    this.reset(this.term);
    this.role = 'leader';
    this.lead = this.id;
    this.stepRole = this.stepLeader;
    this.tickRole = this.tickLeader;
    const next = this.log.lastIndex() + 1;
    for (const id of [...this.conf.voters, ...this.conf.learners]) {
      if (id !== this.id) this.progress.set(id, new PeerProgress(next, this.conf.learners.includes(id), this.cfg.maxInflight));
    }
    // Entries after the applied index may hold a conf change: treat it as pending.
    this.pendingConfIndex = this.log.lastIndex();
    // Only entries of our own term count toward commit (§5.4.2): the no-op lets us commit the
    // previous terms' entries, and tells us the commit index is current.
    this.appendAsLeader('empty', EMPTY_DATA);
    this.flushProposals();
  }

  /** Clears everything volatile for a new term or role. */
  private reset(term: number): void {
    if (term !== this.term) {
      this.term = term;
      this.vote = null;
    }
    this.lead = null;
    this.resetTimers();
    this.votes.clear();
    this.progress.clear();
    this.transferee = null;
    this.leaseRevoked = false;
    this.readOnly.clear();
    this.waitingReads = [];
    this.proposalsPending = false;
  }

  private resetTimers(): void {
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    const n = this.cfg.electionTicks;
    this.randomizedElectionTimeout = n + Math.min(n - 1, Math.floor(this.cfg.random() * n));
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.bootLeaseTicks > 0) this.bootLeaseTicks--;
    if (!this.promotable()) return;
    // A sole voter needs nobody's vote: no reason to wait out a timeout.
    const alone = this.conf.voters.length === 1;
    if (alone || this.electionElapsed >= this.randomizedElectionTimeout) this.hup(false);
  }

  private tickLeader(): void {
    this.electionElapsed++;
    this.heartbeatElapsed++;
    for (const pr of this.progress.values()) pr.ticksSinceContact++;
    if (this.cfg.checkQuorum && !this.quorumActive()) {
      // We have not heard from a quorum for an election timeout: a leader may exist elsewhere.
      this.becomeFollower(this.term, null);
      return;
    }
    if (this.electionElapsed >= this.cfg.electionTicks) {
      this.electionElapsed = 0;
      this.transferee = null; // the transfer did not finish within an election timeout
    }
    if (this.heartbeatElapsed >= this.cfg.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.broadcastHeartbeat(this.readOnly.lastContext());
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case 'append':
        this.heardFromLeader(m.from);
        this.handleAppend(m);
        break;
      case 'heartbeat':
        this.heardFromLeader(m.from);
        this.handleHeartbeat(m);
        break;
      case 'snapshot':
        this.heardFromLeader(m.from);
        this.handleSnapshot(m);
        break;
      case 'timeoutNow':
        // Our leader is handing over: campaign now, skipping pre-vote, with votes that bypass leases.
        this.hup(true);
        break;
      default:
        break;
    }
  }

  /** Shared by preCandidate and candidate; the role decides which vote answers count. */
  private stepCandidate(m: Message): void {
    switch (m.type) {
      case 'append':
      case 'heartbeat':
      case 'snapshot':
        // A leader exists in our term (a candidate) or one above it (a pre-candidate's term is unchanged).
        this.becomeFollower(m.term, m.from);
        this.stepFollower(m);
        break;
      case 'preVoteResp':
        if (this.role !== 'preCandidate') return;
        // A grant carries the term we would campaign in; a refusal carries the voter's (= ours).
        if (m.reject === true ? m.term !== this.term : m.term !== this.term + 1) return;
        this.poll(m.from, m.reject !== true);
        break;
      case 'voteResp':
        if (this.role === 'candidate') this.poll(m.from, m.reject !== true);
        break;
      default:
        break;
    }
  }

  private stepLeader(m: Message): void {
    const pr = this.progress.get(m.from);
    if (pr === undefined) return;
    switch (m.type) {
      case 'appendResp':
        pr.ticksSinceContact = 0;
        pr.answered = true;
        this.handleAppendResp(m, pr);
        break;
      case 'heartbeatResp':
        pr.ticksSinceContact = 0;
        pr.answered = true;
        this.handleHeartbeatResp(m, pr);
        break;
      default:
        break;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Elections

  /** Starts an election if this node may: a voter, not leading, with no committed conf change still to apply. */
  private hup(transfer: boolean): void {
    if (this.role === 'leader' || !this.promotable()) return;
    // A committed but unapplied conf change may remove us or change the quorum; wait for it.
    if (this.log.between(this.log.applied + 1, this.log.committed).some((e) => e.type === 'conf')) return;
    if (this.cfg.preVote && !transfer) {
      this.becomePreCandidate();
      this.requestVotes('preVote', false);
    } else {
      this.becomeCandidate();
      this.requestVotes('vote', transfer);
    }
  }

  private requestVotes(type: 'preVote' | 'vote', transfer: boolean): void {
    const term = type === 'preVote' ? this.term + 1 : this.term;
    if (this.poll(this.id, true)) return;
    for (const to of this.conf.voters) {
      if (to === this.id) continue;
      const m: Outgoing = { type, to, term, index: this.log.lastIndex(), logTerm: this.log.lastTerm() };
      if (transfer) m.transfer = true;
      this.send(m);
    }
  }

  /** Records a vote; returns true when it decided the election (won or lost). */
  private poll(from: NodeId, granted: boolean): boolean {
    if (!this.votes.has(from)) this.votes.set(from, granted);
    switch (voteResult(this.conf.voters, this.votes)) {
      case 'won':
        if (this.role === 'preCandidate') {
          this.becomeCandidate();
          this.requestVotes('vote', false);
        } else {
          this.becomeLeader();
        }
        return true;
      case 'lost':
        this.becomeFollower(this.term, null);
        return true;
      case 'pending':
        return false;
    }
  }

  private handleVoteRequest(m: Message): void {
    const respType = m.type === 'vote' ? 'voteResp' : 'preVoteResp';
    const canVote =
      this.vote === m.from ||
      (this.vote === null && this.lead === null) ||
      // A pre-vote for a future term: we would be free to vote by then.
      (m.type === 'preVote' && m.term > this.term);
    if (canVote && this.log.isUpToDate(m.index ?? 0, m.logTerm ?? 0)) {
      if (m.type === 'vote') {
        this.vote = m.from;
        this.electionElapsed = 0;
      }
      this.send({ type: respType, to: m.from, term: m.term, reject: false });
    } else {
      this.send({ type: respType, to: m.from, term: this.term, reject: true });
    }
  }

  /**
   * Do we ignore a vote request because a leader is alive? Only with check-quorum, which is what
   * makes a leader step down when it cannot reach a quorum, so a lease is never held by a dead leader.
   */
  private inLease(): boolean {
    if (!this.cfg.checkQuorum) return false;
    if (this.role === 'leader' || this.bootLeaseTicks > 0) return true;
    return this.lead !== null && this.electionElapsed < this.cfg.electionTicks;
  }

  private promotable(): boolean {
    return this.initialized && this.conf.voters.includes(this.id);
  }

  private heardFromLeader(from: NodeId): void {
    this.electionElapsed = 0;
    this.lead = from;
  }

  // ---------------------------------------------------------------------------------------------
  // Follower side of replication

  private handleAppend(m: Message): void {
    const prevIndex = m.index ?? 0;
    const prevTerm = m.logTerm ?? 0;
    if (!this.initialized) {
      // Without a membership we cannot take entries; refusing index 0 (which every initialized
      // node matches) tells the leader to send its snapshot.
      this.send({ type: 'appendResp', to: m.from, term: this.term, index: prevIndex, reject: true, rejectHint: 0, logTermHint: 0 });
      return;
    }
    if (prevIndex < this.log.committed) {
      this.send({ type: 'appendResp', to: m.from, term: this.term, index: this.log.committed });
      return;
    }
    const ents = m.entries ?? [];
    if (!contiguousFrom(ents, prevIndex + 1)) return;
    if (this.log.matchTerm(prevIndex, prevTerm)) {
      const lastNew = prevIndex + ents.length;
      const conflict = this.log.findConflict(ents);
      if (conflict !== 0) {
        // Overwriting a committed entry can only come from a broken peer: refuse the message.
        if (conflict <= this.log.committed) return;
        if (conflict <= this.log.lastIndex()) this.retractAcksFrom(conflict);
        this.log.truncateAndAppend(ents, conflict);
      }
      this.log.commitTo(Math.min(m.commit ?? 0, lastNew));
      this.send({ type: 'appendResp', to: m.from, term: this.term, index: lastNew });
      return;
    }
    // Point the leader at the last index whose term is <= prevTerm: every entry above it
    // certainly mismatches, so the leader can skip them all in one round trip.
    const hint = this.log.findConflictByTerm(Math.min(prevIndex, this.log.lastIndex()), prevTerm);
    this.send({
      type: 'appendResp',
      to: m.from,
      term: this.term,
      index: prevIndex,
      reject: true,
      rejectHint: hint,
      logTermHint: this.log.term(hint) ?? 0,
    });
  }

  private handleHeartbeat(m: Message): void {
    // The leader sends min(commit, our match), which our log is known to hold.
    if (this.initialized) this.log.commitTo(m.commit ?? 0);
    const resp: Outgoing = { type: 'heartbeatResp', to: m.from, term: this.term };
    if (m.index !== undefined) resp.index = m.index;
    if (m.context !== undefined) resp.context = m.context;
    this.send(resp);
  }

  private handleSnapshot(m: Message): void {
    const s = m.snapshot;
    if (!wellFormedSnapshot(s)) return;
    const accept = this.initialized ? s.index > this.log.committed : s.index >= 0;
    if (!accept) {
      this.send({ type: 'appendResp', to: m.from, term: this.term, index: this.log.committed });
      return;
    }
    if (this.initialized && this.log.matchTerm(s.index, s.term)) {
      // Our log already holds the snapshot's last entry, hence (log matching) everything before
      // it: keep the log, suffix included, and just commit up to the snapshot.
      this.log.commitTo(s.index);
      this.send({ type: 'appendResp', to: m.from, term: this.term, index: this.log.committed });
      return;
    }
    // Our log does not match at the snapshot's last index: everything we hold after the
    // snapshot may conflict with the leader, so drop the whole log.
    this.retractAcksFrom(s.index + 1);
    this.log.restore(s.index, s.term);
    this.snapshotMeta = cloneMeta(s);
    this.conf = cloneConfState(s.conf);
    this.confIndex = s.index;
    this.confHistory = [];
    this.initialized = true;
    this.pendingSnapshot = this.snapshotMeta;
    this.send({ type: 'appendResp', to: m.from, term: this.term, index: s.index });
  }

  /**
   * Drops unsent acknowledgements of entries at or after `index`, which we are about to
   * overwrite: they go out after the new log is persisted and would claim entries we no longer hold.
   */
  private retractAcksFrom(index: number): void {
    this.msgs = this.msgs.filter((m) => !(m.type === 'appendResp' && m.reject !== true && (m.index ?? 0) >= index));
  }

  // ---------------------------------------------------------------------------------------------
  // Leader side of replication

  private requireLeader(): void {
    if (this.role !== 'leader') throw new NotLeaderError(this.lead);
  }

  private appendAsLeader(type: EntryType, data: Uint8Array): { index: number; term: number } {
    const e: Entry = { index: this.log.lastIndex() + 1, term: this.term, type, data };
    this.log.append(e);
    this.proposalsPending = true;
    return { index: e.index, term: e.term };
  }

  /**
   * Sends what was proposed since the last call in as few appends as flow control allows. The
   * appends go out before the Ready carrying the entries is persisted (see Ready): our own copy
   * counts toward commit only from advance() on.
   */
  private flushProposals(): void {
    if (!this.proposalsPending) return;
    this.proposalsPending = false;
    if (this.role !== 'leader') return;
    for (const id of this.progress.keys()) this.sendAppends(id, false);
  }

  /** Sends one append to `to` if flow control allows, then as many more as a replicating follower's window takes. */
  private sendAppends(to: NodeId, sendIfEmpty: boolean): void {
    if (!this.maybeSendAppend(to, sendIfEmpty)) return;
    while (this.progress.get(to)?.state === 'replicate' && this.maybeSendAppend(to, false));
  }

  private maybeSendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    if (prevTerm === undefined) return this.sendSnapshot(to, pr);
    const ents = this.log.slice(pr.next, this.cfg.maxEntriesPerMsg, this.cfg.maxBytesPerMsg);
    if (ents.length === 0 && !sendIfEmpty) return false;
    this.send({ type: 'append', to, term: this.term, index: prevIndex, logTerm: prevTerm, entries: ents, commit: this.log.committed });
    pr.sentAppend(ents.length === 0 ? null : ents[ents.length - 1]!.index);
    pr.commitSent = this.log.committed;
    return true;
  }

  /**
   * Advances the commit index and tells the followers. Appends with new entries carry it anyway.
   * An append carrying nothing but the commit index costs each follower a message, a Ready and
   * an apply batch of its own, and the leader two messages and an answer, per write at one
   * client; it would also hold the follower's next log write behind that apply. So it waits for
   * the runtime's `announceCommit()`, which the next write's append usually makes needless.
   * Only a leader answers clients, so nothing they see waits for a follower's apply. A commit
   * reaching a membership change that may be pending goes out at once: a removed node hears of
   * its removal only this way, before the leader drops its address.
   */
  private commitAndAnnounce(): void {
    const before = this.log.committed;
    if (!this.maybeCommit()) return;
    if (this.pendingConfIndex > before) {
      this.broadcastAppend();
      return;
    }
    for (const id of this.progress.keys()) this.sendAppends(id, false);
    this.commitUnannounced = true;
  }

  /**
   * Whether the commit index moved past what some follower was sent: the runtime then calls
   * `announceCommit()` after a short wait.
   */
  get commitAnnouncePending(): boolean {
    return this.commitUnannounced && this.role === 'leader';
  }

  /** Sends the commit index to every follower not yet sent it (an append, empty if need be). */
  announceCommit(): void {
    if (!this.commitUnannounced) return;
    this.commitUnannounced = false;
    if (this.role !== 'leader') return;
    for (const [id, pr] of this.progress) if (pr.commitSent < this.log.committed) this.sendAppends(id, true);
  }

  private sendSnapshot(to: NodeId, pr: PeerProgress): boolean {
    this.send({ type: 'snapshot', to, term: this.term, snapshot: cloneMeta(this.snapshotMeta) });
    pr.becomeSnapshot(this.snapshotMeta.index);
    return true;
  }

  private broadcastAppend(): void {
    for (const id of this.progress.keys()) this.sendAppends(id, true);
  }

  private broadcastHeartbeat(context: string | undefined): void {
    for (const [to, pr] of this.progress) {
      // Stamped with our tick count and echoed back, for the lease (see PeerProgress.leaseAckTick).
      const m: Outgoing = { type: 'heartbeat', to, term: this.term, commit: Math.min(pr.match, this.log.committed), index: this.ticks };
      if (context !== undefined) m.context = context;
      this.send(m);
    }
  }

  private handleAppendResp(m: Message, pr: PeerProgress): void {
    if (m.index === undefined) return;
    if (m.reject === true) {
      // Skip back over a whole term at once when the follower told us its term at the hint.
      let hint = m.rejectHint ?? m.index;
      if ((m.logTermHint ?? 0) > 0) hint = this.log.findConflictByTerm(hint, m.logTermHint!);
      if (!pr.maybeDecrTo(m.index, hint)) return;
      if (pr.state === 'replicate') pr.becomeProbe();
      // Only a node without membership refuses index 0: it needs a snapshot, even one at index 0.
      if (m.index === 0) this.sendSnapshot(m.from, pr);
      else this.sendAppends(m.from, true);
      return;
    }
    const updated = pr.maybeUpdate(m.index);
    // Nothing new, unless it ends a probe at the point we already knew, or answers the snapshot.
    const meaningful = updated || (pr.state === 'probe' && pr.match === m.index) || (pr.state === 'snapshot' && m.index >= pr.pendingSnapshot);
    if (!meaningful) return;
    if (pr.state === 'probe') {
      pr.becomeReplicate();
    } else if (pr.state === 'snapshot') {
      if (pr.match + 1 >= this.log.firstIndex()) pr.becomeReplicate();
      else pr.becomeProbe();
    } else {
      pr.freeInflightsTo(m.index);
    }
    this.commitAndAnnounce();
    this.sendAppends(m.from, false);
    if (m.from === this.transferee && pr.match === this.log.lastIndex()) this.sendTimeoutNow(m.from);
  }

  private handleHeartbeatResp(m: Message, pr: PeerProgress): void {
    if (m.index !== undefined && m.index <= this.ticks) pr.leaseAckTick = Math.max(pr.leaseAckTick, m.index);
    if (pr.state === 'probe') pr.probeSent = false;
    if (pr.state === 'replicate' && pr.inflightFull()) pr.freeFirstInflight();
    // Even an empty append: if an earlier one was lost, the follower's refusal exposes the gap.
    if (pr.match < this.log.lastIndex()) this.sendAppends(m.from, true);
    if (m.context !== undefined && !pr.learner) {
      const read = this.readOnly.ack(m.context, m.from);
      if (read !== undefined && hasQuorum(this.conf.voters, (v) => read.acks.has(v))) {
        for (const r of this.readOnly.releaseThrough(m.context)) this.readStates.push({ index: r.index, context: r.context });
      }
    }
  }

  private sendTimeoutNow(to: NodeId): void {
    this.leaseRevoked = true;
    this.send({ type: 'timeoutNow', to, term: this.term });
  }

  /**
   * Advances the commit index to what a majority of voters holds durably, if that entry is of our
   * term (§5.4.2). We count only what we persisted ourselves (`stabled`): our appends leave before
   * our own write does, and followers count only once they have answered, after theirs.
   */
  private maybeCommit(): boolean {
    const index = majorityIndex(this.conf.voters, (v) => (v === this.id ? this.log.stabled : (this.progress.get(v)?.match ?? 0)));
    if (index <= this.log.committed || this.log.term(index) !== this.term) return false;
    this.log.commitTo(index);
    if (this.waitingReads.length > 0) {
      const waiting = this.waitingReads;
      this.waitingReads = [];
      for (const r of waiting) this.serveRead(r.context, r.mode);
    }
    return true;
  }

  private committedInTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  private serveRead(context: string, mode: ReadMode): void {
    const index = this.log.committed;
    const alone = this.conf.voters.length === 1 && this.conf.voters[0] === this.id;
    if (alone || (mode === 'lease' && this.leaseValid())) {
      this.readStates.push({ index, context });
      return;
    }
    if (this.readOnly.add(context, index, this.id)) this.broadcastHeartbeat(context);
  }

  /** A live node counts itself; peers count when heard from within an election timeout. */
  private quorumActive(): boolean {
    return hasQuorum(this.conf.voters, (v) => v === this.id || (this.progress.get(v)?.ticksSinceContact ?? Infinity) < this.cfg.electionTicks);
  }

  // ---------------------------------------------------------------------------------------------
  // Membership

  /** Applies one committed conf entry (at most once: entries at or below confIndex are already reflected). */
  private applyConfEntry(e: Entry): void {
    if (e.index <= this.confIndex) return;
    this.confIndex = e.index;
    let cc: ConfChange;
    try {
      cc = decodeConfChange(e.data);
    } catch {
      return; // not ours to judge: an undecodable change is a no-op on every node alike
    }
    // Validated when proposed against the same membership, so this only guards a corrupt log.
    if (confChangeProblem(this.conf, cc) !== null) return;
    this.conf = applyConfChange(this.conf, cc);
    this.confHistory.push({ index: e.index, conf: this.conf });
    if (this.role !== 'leader') return;
    if (cc.node === this.id) {
      if (cc.type === 'remove') this.becomeFollower(this.term, null); // the removal is committed: step down
      return;
    }
    switch (cc.type) {
      case 'addLearner':
        this.progress.set(cc.node, new PeerProgress(this.log.lastIndex() + 1, true, this.cfg.maxInflight));
        break;
      case 'promote': {
        const pr = this.progress.get(cc.node);
        if (pr !== undefined) pr.learner = false;
        break;
      }
      case 'remove':
        this.progress.delete(cc.node);
        if (this.transferee === cc.node) this.transferee = null;
        break;
    }
    // The quorum changed: entries may now be committed.
    if (this.maybeCommit()) this.broadcastAppend();
  }

  private confAt(index: number): ConfState {
    for (let i = this.confHistory.length - 1; i >= 0; i--) {
      const h = this.confHistory[i]!;
      if (h.index <= index) return cloneConfState(h.conf);
    }
    return cloneConfState(this.snapshotMeta.conf);
  }

  // ---------------------------------------------------------------------------------------------
  // Ready bookkeeping

  /** Stamps our id on a message literal built for this call (no copy: this is the hot path). */
  private send(m: Outgoing): void {
    const msg = m as Message;
    msg.from = this.id;
    this.msgs.push(msg);
  }

  private hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  private softState(): SoftState {
    return { leader: this.lead, role: this.role };
  }
}

function sameHard(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

function sameSoft(a: SoftState, b: SoftState): boolean {
  return a.leader === b.leader && a.role === b.role;
}

function cloneMeta(s: SnapshotMeta): SnapshotMeta {
  return { index: s.index, term: s.term, conf: cloneConfState(s.conf) };
}

/** Entries numbered first, first+1, ... with sane terms and data: anything else is a garbled message. */
function contiguousFrom(ents: readonly Entry[], first: number): boolean {
  for (let i = 0; i < ents.length; i++) {
    const e = ents[i];
    if (typeof e !== 'object' || e === null || e.index !== first + i || !Number.isSafeInteger(e.term) || !(e.data instanceof Uint8Array)) {
      return false;
    }
  }
  return true;
}

function wellFormedSnapshot(s: SnapshotMeta | undefined): s is SnapshotMeta {
  return (
    typeof s === 'object' &&
    s !== null &&
    Number.isSafeInteger(s.index) &&
    s.index >= 0 &&
    Number.isSafeInteger(s.term) &&
    typeof s.conf === 'object' &&
    s.conf !== null &&
    Array.isArray(s.conf.voters) &&
    Array.isArray(s.conf.learners)
  );
}

/** What only a leader sends: these may leave before the Ready's write (see Ready). */
const LEADER_MESSAGES = new Set<string>(['append', 'heartbeat', 'snapshot', 'timeoutNow']);

const MESSAGE_TYPES = new Set<string>([
  'preVote',
  'preVoteResp',
  'vote',
  'voteResp',
  'append',
  'appendResp',
  'heartbeat',
  'heartbeatResp',
  'snapshot',
  'timeoutNow',
]);

function optionalInteger(n: unknown): boolean {
  return n === undefined || Number.isSafeInteger(n);
}

/** Enough shape checking that a garbled peer message cannot throw or poison state deeper in. */
function wellFormed(m: Message): boolean {
  return (
    typeof m === 'object' &&
    m !== null &&
    MESSAGE_TYPES.has(m.type) &&
    typeof m.from === 'string' &&
    typeof m.to === 'string' &&
    Number.isSafeInteger(m.term) &&
    m.term >= 0 &&
    optionalInteger(m.index) &&
    optionalInteger(m.logTerm) &&
    optionalInteger(m.commit) &&
    optionalInteger(m.rejectHint) &&
    optionalInteger(m.logTermHint) &&
    (m.context === undefined || typeof m.context === 'string') &&
    (m.entries === undefined || Array.isArray(m.entries))
  );
}
