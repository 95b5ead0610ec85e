/**
 * The vocabulary of the consensus core. Everything here is plain data: it crosses the wire
 * (the transport encodes it), lands on disk (the node runtime persists it) and is compared in
 * tests, so no class instances and no functions.
 *
 * Indexes and terms are JavaScript numbers: 2^53 entries is more than any log will hold.
 */

export type NodeId = string;

/** What a log entry carries. `conf` entries hold an encoded ConfChange; `empty` is a new leader's no-op. */
export type EntryType = 'normal' | 'conf' | 'empty';

export interface Entry {
  index: number;
  term: number;
  type: EntryType;
  /** Opaque to the core. Empty for `empty` entries. */
  data: Uint8Array;
}

/** Cluster membership. A node is in at most one of the two lists. */
export interface ConfState {
  voters: NodeId[];
  /** Non-voters: they receive the log but neither vote nor count toward a quorum. */
  learners: NodeId[];
}

/**
 * One membership change. Only one may be pending (appended but not applied) at a time, and a
 * leader accepts one only after it has committed an entry of its own term.
 *  - addLearner: a new node joins as a non-voter.
 *  - promote: a learner becomes a voter.
 *  - remove: a voter or learner leaves.
 */
export interface ConfChange {
  type: 'addLearner' | 'promote' | 'remove';
  node: NodeId;
  /** Opaque to the core (the runtime stores the node's addresses here). */
  context?: Uint8Array;
}

/** What must be durable before any message that depends on it is sent. */
export interface HardState {
  term: number;
  vote: NodeId | null;
  commit: number;
}

/** Describes a state-machine snapshot; the data itself is owned and moved by the runtime. */
export interface SnapshotMeta {
  /** Last log index and term the snapshot includes. */
  index: number;
  term: number;
  /** Membership as of `index`. */
  conf: ConfState;
}

export type MessageType =
  | 'preVote'
  | 'preVoteResp'
  | 'vote'
  | 'voteResp'
  | 'append'
  | 'appendResp'
  | 'heartbeat'
  | 'heartbeatResp'
  /** Leader -> follower: install the snapshot described by `snapshot`; the runtime streams the data. */
  | 'snapshot'
  /** Leader -> transferee: start an election now, skipping pre-vote. */
  | 'timeoutNow';

export interface Message {
  type: MessageType;
  from: NodeId;
  to: NodeId;
  /** Sender's term; for preVote, the term the sender would campaign in. */
  term: number;
  /**
   * append: index and term of the entry before `entries`. vote/preVote: candidate's last log index and term.
   * appendResp: the last index the follower now matches (on reject: the rejected append's `index`).
   * heartbeat/heartbeatResp: the leader's tick count when it sent the heartbeat, echoed back (leader lease).
   */
  index?: number;
  logTerm?: number;
  entries?: Entry[];
  /** append/heartbeat: leader's commit index (heartbeats send min(commit, follower's match)). */
  commit?: number;
  /** Responses: refused (vote not granted, or append did not match). */
  reject?: boolean;
  /** appendResp on reject: the follower's hint for where to retry (its last index, or a conflict index). */
  rejectHint?: number;
  /** appendResp on reject: the term at rejectHint, letting the leader skip a whole term at once. */
  logTermHint?: number;
  snapshot?: SnapshotMeta;
  /** heartbeat/heartbeatResp: read-index round identifier, echoed back. */
  context?: string;
  /** vote/preVote sent because of timeoutNow: followers grant it even while they hear from a leader. */
  transfer?: boolean;
}

export type Role = 'follower' | 'preCandidate' | 'candidate' | 'leader';

/** Volatile state, reported in Ready when it changes. */
export interface SoftState {
  leader: NodeId | null;
  role: Role;
}

/** A linearizable read may proceed once the state machine has applied `index`. */
export interface ReadState {
  index: number;
  context: string;
}

/**
 * Work the caller must do, then call `advance(ready)`:
 *  1. if `snapshot` is set, install it (the runtime already holds its data) before anything else,
 *     and drop every stored entry (any entries the core keeps come back in `entries`). A snapshot
 *     at index 0 carries only a membership (a bootstrap, or a node joining a cluster that never
 *     compacted): the state machine is empty, and the meta must still be persisted;
 *  2. send `earlyMessages`: a leader's appends, heartbeats, snapshots and timeoutNow, which may go
 *     out before or in parallel with the write of step 3 (Raft thesis §10.2.1). They promise
 *     nothing that write makes durable: their term was persisted by an earlier Ready (a Ready that
 *     changes the term or vote, or installs a snapshot, has none), and the commit index they carry
 *     counts the leader toward a quorum only for entries an earlier Ready persisted. A leader that
 *     crashes before its write completes has lost only its own copy of the entries they carry:
 *     they commit, or not, on the followers' persisted copies alone;
 *  3. persist `entries` (replacing any stored entries at or after entries[0].index) and `hardState`,
 *     durably, in one write;
 *  4. send `messages`, only after step 3: answers and votes promise what step 3 persists;
 *  5. apply `committed` to the state machine, in order. These entries were persisted by earlier
 *     Readies, so applying them may run in parallel with steps 2-4 (but after step 1);
 *  6. report `readStates` to the readers waiting on them once applied >= their index.
 */
export interface Ready {
  softState?: SoftState;
  hardState?: HardState;
  snapshot?: SnapshotMeta;
  entries: Entry[];
  earlyMessages: Message[];
  messages: Message[];
  committed: Entry[];
  readStates: ReadState[];
}

export interface RaftConfig {
  id: NodeId;
  /** Ticks without hearing from a leader before a follower campaigns (randomised to [n, 2n)). */
  electionTicks: number;
  heartbeatTicks: number;
  /** Always on in production; tests may turn them off to reproduce the failures they prevent. */
  preVote: boolean;
  checkQuorum: boolean;
  /** Most entries, and most bytes of entry data, in one append message. */
  maxEntriesPerMsg: number;
  maxBytesPerMsg: number;
  /** Most append messages in flight to one follower while replicating optimistically. */
  maxInflight: number;
  /** Uniform in [0, 1): the only randomness the core uses, injected so runs are repeatable. */
  random: () => number;
}

/** Where a leader stands with one follower. */
export interface Progress {
  match: number;
  next: number;
  state: 'probe' | 'replicate' | 'snapshot';
  /** Ticks since the follower last answered the leader. */
  ticksSinceContact: number;
  /** Whether the follower has answered this leader at all (since the lead or since it was added). */
  answered: boolean;
  learner: boolean;
}

export interface Status {
  id: NodeId;
  term: number;
  vote: NodeId | null;
  role: Role;
  leader: NodeId | null;
  commit: number;
  applied: number;
  lastIndex: number;
  lastTerm: number;
  firstIndex: number;
  conf: ConfState;
  /** Only on the leader: one entry per other member. */
  progress: Record<NodeId, Progress>;
  /** Set while a leadership transfer is in progress. */
  transferee: NodeId | null;
}
