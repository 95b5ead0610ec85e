import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open as openFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { silentLogger, systemClock, type Clock, type Logger, type TimerHandle } from '@strongroom/base';
import { NotLeaderError, ProposalDroppedError } from '../core/errors';
import { decodeConfChange } from '../core/conf-change';
import { LEASE_MARGIN_TICKS, RaftCore } from '../core/raft-core';
import type { ConfChange, ConfState, Entry, HardState, Message, NodeId, RaftConfig, ReadState, Ready, SnapshotMeta, SoftState, Status } from '../core/types';
import type { Transport } from '../transport/transport';
import { encodeAddress, encodeRestoreChunk, encodeRestoreCommit } from './command';
import { NodeClosedError, NodeRemovedError, OutcomeUnknownError, RaftTimeoutError, SnapshotRestoreError } from './errors';
import type { LogStore } from './log-store';
import { openLogStore } from './open-log-store';
import { SnapshotDir, SnapshotReader, SnapshotWriter, snapshotStream, type SnapshotFile, type SnapshotHeader } from './snapshot-file';
import { DEFAULT_CHANGE_LOG_LIMITS, type ChangeLogLimits } from './change-log';
import { StateMachine, type AppliedChange, type StateScan, type StateView } from './state-machine';

export interface RaftNodeOptions {
  id: NodeId;
  /** Holds `raft/` (the log), `state/` (the key/value state machine) and `snapshots/`. */
  dataDir: string;
  transport: Transport;
  clock?: Clock;
  /** This node's cluster address. A leader records its own in the replicated address map. */
  address?: string;
  /**
   * Addresses to use before the log names them: the other voters of a multi-node bootstrap, or
   * the node a joining learner was added through (it must answer the leader before it has
   * applied anything). Addresses from the log and snapshots take precedence.
   */
  peers?: Record<NodeId, string>;
  /** Membership of a brand-new cluster; ignored once the node has any state. */
  bootstrap?: ConfState;
  /** Milliseconds per core tick (default 100). */
  tickMs?: number;
  /** Ticks without a leader before campaigning (default 10, randomised to [n, 2n) by the core). */
  electionTicks?: number;
  /** Ticks between heartbeats (default 1). */
  heartbeatTicks?: number;
  /**
   * How long a leader waits before telling followers of a new commit index in an append of its
   * own (default 5 ms), rather than in the next write's append (see the core's commitAndAnnounce).
   */
  commitAnnounceMs?: number;
  /**
   * Applied entries since the newest snapshot before an automatic one is taken (default 8192,
   * Vault's `snapshot_threshold`), plus up to half as many again, drawn anew for each snapshot
   * from the core's random source, so that the members, which reach every index together, do
   * not all snapshot and compact at the same moment.
   */
  snapshotThreshold?: number;
  /**
   * How often the threshold is checked (default 120 s, Vault's `snapshot_interval`); each wait is
   * drawn between one and two intervals. A snapshot costs CPU on every member, so under steady
   * writes one per interval is taken rather than one every few seconds. 0 checks after every apply.
   */
  snapshotIntervalMs?: number;
  /**
   * Bytes of entries applied since the log was last compacted past which it is compacted at once,
   * whatever the interval (default 16 MiB): entries since the last compaction stay in memory, so
   * this bounds the memory the log takes. This compaction copies nothing: it makes the state
   * machine durable through its applied index (a checkpoint) and drops the entries before it; a
   * follower that then needs a snapshot gets one written for it. Each limit is drawn between this
   * and half again as much, so that members, which apply the same entries, do not all pause at once.
   */
  snapshotMaxLogBytes?: number;
  /** Entries kept in the log below a snapshot, so followers that lag a little catch up from the log (default 1024). */
  snapshotTrailing?: number;
  /** How long `propose` waits for its entry to apply before giving up with OutcomeUnknownError (default 15 s). */
  proposalTimeoutMs?: number;
  /** Bytes of snapshot per log entry when an operator restores one (default 512 KiB). */
  restoreChunkBytes?: number;
  /**
   * How much of the applied changes each node keeps on disk for `changesFrom` (default 16384
   * entries or 256 MiB, whichever comes first). The window is the node's own, not replicated.
   */
  changeLog?: Partial<ChangeLogLimits>;
  logger?: Logger;
  /** Replaces the LevelDB log (tests use it to count or fail writes). */
  logStore?: LogStore;
  /** Overrides for the remaining core settings (message limits, pre-vote, random source). */
  raft?: Partial<RaftConfig>;
  /** Told of each of this node's own proposals as it applies (metrics; must not throw or block). */
  observer?: RaftObserver;
}

/** Timings of the node's own work, for whoever keeps metrics; the node knows nothing of their format. */
export interface RaftObserver {
  /** A proposal made on this node (as leader) was committed and applied here, `elapsedMs` after it was made. */
  committed(elapsedMs: number): void;
}

export interface NodeStatus extends Status {
  /** Cluster addresses of the members this node knows of (its own included when set). */
  addresses: Record<NodeId, string>;
  /** Milliseconds since this node last received a message from each peer it has heard from. */
  lastContactMs: Record<NodeId, number>;
}

/** Counters for tests and metrics. `persists` counts durable log writes (one fsync each). */
export interface NodeStats {
  persists: number;
  /** Log writes that only moved the commit index, not synced. */
  commitWrites: number;
  persistedEntries: number;
  applyBatches: number;
  appliedEntries: number;
  readRounds: number;
  snapshotsTaken: number;
  /** Log compactions at a checkpoint of the state machine, without a snapshot file. */
  checkpoints: number;
  snapshotsSent: number;
  snapshotsInstalled: number;
}

interface Pending {
  term: number;
  deadline: number;
  /** `performance.now()` when proposed: a measurement, so the monotonic timer, not the clock. */
  proposedAt: number;
  resolve(ok: boolean): void;
  reject(err: unknown): void;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

interface ReadRound {
  waiters: Waiter[];
  deadline: number;
}

interface SnapshotWaiter {
  resolve(meta: SnapshotMeta): void;
  reject(err: unknown): void;
}

/** What a snapshot stream is read from: a state view with the membership as of its index, or a file of the same state. */
type CapturedView = { header: SnapshotHeader; view: StateView } | SnapshotFile;

interface ViewWaiter {
  resolve(view: CapturedView): void;
  reject(err: unknown): void;
}

type Listener<A extends unknown[]> = (...args: A) => void;


const DEFAULTS = {
  tickMs: 100, electionTicks: 10, heartbeatTicks: 1, commitAnnounceMs: 5,
  snapshotThreshold: 8192, snapshotIntervalMs: 120_000, snapshotMaxLogBytes: 16 * 1024 * 1024, snapshotTrailing: 1024,
};

/**
 * The node runtime: owns the core, the log store, the state machine, the snapshot files and
 * the transport, and drives them with one loop (see DESIGN.md). Everything that touches the
 * core happens on the JavaScript thread between awaits, so the core needs no locking; the loop
 * processes one Ready at a time, so there is never more than one log write in flight, and
 * proposals that arrive during a write join the next one.
 */
export class RaftNode {
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly tickMs: number;
  private readonly electionTicks: number;
  private readonly snapshotThreshold: number;
  /** Applied entries after the latest snapshot at which the next automatic one starts. */
  private snapshotAfter: number;
  private readonly snapshotIntervalMs: number;
  /** When the threshold is next checked (clock time). */
  private nextSnapshotCheck: number;
  private readonly snapshotMaxLogBytes: number;
  /** The byte limit drawn for the next compaction. */
  private snapshotLogBytes: number;
  /** Bytes of the entries applied since the newest snapshot or checkpoint was started. */
  private appliedBytes = 0;
  private readonly random: () => number;
  private readonly snapshotTrailing: number;
  private readonly proposalTimeoutMs: number;
  private readonly restoreChunkBytes: number;

  private tickTimer: TimerHandle | undefined;
  private commitTimer: TimerHandle | undefined;
  private readonly commitAnnounceMs: number;
  /** When each recent tick ran, by the core's tick count (see leaseTrusted). */
  private readonly tickTimes = new Map<number, number>();
  private loop: Promise<void> | undefined;
  private wake = false;
  private closed = false;
  private failure: Error | undefined;
  private removed = false;
  private soft: SoftState = { leader: null, role: 'follower' };
  /** The last hard state written durably; a write that changes only its commit index need not be. */
  private durable: HardState = { term: 0, vote: null, commit: 0 };

  /** Proposals by log index, in proposal order (so deadlines are ascending). */
  private readonly pending = new Map<number, Pending>();
  /** Outcomes of conf changes applied in the Ready being handled, delivered once it is advanced. */
  private settled: Array<() => void> = [];
  /** Readers waiting for the next read round, then rounds waiting for their ReadState, then for apply. */
  private readWaiters: Waiter[] = [];
  private readonly readRounds = new Map<string, ReadRound>();
  private awaitingApply: Array<{ index: number; waiters: Waiter[] }> = [];
  private readSeq = 0;
  private transfers: Array<{ to: NodeId; deadline: number; resolve(): void; reject(err: unknown): void }> = [];

  private readonly peerAddresses = new Map<NodeId, string>();
  /**
   * Peers whose address left the map: their links close on the next tick. The apply that drops
   * an address runs beside the write of the Ready that sent them its commit, so closing at once
   * could discard a removed node's only news of its removal before the transport sends it.
   */
  private readonly leaving = new Set<NodeId>();
  private readonly lastContact = new Map<NodeId, number>();
  private readonly leaderListeners = new Set<Listener<[NodeId | null, boolean]>>();
  private readonly removedListeners = new Set<Listener<[]>>();
  private readonly applyListeners = new Set<Listener<[AppliedChange[]]>>();

  /** The snapshot the log store records: pruning never deletes its file, which a restart may need. */
  private snapshotMeta: SnapshotMeta | undefined;
  /** A snapshot file being written or a checkpoint being made: one at a time. */
  private snapshotting: Promise<void> | undefined;
  /** A snapshot file just written or a checkpoint just made, whose log compaction the loop does next; then its waiters resolve. */
  private compaction: { meta: SnapshotMeta; waiters: SnapshotWaiter[] } | undefined;
  private snapshotWaiters: SnapshotWaiter[] = [];
  /** Streams waiting for the loop to capture the state between two applies. */
  private viewWaiters: ViewWaiter[] = [];
  private snapshotSoon = false;
  private readonly sending = new Set<NodeId>();

  private readonly counters: NodeStats = {
    persists: 0, commitWrites: 0, persistedEntries: 0, applyBatches: 0, appliedEntries: 0, readRounds: 0, snapshotsTaken: 0, checkpoints: 0, snapshotsSent: 0, snapshotsInstalled: 0,
  };

  private constructor(
    readonly id: NodeId,
    private readonly options: RaftNodeOptions,
    private readonly core: RaftCore,
    private readonly logStore: LogStore,
    private readonly sm: StateMachine,
    private readonly snapshots: SnapshotDir,
    private readonly transport: Transport,
  ) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.tickMs = options.tickMs ?? DEFAULTS.tickMs;
    this.commitAnnounceMs = options.commitAnnounceMs ?? DEFAULTS.commitAnnounceMs;
    this.electionTicks = options.electionTicks ?? DEFAULTS.electionTicks;
    this.snapshotThreshold = options.snapshotThreshold ?? DEFAULTS.snapshotThreshold;
    this.random = options.raft?.random ?? Math.random;
    this.snapshotAfter = this.drawSnapshotAfter();
    this.snapshotIntervalMs = options.snapshotIntervalMs ?? DEFAULTS.snapshotIntervalMs;
    this.nextSnapshotCheck = this.drawSnapshotCheck();
    this.snapshotMaxLogBytes = options.snapshotMaxLogBytes ?? DEFAULTS.snapshotMaxLogBytes;
    this.snapshotLogBytes = this.drawSnapshotLogBytes();
    this.snapshotTrailing = options.snapshotTrailing ?? DEFAULTS.snapshotTrailing;
    this.proposalTimeoutMs = options.proposalTimeoutMs ?? 15_000;
    this.restoreChunkBytes = options.restoreChunkBytes ?? 512 * 1024;
  }

  /**
   * Opens the node's stores, recovers (a state machine behind the recorded snapshot is rebuilt
   * from the snapshot file), starts the transport and the ticks. A node that is the only voter
   * campaigns at once instead of waiting for an election timeout.
   */
  static async open(options: RaftNodeOptions): Promise<RaftNode> {
    // The state machine first: its database lock keeps a second process off this data
    // directory before anything else in it is opened (the log recovers its tail on open).
    const sm = await StateMachine.open(join(options.dataDir, 'state'), { ...DEFAULT_CHANGE_LOG_LIMITS, ...options.changeLog });
    let logStore: LogStore | undefined;
    try {
      const snapshots = await SnapshotDir.open(join(options.dataDir, 'snapshots'));
      logStore = options.logStore ?? (await openLogStore(options.dataDir));
      const stored = await logStore.load();
      if (stored.snapshot && sm.applied < stored.snapshot.index) {
        const file = snapshots.find(stored.snapshot.index, stored.snapshot.term);
        if (!file) throw new Error(`snapshot ${stored.snapshot.index}/${stored.snapshot.term} recorded by the log is missing from ${snapshots.dir}`);
        await sm.replaceFrom(new SnapshotReader(createReadStream(file.path)));
      }
      const fresh = !stored.hardState && !stored.snapshot && stored.entries.length === 0;
      const config: RaftConfig = {
        id: options.id,
        electionTicks: options.electionTicks ?? DEFAULTS.electionTicks,
        heartbeatTicks: options.heartbeatTicks ?? DEFAULTS.heartbeatTicks,
        preVote: true,
        checkQuorum: true,
        maxEntriesPerMsg: 1024,
        maxBytesPerMsg: 1024 * 1024,
        maxInflight: 256,
        random: Math.random,
        ...options.raft,
      };
      const core = new RaftCore(config, {
        ...(stored.hardState && { hardState: stored.hardState }),
        ...(stored.snapshot && { snapshot: stored.snapshot }),
        entries: stored.entries,
        applied: sm.applied,
        ...(fresh && options.bootstrap && { bootstrap: options.bootstrap }),
      });
      const node = new RaftNode(options.id, options, core, logStore, sm, snapshots, options.transport);
      node.snapshotMeta = stored.snapshot;
      // Entries applied before the restart but after the snapshot are in memory again.
      for (const e of stored.entries) {
        if (e.index > (stored.snapshot?.index ?? 0) && e.index <= sm.applied) node.appliedBytes += e.data.byteLength;
      }
      if (stored.hardState) node.durable = stored.hardState;
      await node.start();
      return node;
    } catch (err) {
      await sm.close();
      await logStore?.close();
      throw err;
    }
  }

  private async start(): Promise<void> {
    this.syncPeers();
    await this.transport.start({
      message: (m) => this.receive(m),
      snapshot: (m, data) => this.receiveSnapshot(m, data),
      unreachable: (id) => {
        if (this.closed) return;
        this.core.reportUnreachable(id);
        this.schedule();
      },
    });
    const conf = this.core.status().conf;
    if (conf.voters.length === 1 && conf.voters[0] === this.id) this.core.campaign();
    this.armTick();
    this.schedule();
  }

  // ---- public API -------------------------------------------------------------------------

  /**
   * Proposes a command (see command.ts) and resolves with its result once applied here: the
   * check-and-set outcome for a txn. Rejects with the core's NotLeaderError (which names the
   * leader) or ProposalDroppedError, when another entry took its index, or OutcomeUnknownError.
   */
  propose(data: Uint8Array): Promise<boolean> {
    try {
      this.assertOpen();
      const { index, term } = this.core.propose(data);
      return this.track(index, term);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Resolves when a linearizable read may proceed against the local state machine: a lease
   * read when the core says its lease holds, otherwise a ReadIndex round. Readers that arrive
   * before the next round starts share it; the round's index must then be applied here.
   */
  readBarrier(): Promise<void> {
    if (this.closed || this.removed || this.failure) return Promise.reject(this.stoppedError());
    return new Promise<void>((resolve, reject) => {
      this.readWaiters.push({ resolve, reject });
      this.schedule();
    });
  }

  /** Reads the locally applied state; linearizable only after `readBarrier()`. */
  async get(key: string): Promise<Buffer | null> {
    return this.sm.get(key);
  }

  /** Immediate children of `prefix` in the locally applied state, as `Storage.list` defines them. */
  async list(prefix: string): Promise<string[]> {
    return this.sm.list(prefix);
  }

  /** Every key of the locally applied state with its value, at one applied index (see StateMachine.scan). */
  scan(): Promise<StateScan> {
    return this.sm.scan();
  }

  /** Adds a non-voting member; resolves once the change is applied here. */
  addLearner(id: NodeId, address: string): Promise<void> {
    return this.changeConf({ type: 'addLearner', node: id, context: Buffer.from(address, 'utf8') });
  }

  promote(id: NodeId): Promise<void> {
    return this.changeConf({ type: 'promote', node: id });
  }

  removeNode(id: NodeId): Promise<void> {
    return this.changeConf({ type: 'remove', node: id });
  }

  /** Asks the leader (this node) to hand over to `to`; resolves once `to` leads. */
  async transferLeadership(to: NodeId): Promise<void> {
    this.assertOpen();
    this.core.transferLeadership(to);
    this.schedule();
    if (this.soft.leader === to) return;
    return new Promise<void>((resolve, reject) => {
      this.transfers.push({ to, deadline: this.clock.now() + 4 * this.electionTicks * this.tickMs, resolve, reject });
    });
  }

  /** Starts an election now (operators use it to recover a cluster faster than the timeout). */
  campaign(): void {
    this.assertOpen();
    this.core.campaign();
    this.schedule();
  }

  /** A member's address as `status().addresses` has it, without building the whole status. */
  addressOf(id: NodeId): string | undefined {
    if (id === this.id) return this.options.address ?? this.sm.addresses.get(this.id);
    return this.peerAddresses.get(id);
  }

  status(): NodeStatus {
    const now = this.clock.now();
    const addresses = Object.fromEntries(this.peerAddresses);
    const own = this.addressOf(this.id);
    if (own !== undefined) addresses[this.id] = own;
    const lastContactMs: Record<NodeId, number> = {};
    for (const [id, at] of this.lastContact) lastContactMs[id] = now - at;
    return { ...this.core.status(), addresses, lastContactMs };
  }

  /**
   * The read barrier of a leader that answers each of its writes only once it has applied it, and
   * that applied everything committed before its term before it served anything (ClusterNode's
   * activation does both). While its lease holds no other leader can commit, so what is committed
   * here but not yet applied is its own writes still unanswered: concurrent with any read that
   * starts now, which may therefore proceed at once (null) and never waits for an apply batch.
   * Without the lease, a read-index round (`readBarrier`).
   */
  leaderReadBarrier(): Promise<void> | null {
    if (this.soft.role === 'leader' && this.leaseTrusted() && this.core.leaseReadIndex() !== null) return null;
    return this.readBarrier();
  }

  /**
   * The core's lease counts ticks, which assumes they come on time; a stalled process (GC, a
   * paused VM, SIGSTOP) ticks late while the other members' clocks run on, and one of them may
   * have been elected meanwhile. So the lease is also measured in time: from when the heartbeats
   * a quorum answered were sent, it lasts as many tick lengths as the core allows it ticks.
   */
  private leaseTrusted(): boolean {
    const since = this.core.leaseStartTick();
    const sentAt = since === null ? undefined : this.tickTimes.get(since);
    return sentAt !== undefined && this.clock.now() - sentAt < (this.electionTicks - LEASE_MARGIN_TICKS) * this.tickMs;
  }

  /** The current term, without building a whole status. */
  get term(): number {
    return this.core.currentTerm;
  }

  get isLeader(): boolean {
    return this.soft.role === 'leader';
  }

  get leader(): NodeId | null {
    return this.soft.leader;
  }

  get applied(): number {
    return this.sm.applied;
  }

  stats(): NodeStats {
    return { ...this.counters };
  }

  /** Called with the new leader (or null) whenever it changes. Returns an unsubscribe function. */
  onLeaderChange(listener: (leader: NodeId | null, isSelf: boolean) => void): () => void {
    this.leaderListeners.add(listener);
    return () => this.leaderListeners.delete(listener);
  }

  /** Called once this node has applied its own removal; the node has stopped by then. */
  onRemoved(listener: () => void): () => void {
    this.removedListeners.add(listener);
    return () => this.removedListeners.delete(listener);
  }

  /**
   * Called after each apply batch with the writes it made, in order, on every node (a follower's
   * caches above the storage must invalidate these keys; a restore invalidates everything). A
   * change marked `own` settles a proposal of this node whose caller is still waiting for it:
   * that caller learns of the write from its own result.
   */
  onApply(listener: (changes: AppliedChange[]) => void): () => void {
    this.applyListeners.add(listener);
    return () => this.applyListeners.delete(listener);
  }

  /**
   * The changes this node applied from index `from` on, oldest first (at most `max`), read from
   * its retained window; an index past the applied one gives none yet. Throws
   * ChangesNotRetainedError when the window starts after `from`. With `onApply` for what comes
   * next, a reader can follow every change without a gap.
   */
  changesFrom(from: number, max?: number): Promise<AppliedChange[]> {
    return this.sm.changesFrom(from, max);
  }

  /** What the retained window of changes holds now. */
  changeWindow(): { first: number | undefined; last: number | undefined; entries: number; bytes: number } {
    return this.sm.changeWindow;
  }

  /** Takes a snapshot of the state as applied now (unless the newest file already is it). */
  snapshot(): Promise<SnapshotMeta> {
    if (this.closed || this.failure) return Promise.reject(this.stoppedError());
    return new Promise<SnapshotMeta>((resolve, reject) => {
      this.snapshotWaiters.push({ resolve, reject });
      this.schedule();
    });
  }

  /**
   * Streams a snapshot of the state as applied now (the snapshot file format) to `to`, straight
   * from the state machine rather than through a snapshot file: writing the file first and then
   * copying it cost a second pass over the disk and two syncs, while the destination syncs its own
   * copy anyway. The view is captured between two applies, so it is one point in the log. When
   * the newest snapshot file already holds the state as applied now, that file is streamed.
   */
  async writeSnapshot(to: Writable): Promise<SnapshotMeta> {
    const captured = await this.captureView();
    const { header } = captured;
    if ('path' in captured) {
      await pipeline((await openFile(captured.path, 'r')).createReadStream({ highWaterMark: 1024 * 1024 }), to);
    } else {
      try {
        await pipeline(snapshotStream(header, captured.view.records), to);
      } finally {
        await captured.view.close();
      }
    }
    return { index: header.index, term: header.term, conf: header.conf };
  }

  private captureView(): Promise<CapturedView> {
    if (this.closed || this.failure) return Promise.reject(this.stoppedError());
    return new Promise<CapturedView>((resolve, reject) => {
      this.viewWaiters.push({ resolve, reject });
      this.schedule();
    });
  }

  /**
   * Replaces the data of the whole cluster with a snapshot (as `writeSnapshot` produces). Only
   * on the leader: the file is verified, then carried through the log in chunks and switched in
   * by one commit entry, so every node swaps at the same index. Membership is kept.
   */
  async restoreSnapshot(from: Readable): Promise<void> {
    this.assertOpen();
    if (!this.isLeader) throw new NotLeaderError(this.soft.leader);
    const temp = this.snapshots.tempPath();
    try {
      await pipeline(from, (await openFile(temp, 'w')).createWriteStream());
      try {
        await new SnapshotReader(createReadStream(temp)).verify();
      } catch (err) {
        throw new SnapshotRestoreError(`not a valid snapshot: ${(err as Error).message}`, { cause: err });
      }
      const id = randomBytes(16).toString('hex');
      let seq = 0;
      let window: Array<Promise<boolean>> = [];
      // Bounded in flight: the chunks sit in the in-memory log until the post-restore snapshot.
      for await (const chunk of createReadStream(temp, { highWaterMark: this.restoreChunkBytes })) {
        window.push(this.propose(encodeRestoreChunk(id, seq++, chunk as Buffer)));
        if (window.length >= 8) {
          await Promise.all(window);
          window = [];
        }
      }
      await Promise.all(window);
      if (!(await this.propose(encodeRestoreCommit(id, seq)))) throw new SnapshotRestoreError('the snapshot failed to apply');
    } finally {
      await rm(temp, { force: true });
    }
  }

  /** Stops ticking, finishes the Ready in progress, and closes the transport and the stores. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.tickTimer?.cancel();
    this.commitTimer?.cancel();
    await this.loop;
    await this.snapshotting;
    this.rejectAll(new NodeClosedError());
    await this.transport.close();
    await this.sm.close();
    await this.logStore.close();
  }

  // ---- the drive loop ---------------------------------------------------------------------

  private schedule(): void {
    if (this.closed || this.removed || this.failure) return;
    if (this.loop) {
      // The running loop may be past the check that would have seen this work: run once more.
      this.wake = true;
      return;
    }
    // A macrotask, not a microtask: proposals from every request handled in this turn of the
    // event loop reach the core first and share the next Ready's single fsync.
    this.loop = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.run());
  }

  private async run(): Promise<void> {
    try {
      while (!this.closed && !this.removed) {
        this.wake = false;
        await this.runTasks();
        this.startReadRound();
        if (!this.core.hasReady()) break;
        const rd = this.core.ready();
        try {
          await this.handleReady(rd);
          this.core.advance(rd);
        } finally {
          // After advance, so a caller whose conf change resolves sees the core apply it.
          const settled = this.settled;
          this.settled = [];
          for (const settle of settled) settle();
        }
        if (this.removed) this.stopRemoved();
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.loop = undefined;
      if (this.wake) this.schedule();
      else this.armCommitAnnounce();
    }
  }

  private armCommitAnnounce(): void {
    if (this.commitTimer || !this.core.commitAnnouncePending || this.closed || this.removed || this.failure) return;
    this.commitTimer = this.clock.setTimer(this.commitAnnounceMs, () => {
      this.commitTimer = undefined;
      if (this.closed || this.removed || this.failure) return;
      this.core.announceCommit();
      this.schedule();
    });
  }

  /**
   * The Ready contract (types.ts): a leader's appends leave first, so followers write while we
   * do; entries committed earlier are applied while this Ready is written (after a snapshot
   * install, which replaces the state machine); every other message waits for the write.
   */
  private async handleReady(rd: Ready): Promise<void> {
    if (rd.softState) this.changeSoftState(rd.softState);
    if (rd.entries.length > 0) this.dropOverwritten(rd.entries);
    this.sendMessages(rd.earlyMessages);
    const written = this.persist(rd).then(() => this.sendMessages(rd.messages));
    if (rd.snapshot) await written;
    await Promise.all([written, rd.committed.length > 0 ? this.applyCommitted(rd.committed) : undefined]);
    if (rd.readStates.length > 0) this.answerReads(rd.readStates);
  }

  private async persist(rd: Ready): Promise<void> {
    if (!rd.snapshot && !rd.hardState && rd.entries.length === 0) return;
    // The log first, then the state machine: if we crash in between, the log records a
    // snapshot the state machine is behind, and open() rebuilds it from the file.
    // A snapshot at or below applied carries no data to install: the bootstrap membership
    // (index 0) is the only one the core hands out that way.
    const install = rd.snapshot && rd.snapshot.index > this.sm.applied ? rd.snapshot : undefined;
    const file = install && this.snapshots.find(install.index, install.term);
    if (install && !file) throw new Error(`core installed snapshot ${install.index}/${install.term} but its file is missing`);
    const hs = rd.hardState;
    if (hs && !rd.snapshot && rd.entries.length === 0 && hs.term === this.durable.term && hs.vote === this.durable.vote) {
      // Only the commit index moved: no fsync on the path of every write's acknowledgement.
      await this.logStore.saveCommit(hs);
      this.counters.commitWrites++;
    } else {
      await this.logStore.save(hs, rd.entries, rd.snapshot);
      if (hs) this.durable = hs;
      this.counters.persists++;
      this.counters.persistedEntries += rd.entries.length;
    }
    if (rd.snapshot) this.snapshotMeta = rd.snapshot;
    if (install && file) await this.installSnapshot(install, file.path);
  }

  private sendMessages(messages: Message[]): void {
    if (messages.length === 0) return;
    const plain: Message[] = [];
    for (const m of messages) {
      if (m.type === 'snapshot') this.sendSnapshot(m);
      else plain.push(m);
    }
    this.transport.send(plain);
  }

  private async installSnapshot(meta: SnapshotMeta, path: string): Promise<void> {
    await this.sm.replaceFrom(new SnapshotReader(createReadStream(path)));
    this.counters.snapshotsInstalled++;
    this.appliedBytes = 0;
    this.syncPeers();
    // Proposals at or below the snapshot may be inside it or not: nothing here can tell.
    for (const [index, p] of this.pending) {
      if (index > meta.index) continue;
      this.pending.delete(index);
      p.reject(new OutcomeUnknownError(`entry ${index} was overtaken by a snapshot at ${meta.index}`));
    }
    this.emitApply([{ index: meta.index, restored: true }]);
    this.resolveApplied();
    await this.snapshots.prune(this.snapshotMeta);
  }

  private async applyCommitted(entries: Entry[]): Promise<void> {
    const outcome = await this.sm.apply(entries, this.applyListeners.size > 0);
    this.counters.applyBatches++;
    this.counters.appliedEntries += entries.length;
    let own: Set<number> | undefined;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      this.appliedBytes += e.data.byteLength;
      if (e.type === 'conf') this.applyConfLocally(e);
      const p = this.pending.get(e.index);
      if (!p) continue;
      this.pending.delete(e.index);
      const ok = outcome.results[i] ?? true;
      if (p.term === e.term) {
        (own ??= new Set()).add(e.index);
        this.options.observer?.committed(performance.now() - p.proposedAt);
      }
      const settle = p.term === e.term ? () => p.resolve(ok) : () => p.reject(new ProposalDroppedError(`entry ${e.index} was applied from term ${e.term}, not ${p.term}`));
      // A conf change settles after advance(), so that its caller sees the core apply it too;
      // any other write is answered now, not after the log write running beside this apply.
      if (e.type === 'conf') this.settled.push(settle);
      else settle();
    }
    if (outcome.addressesChanged) this.syncPeers();
    if (outcome.restored) this.snapshotSoon = true;
    if (outcome.changes && outcome.changes.length > 0) {
      if (own) for (const c of outcome.changes) if (own.has(c.index) && 'ops' in c) c.own = true;
      this.emitApply(outcome.changes);
    }
    this.resolveApplied();
  }

  private applyConfLocally(e: Entry): void {
    const cc = decodeConfChange(e.data);
    if (cc.type === 'remove' && cc.node === this.id) this.removed = true;
  }

  /**
   * Work between Readies: log compaction after a snapshot file is written or a checkpoint made,
   * and starting snapshots and checkpoints.
   */
  private async runTasks(): Promise<void> {
    if (this.viewWaiters.length > 0) {
      const conf = this.core.status().conf;
      // The newest file, when it holds the state as applied now, is the same bytes for a
      // fraction of a scan's CPU (and is not pruned before it is opened: one newer file at most
      // can be written meanwhile, and the newest two are kept).
      const latest = this.snapshots.latest();
      const current = latest && latest.header.index === this.sm.applied ? latest : undefined;
      for (const w of this.viewWaiters.splice(0)) {
        if (current) {
          w.resolve(current);
          continue;
        }
        // A view that cannot be taken fails its stream, not the node.
        try {
          const view = this.sm.view();
          w.resolve({ header: { ...view.header, conf }, view });
        } catch (err) {
          w.reject(err);
        }
      }
    }
    const done = this.compaction;
    if (done) {
      this.compaction = undefined;
      const { meta } = done;
      // A leader's snapshot installed meanwhile is newer: recording this one would move the log back.
      if (!this.snapshotMeta || meta.index >= this.snapshotMeta.index) {
        const truncateTo = Math.max(0, Math.min(meta.index - this.snapshotTrailing, this.sm.applied));
        await this.logStore.compact(meta, truncateTo);
        this.snapshotMeta = meta;
        if (truncateTo > this.core.status().firstIndex - 1) this.core.compact(truncateTo);
        await this.snapshots.prune(meta);
      }
      for (const w of done.waiters) w.resolve(meta);
    }
    if (this.snapshotting) return;
    if (this.snapshotWaiters.length === 0 && !this.snapshotSoon && this.appliedBytes >= this.snapshotLogBytes) {
      this.startCheckpoint();
      return;
    }
    const latest = this.snapshots.latest();
    const due = this.snapshotDue(latest?.header.index ?? 0) || this.snapshotSoon;
    if (this.snapshotWaiters.length === 0 && !due) return;
    const waiters = this.snapshotWaiters;
    this.snapshotWaiters = [];
    this.snapshotSoon = false;
    if (!due && latest && latest.header.index === this.sm.applied) {
      for (const w of waiters) w.resolve({ index: latest.header.index, term: latest.header.term, conf: latest.header.conf });
      return;
    }
    this.startSnapshot(waiters);
  }

  private drawSnapshotLogBytes(): number {
    return this.snapshotMaxLogBytes + Math.floor(this.random() * (this.snapshotMaxLogBytes / 2));
  }

  private drawSnapshotAfter(): number {
    return this.snapshotThreshold + Math.floor(this.random() * (this.snapshotThreshold / 2));
  }

  private drawSnapshotCheck(): number {
    return this.clock.now() + this.snapshotIntervalMs + Math.floor(this.random() * this.snapshotIntervalMs);
  }

  /** Whether an automatic snapshot is due, the newest one being at `latestIndex`. */
  private snapshotDue(latestIndex: number): boolean {
    if (this.snapshotIntervalMs > 0) {
      if (this.clock.now() < this.nextSnapshotCheck) return false;
      this.nextSnapshotCheck = this.drawSnapshotCheck();
    }
    return this.sm.applied - latestIndex >= this.snapshotAfter;
  }

  /**
   * Makes the state machine durable through its applied index, in the background; the loop then
   * compacts the log there as after a snapshot. Nothing is copied: a restart finds the state
   * machine at or past that index (see open), and a follower behind the compacted log gets a
   * snapshot written for it (see sendSnapshot).
   */
  private startCheckpoint(): void {
    this.snapshotLogBytes = this.drawSnapshotLogBytes();
    this.appliedBytes = 0;
    // The membership as of the applied index the checkpoint records, read in the same turn.
    const conf = this.core.status().conf;
    this.snapshotting = this.sm.checkpoint().then(
      ({ index, term }) => {
        this.counters.checkpoints++;
        this.compaction = { meta: { index, term, conf }, waiters: [] };
      },
      (err: unknown) => {
        this.logger.error('raft checkpoint failed', { error: err instanceof Error ? err.message : String(err) });
      },
    ).finally(() => {
      this.snapshotting = undefined;
      this.schedule();
    });
  }

  /** Captures the applied state now (between applies) and writes it to a file in the background. */
  private startSnapshot(waiters: SnapshotWaiter[]): void {
    this.snapshotAfter = this.drawSnapshotAfter();
    this.snapshotLogBytes = this.drawSnapshotLogBytes();
    this.appliedBytes = 0;
    const view = this.sm.view();
    const header: SnapshotHeader = { ...view.header, conf: this.core.status().conf };
    const write = async () => {
      const writer = await SnapshotWriter.create(this.snapshots.tempPath(), header);
      try {
        for await (const batch of view.records) await writer.add(batch);
        await writer.finish(this.snapshots.pathFor(header));
      } catch (err) {
        await writer.abort();
        throw err;
      }
      await this.snapshots.added(header);
    };
    this.snapshotting = write().then(
      () => {
        this.counters.snapshotsTaken++;
        this.compaction = { meta: { index: header.index, term: header.term, conf: header.conf }, waiters };
      },
      (err: unknown) => {
        this.logger.error('raft snapshot failed', { error: err instanceof Error ? err.message : String(err) });
        for (const w of waiters) w.reject(err);
      },
    ).finally(() => {
      this.snapshotting = undefined;
      this.schedule();
    });
  }

  /** Streams the newest snapshot file; its meta replaces the core's (which is never newer). */
  private sendSnapshot(m: Message): void {
    if (this.sending.has(m.to)) return;
    const file = this.snapshots.latest();
    // No file at all: a node that joined with no state (the core's snapshot is the bootstrap
    // membership). A file older than the core's snapshot: the log was compacted at a checkpoint
    // past it, so the follower could not go on from the log after installing it. Either way, take
    // one now; the core retries on the next probe.
    if (!file || file.header.index < (m.snapshot?.index ?? 0)) {
      this.snapshotSoon = true;
      this.core.reportSnapshot(m.to, false);
      return;
    }
    const { header, path } = file;
    const msg: Message = { ...m, snapshot: { index: header.index, term: header.term, conf: header.conf } };
    this.sending.add(m.to);
    this.transport
      .sendSnapshot(msg, () => createReadStream(path, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>)
      .then(
        () => {
          this.counters.snapshotsSent++;
          return true;
        },
        (err: unknown) => {
          this.logger.warn('raft snapshot send failed', { to: m.to, error: err instanceof Error ? err.message : String(err) });
          return false;
        },
      )
      .then((ok) => {
        this.sending.delete(m.to);
        if (this.closed || this.removed) return;
        this.core.reportSnapshot(m.to, ok);
        this.schedule();
      });
  }

  private async receiveSnapshot(m: Message, data: AsyncIterable<Buffer>): Promise<void> {
    if (this.closed || this.removed) throw this.stoppedError();
    const file = await this.snapshots.receive(data);
    this.lastContact.set(m.from, this.clock.now());
    if (this.closed) return;
    const { index, term, conf } = file.header;
    this.core.step({ ...m, snapshot: { index, term, conf } });
    this.schedule();
  }

  private receive(m: Message): void {
    if (this.closed || this.removed || this.failure) return;
    this.lastContact.set(m.from, this.clock.now());
    this.core.step(m);
    this.schedule();
  }

  // ---- proposals, reads, leadership ---------------------------------------------------------

  private track(index: number, term: number): Promise<boolean> {
    this.schedule();
    return new Promise<boolean>((resolve, reject) => {
      this.pending.set(index, { term, deadline: this.clock.now() + this.proposalTimeoutMs, proposedAt: performance.now(), resolve, reject });
    });
  }

  private async changeConf(cc: ConfChange): Promise<void> {
    this.assertOpen();
    const { index, term } = this.core.proposeConfChange(cc);
    await this.track(index, term);
  }

  /** An entry persisted at a pending proposal's index with another term means the proposal lost its place. */
  private dropOverwritten(entries: Entry[]): void {
    if (this.pending.size === 0) return;
    for (const e of entries) {
      const p = this.pending.get(e.index);
      if (p && p.term !== e.term) {
        this.pending.delete(e.index);
        p.reject(new ProposalDroppedError(`a leader of term ${e.term} replaced entry ${e.index}`));
      }
    }
  }

  private startReadRound(): void {
    if (this.readWaiters.length === 0) return;
    const waiters = this.readWaiters;
    this.readWaiters = [];
    const context = `${this.id}:${++this.readSeq}`;
    try {
      this.core.readIndex(context, this.core.leaseValid() ? 'lease' : 'safe');
    } catch (err) {
      for (const w of waiters) w.reject(err);
      return;
    }
    this.counters.readRounds++;
    this.readRounds.set(context, { waiters, deadline: this.clock.now() + 2 * this.electionTicks * this.tickMs });
  }

  private answerReads(states: ReadState[]): void {
    for (const rs of states) {
      const round = this.readRounds.get(rs.context);
      if (!round) continue;
      this.readRounds.delete(rs.context);
      this.awaitingApply.push({ index: rs.index, waiters: round.waiters });
    }
    this.resolveApplied();
  }

  private resolveApplied(): void {
    if (this.awaitingApply.length === 0) return;
    const applied = this.sm.applied;
    const still: typeof this.awaitingApply = [];
    for (const a of this.awaitingApply) {
      if (a.index <= applied) for (const w of a.waiters) w.resolve();
      else still.push(a);
    }
    this.awaitingApply = still;
  }

  private changeSoftState(s: SoftState): void {
    const leaderChanged = s.leader !== this.soft.leader;
    const becameLeader = s.role === 'leader' && this.soft.role !== 'leader';
    this.soft = { ...s };
    if (s.role !== 'leader') {
      // Rounds only start while the core leads (readIndex throws otherwise), and a core that
      // stops leading drops them: they will never be answered. Reads are safe to retry.
      for (const [context, round] of this.readRounds) {
        this.readRounds.delete(context);
        for (const w of round.waiters) w.reject(new RaftTimeoutError('leadership changed during a read barrier; retry'));
      }
    }
    if (becameLeader) this.announceAddresses();
    if (leaderChanged) {
      this.transfers = this.transfers.filter((t) => {
        if (t.to !== s.leader) return true;
        t.resolve();
        return false;
      });
      for (const l of this.leaderListeners) l(s.leader, s.leader === this.id);
    }
  }

  /**
   * A new leader makes sure the replicated address map holds its own address and every member
   * address it knows that the map lacks (the voters of a multi-node bootstrap are known only
   * from options until then). See DESIGN.md, "Addresses".
   */
  private announceAddresses(): void {
    const missing = new Map<NodeId, string>();
    const own = this.options.address;
    if (own !== undefined && this.sm.addresses.get(this.id) !== own) missing.set(this.id, own);
    for (const [id, address] of this.peerAddresses) if (!this.sm.addresses.has(id)) missing.set(id, address);
    for (const [id, address] of missing) {
      this.propose(encodeAddress(id, address)).catch((err: unknown) => {
        this.logger.debug('raft address announcement not applied', { node: id, error: err instanceof Error ? err.message : String(err) });
      });
    }
  }

  private syncPeers(): void {
    const wanted = new Map<NodeId, string>(Object.entries(this.options.peers ?? {}));
    for (const [id, address] of this.sm.addresses) wanted.set(id, address);
    wanted.delete(this.id);
    for (const [id, address] of wanted) {
      if (this.peerAddresses.get(id) !== address) this.transport.setPeer(id, address);
    }
    for (const id of this.peerAddresses.keys()) if (!wanted.has(id)) this.leaving.add(id);
    this.peerAddresses.clear();
    for (const [id, address] of wanted) {
      this.peerAddresses.set(id, address);
      this.leaving.delete(id);
    }
  }

  // ---- time ---------------------------------------------------------------------------------

  private recordTick(at: number): void {
    const tick = this.core.tickCount;
    this.tickTimes.set(tick, at);
    this.tickTimes.delete(tick - this.electionTicks - 1);
  }

  private armTick(): void {
    this.tickTimer = this.clock.setTimer(this.tickMs, () => {
      if (this.closed || this.removed || this.failure) return;
      const now = this.clock.now();
      for (const id of this.leaving) this.transport.removePeer(id);
      this.leaving.clear();
      this.core.tick();
      this.recordTick(now);
      this.expire();
      this.schedule();
      this.armTick();
    });
  }

  /** Deadlines are checked once per tick rather than with a timer per request. */
  private expire(): void {
    const now = this.clock.now();
    for (const [index, p] of this.pending) {
      if (p.deadline > now) break;
      this.pending.delete(index);
      p.reject(new OutcomeUnknownError(`entry ${index} was not applied within ${this.proposalTimeoutMs} ms; it may still be`));
    }
    for (const [context, round] of this.readRounds) {
      if (round.deadline > now) break;
      this.readRounds.delete(context);
      for (const w of round.waiters) w.reject(new RaftTimeoutError('read barrier timed out (no quorum?)'));
    }
    this.transfers = this.transfers.filter((t) => {
      if (t.deadline > now) return true;
      t.reject(new RaftTimeoutError(`leadership did not move to ${t.to} in time`));
      return false;
    });
  }

  // ---- stopping -----------------------------------------------------------------------------

  private stopRemoved(): void {
    this.tickTimer?.cancel();
    this.commitTimer?.cancel();
    this.logger.info('raft node removed from the cluster; stopping', { id: this.id });
    this.rejectAll(new NodeRemovedError(this.id));
    for (const l of this.removedListeners) l();
  }

  private fail(err: unknown): void {
    this.failure = err instanceof Error ? err : new Error(String(err));
    this.tickTimer?.cancel();
    this.commitTimer?.cancel();
    this.logger.error('raft node stopped after a storage failure', { error: this.failure.message });
    this.rejectAll(this.failure);
  }

  private rejectAll(err: Error): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const w of this.readWaiters) w.reject(err);
    this.readWaiters = [];
    for (const round of this.readRounds.values()) for (const w of round.waiters) w.reject(err);
    this.readRounds.clear();
    for (const a of this.awaitingApply) for (const w of a.waiters) w.reject(err);
    this.awaitingApply = [];
    for (const t of this.transfers) t.reject(err);
    this.transfers = [];
    for (const w of this.snapshotWaiters) w.reject(err);
    for (const w of this.viewWaiters.splice(0)) w.reject(err);
    this.snapshotWaiters = [];
  }

  private emitApply(changes: AppliedChange[]): void {
    for (const l of this.applyListeners) {
      try {
        l(changes);
      } catch (err) {
        this.logger.error('raft apply listener threw', { error: err instanceof Error ? err.message : String(err) });
      }
    }
  }

  private stoppedError(): Error {
    if (this.failure) return this.failure;
    if (this.removed) return new NodeRemovedError(this.id);
    return new NodeClosedError();
  }

  private assertOpen(): void {
    if (this.closed || this.removed || this.failure) throw this.stoppedError();
  }
}
