import { StrongroomError, silentLogger, systemClock, type Clock, type CommittedChange, type Logger, type TimerHandle } from '@strongroom/base';
import { FeedSourceChangedError } from '@strongroom/cluster';
import { ChangesNotRetainedError } from '@strongroom/raft';
import { checkStoredTree, isCorrupt, type CorruptionReport } from './check';
import { LEAVES, TREES } from './layout';
import { DEFAULT_HISTORY_LENGTH, MerkleCorruptionError, MerkleTree } from './merkle-tree';
import { rebuildLeaves, type ReindexDiff, type ReindexProgress, type StorageScan } from './rebuild';
import { openMerkleDb, REINDEX_KEY, type MerkleDb } from './store';

/** What the indexer follows: the node's commit feed (CommitFeed), or a fake in tests. */
export interface MerkleFeed {
  /** Every change from `from` on, without gap or repeat, until `signal` aborts (see CommitFeed.follow). */
  follow(from: number, signal?: AbortSignal): AsyncIterable<readonly CommittedChange[]>;
}

export interface ReindexRequest {
  /** Also name the keys that differed (slower). */
  diff?: boolean;
  /** Rewrite every leaf, and restart a reindex already running rather than join it. */
  force?: boolean;
}

export interface MerkleIndexerOptions {
  /** The node-local directory of the index's LevelDB. */
  dir: string;
  feed: MerkleFeed;
  /** A consistent scan of storage for a reindex (RaftNode.scan). */
  scan: () => Promise<StorageScan>;
  /** Roots-before kept (Vault's logshipper_buffer_length). */
  historyLength?: number;
  /** How often changed pages are written (Vault writes some every 200 ms). */
  flushIntervalMs?: number;
  /** The wait before following again after the feed's node changed or a failure. */
  retryMs?: number;
  /** Opens without following the feed, until `resume()`. */
  suspended?: boolean;
  clock?: Clock;
  logger?: Logger;
}

export interface ReindexStatus {
  running: boolean;
  diff: boolean;
  force: boolean;
  progress: ReindexProgress;
  startedAt?: string;
  finishedAt?: string;
  /** What the last finished reindex found different. */
  result?: ReindexDiff;
  error?: string;
}

export interface MerkleStatus {
  /** The composite root (hex), as status's `merkle_root`. */
  merkleRoot: string;
  /** The index of the last change in the tree. */
  applied: number;
  lastReindexEpoch?: string;
  /** From the last merkle-check on this node since it started. */
  corrupted: boolean;
  lastCorruptionCheckEpoch?: string;
  reindex?: ReindexStatus;
}

/** What waits on a suspended index is told so: it is not coming up to date until resumed. */
export class MerkleIndexSuspendedError extends Error {
  constructor() {
    super('the Merkle index is not following the commit feed: replication is disabled on this cluster');
    this.name = 'MerkleIndexSuspendedError';
  }
}

/** merkle-check while a reindex rewrites the store would report its half-built state. */
export class MerkleReindexRunningError extends StrongroomError {
  constructor() {
    super('merkle_reindex_running', 409, 'a reindex of the Merkle index is running; check again when it is done');
  }
}

/**
 * Owns a node's Merkle tree: follows the commit feed from the tree's checkpoint, applies each
 * change, writes changed pages every `flushIntervalMs`, and rebuilds from a storage scan when
 * the feed cannot say what changed (the index left its window, a restore or snapshot install) or
 * when asked. A reindex recorded in the store runs again at open. One per node, on every node.
 *
 * While suspended it neither follows nor reindexes (a reindex under way stops, and runs again
 * on resume); on resume it follows on from its checkpoint, or rebuilds if the feed no longer
 * holds the changes since. `whenApplied` fails while it is suspended, and suspending fails the
 * waiters: nothing would answer them, and a replication stream or sync waiting there must end.
 */
export class MerkleIndexer {
  private closed = false;
  private suspendedFlag: boolean;
  private loop: Promise<void> = Promise.resolve();
  private following: AbortController | undefined;
  private reindexing: AbortController | undefined;
  private wanted: Required<ReindexRequest> | undefined;
  /** Ends the loop's rest (a pause, or a suspension) early. */
  private wake: (() => void) | undefined;
  private flushTimer: TimerHandle | undefined;
  private waiters: Array<{ index: number; resolve: () => void; reject: (err: Error) => void }> = [];
  private reindexState: ReindexStatus | undefined;
  private lastCheck: { epoch: string; corrupted: boolean } | undefined;
  private readonly clock: Clock;
  private readonly logger: Logger;

  private constructor(private readonly db: MerkleDb, readonly tree: MerkleTree, private readonly options: MerkleIndexerOptions) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.suspendedFlag = options.suspended ?? false;
  }

  static async open(options: MerkleIndexerOptions): Promise<MerkleIndexer> {
    const db = await openMerkleDb(options.dir);
    let indexer: MerkleIndexer;
    try {
      const tree = await MerkleTree.open(db, options.historyLength ?? DEFAULT_HISTORY_LENGTH);
      indexer = new MerkleIndexer(db, tree, options);
      const marker = await db.get(REINDEX_KEY);
      if (marker) indexer.wanted = parseRequest(marker);
      else if (tree.wantsRebuild) indexer.wanted = { diff: false, force: true };
    } catch (err) {
      await db.close();
      throw err;
    }
    indexer.tree.onCorruption = (err) => indexer.corruptionFound(err);
    indexer.loop = indexer.run();
    indexer.scheduleFlush();
    return indexer;
  }

  get applied(): number {
    return this.tree.applied;
  }

  /** A reindex is asked for or running: the tree is not current, and its leaves are being rewritten. */
  get reindexPending(): boolean {
    return this.wanted !== undefined || this.reindexing !== undefined;
  }

  /** The composite root before the change at `index` (see MerkleTree.rootBefore). */
  rootBefore(index: number): Buffer | undefined {
    return this.tree.rootBefore(index);
  }

  /** Resolves once the tree reflects `index` (a WAL sender waits here for the root before its next entry). */
  whenApplied(index: number): Promise<void> {
    if (this.tree.applied >= index) return Promise.resolve();
    if (this.closed) return Promise.reject(new Error('the Merkle index is closed'));
    if (this.suspendedFlag) return Promise.reject(new MerkleIndexSuspendedError());
    return new Promise((resolve, reject) => this.waiters.push({ index, resolve, reject }));
  }

  /**
   * Asks for a rebuild from storage, in the background (progress in `status().reindex`). Joins
   * one already running unless `force`, which restarts it.
   */
  reindex(request: ReindexRequest = {}): void {
    if (this.closed) throw new Error('the Merkle index is closed');
    if (this.reindexing && !request.force) return;
    this.wanted = { diff: request.diff ?? false, force: request.force ?? false };
    this.reindexing?.abort();
    this.following?.abort();
    this.wake?.();
  }

  get suspended(): boolean {
    return this.suspendedFlag;
  }

  /** Stops following the feed (and a reindex under way) until `resume()`. */
  suspend(): void {
    if (this.suspendedFlag || this.closed) return;
    this.suspendedFlag = true;
    this.reindexing?.abort();
    this.following?.abort();
    this.wake?.();
    for (const w of this.waiters.splice(0)) w.reject(new MerkleIndexSuspendedError());
  }

  /** Follows the feed again from the checkpoint (see the class). */
  resume(): void {
    if (!this.suspendedFlag) return;
    this.suspendedFlag = false;
    this.wake?.();
  }

  /** A diff read a damaged entry: the store is rebuilt, as when the follower finds one. */
  private corruptionFound(err: MerkleCorruptionError): void {
    if (this.closed || this.reindexPending) return;
    this.logger.error('merkle index store is damaged; reindexing', { error: err.message });
    this.reindex({ force: true });
  }

  /** Flushes, then checks the stored tree (check.ts). */
  async check(): Promise<CorruptionReport> {
    if (this.reindexPending) throw new MerkleReindexRunningError();
    await this.tree.flush();
    const report = await checkStoredTree(this.db, new Date(this.clock.now()).toISOString());
    this.lastCheck = { epoch: report.merkle_corruption_report.last_corruption_check_epoch, corrupted: isCorrupt(report) };
    return report;
  }

  status(): MerkleStatus {
    return {
      merkleRoot: this.tree.root.toString('hex'),
      applied: this.tree.applied,
      ...(this.tree.reindexedAt ? { lastReindexEpoch: this.tree.reindexedAt } : {}),
      corrupted: this.lastCheck?.corrupted ?? false,
      ...(this.lastCheck ? { lastCorruptionCheckEpoch: this.lastCheck.epoch } : {}),
      ...(this.reindexState ? { reindex: { ...this.reindexState, progress: { ...this.reindexState.progress } } } : {}),
    };
  }

  /** Writes what changed now rather than at the next interval. */
  async flush(): Promise<void> {
    if (this.reindexPending) return;
    await this.tree.flush();
  }

  /** Stops following, flushes (unless a reindex is unfinished: it runs again at open) and closes the store. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.flushTimer?.cancel();
    this.reindexing?.abort();
    this.following?.abort();
    this.wake?.();
    await this.loop;
    for (const w of this.waiters.splice(0)) w.reject(new Error('the Merkle index is closed'));
    if (!this.wanted) await this.tree.flush().catch((err: unknown) => this.logger.warn('merkle index flush failed at close', { error: errorText(err) }));
    await this.tree.freeze();
    await this.db.close();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        if (this.suspendedFlag) {
          await this.rest();
          continue;
        }
        if (this.wanted) {
          await this.runReindex();
          continue;
        }
        await this.follow();
        if (!this.wanted) await this.pause();
      } catch (err) {
        if (this.closed) break;
        // What the stop itself interrupted (a reindex's scan) runs again on resume; damage found
        // on the way still asks for a rebuild, below.
        if (this.suspendedFlag && !(err instanceof ChangesNotRetainedError) && !(err instanceof MerkleCorruptionError)) continue;
        if (err instanceof ChangesNotRetainedError) {
          this.logger.info('merkle index is behind the commit feed\'s window; reindexing', { applied: this.tree.applied });
          this.wanted ??= { diff: false, force: false };
        } else if (err instanceof MerkleCorruptionError) {
          this.logger.error('merkle index store is damaged; reindexing', { error: err.message });
          this.wanted ??= { diff: false, force: true };
        } else if (err instanceof FeedSourceChangedError) {
          await this.pause();
        } else if (!this.wanted) {
          this.logger.warn('merkle index stopped following the commit feed; retrying', { error: errorText(err) });
          await this.pause();
        }
      }
    }
  }

  private async follow(): Promise<void> {
    const following = new AbortController();
    this.following = following;
    try {
      for await (const batch of this.options.feed.follow(this.tree.applied + 1, following.signal)) {
        const changes = batch.filter((change): change is Extract<CommittedChange, { ops: unknown }> => 'ops' in change && change.index > this.tree.applied);
        await this.tree.prefetch(changes);
        if (this.closed) return;
        for (const change of batch) {
          if (change.index <= this.tree.applied) continue;
          if ('restored' in change) {
            // The data was replaced wholesale: only a scan says what it is now.
            this.wanted ??= { diff: false, force: true };
            break;
          }
          this.tree.apply(change.index, change.ops);
        }
        this.wakeWaiters();
        if (this.wanted || this.closed) return;
      }
    } finally {
      this.following = undefined;
    }
  }

  private async runReindex(): Promise<void> {
    const request = this.wanted as Required<ReindexRequest>;
    this.wanted = undefined;
    const abort = new AbortController();
    this.reindexing = abort;
    const progress: ReindexProgress = {
      phase: 'scan', keysScanned: 0, keysTotal: TREES.reduce((n, t) => n + this.tree.count(t), 0), leavesBuilt: 0, leavesTotal: TREES.length * LEAVES,
    };
    const state: ReindexStatus = { running: true, ...request, progress, startedAt: this.now() };
    this.reindexState = state;
    try {
      await this.tree.freeze();
      // Recorded before anything is rewritten: a restart in the middle runs it again.
      await this.db.put(REINDEX_KEY, Buffer.from(JSON.stringify(request)));
      const scan = await abortable(this.options.scan(), abort.signal);
      const { rebuilt, diff } = await rebuildLeaves(this.db, scan, { ...request, progress, signal: abort.signal });
      const finishedAt = this.now();
      await this.tree.install(rebuilt, finishedAt);
      Object.assign(state, { running: false, finishedAt, result: diff });
      // Every page and every differing leaf was just rewritten from storage.
      if (this.lastCheck) this.lastCheck = { ...this.lastCheck, corrupted: false };
      this.logger.info('merkle index rebuilt from storage', { index: rebuilt.index, leaves_rewritten: diff.leavesRewritten });
      this.wakeWaiters();
    } catch (err) {
      // Asked again meanwhile (force), or tried again after a pause.
      this.wanted ??= request;
      Object.assign(state, { running: false, error: errorText(err) });
      if (!this.closed && !abort.signal.aborted) this.logger.warn('merkle reindex failed; retrying', { error: errorText(err) });
      throw err;
    } finally {
      this.reindexing = undefined;
    }
  }

  /** Waits `retryMs`, or less if closed, suspended or asked to reindex. */
  private pause(): Promise<void> {
    if (this.closed || this.wanted || this.suspendedFlag) return Promise.resolve();
    return this.rest(this.options.retryMs ?? 500);
  }

  /** Waits until `wake` is called, or `ms` at most when given. */
  private rest(ms?: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = ms === undefined ? undefined : this.clock.setTimer(ms, () => this.wake?.());
      this.wake = () => {
        timer?.cancel();
        this.wake = undefined;
        resolve();
      };
    });
  }

  private scheduleFlush(): void {
    this.flushTimer = this.clock.setTimer(this.options.flushIntervalMs ?? 200, () => {
      void this.flush()
        .catch((err: unknown) => this.logger.warn('merkle index flush failed', { error: errorText(err) }))
        .finally(() => {
          if (!this.closed) this.scheduleFlush();
        });
    });
  }

  private wakeWaiters(): void {
    const applied = this.tree.applied;
    const still: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (w.index <= applied) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }

  private now(): string {
    return new Date(this.clock.now()).toISOString();
  }
}

function parseRequest(raw: Buffer): Required<ReindexRequest> {
  try {
    const r = JSON.parse(raw.toString('utf8')) as ReindexRequest;
    return { diff: r.diff === true, force: r.force === true };
  } catch {
    return { diff: false, force: true };
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `scan` unless `signal` aborts first; a scan that arrives after that is closed unread. */
function abortable(scan: Promise<StorageScan>, signal: AbortSignal): Promise<StorageScan> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<StorageScan>((resolve, reject) => {
    const onAbort = () => {
      reject(signal.reason);
      void scan.then((late) => late.close?.(), () => undefined).catch(() => undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    scan.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (!signal.aborted) resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
