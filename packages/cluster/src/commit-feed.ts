import type { CommitSubscription, CommittedChange } from '@strongroom/base';
import type { LogicalChange } from '@strongroom/core';
import type { RaftNode } from '@strongroom/raft';

/** What the feed reads: a Raft node's retained window of applied changes and its apply notices. */
export type FeedSource = Pick<RaftNode, 'changesFrom' | 'changeWindow' | 'onApply' | 'applied'>;

/** Live batches a reader of `follow` may fall behind by before they are read from the window instead. */
const FOLLOW_QUEUE_BATCHES = 1024;

/** The node under the feed went away or was replaced (a join, a close): a reader starts again. */
export class FeedSourceChangedError extends Error {
  constructor() {
    super('the commit feed\'s node changed; read again from the last index handled');
    this.name = 'FeedSourceChangedError';
  }
}

/**
 * Every committed change to this node's physical storage, in commit order: the retained window
 * on disk (bounded by entries and bytes, read from any index still in it, kept across restarts;
 * an index that left it is ChangesNotRetainedError) and the live edge after it. The same on every
 * member, since each applies the same entries; a snapshot a member installs, like a restore,
 * appears as `restored` and starts its window over.
 *
 * The node underneath is attached when this server creates or joins a cluster. Calls go down to
 * it; what it applies comes up only through here, to whoever subscribed (the core's cache first).
 */
export class CommitFeed implements CommitSubscription {
  private node: FeedSource | null = null;
  private detach: (() => void) | undefined;
  private readonly listeners = new Set<(changes: readonly CommittedChange[]) => void>();
  /** Bumped at every attach, so that a reader notices a node change between two reads. */
  private generation = 0;

  attach(node: FeedSource | null): void {
    this.detach?.();
    this.detach = undefined;
    this.node = node;
    this.generation++;
    if (node) this.detach = node.onApply((changes) => this.emit(changes));
    // Readers waiting for the next batch learn of the change now.
    this.emit([]);
  }

  subscribe(listener: (changes: readonly CommittedChange[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The index of the last change applied here, 0 before this node belongs to a cluster. */
  get applied(): number {
    return this.node?.applied ?? 0;
  }

  /** What the retained window holds now. */
  window(): { first: number | undefined; last: number | undefined; entries: number; bytes: number } {
    return this.node?.changeWindow() ?? { first: undefined, last: undefined, entries: 0, bytes: 0 };
  }

  /** Up to `max` retained changes from index `from` on, oldest first. */
  read(from: number, max = 1024): Promise<CommittedChange[]> {
    if (!this.node) return Promise.resolve([]);
    return this.node.changesFrom(from, max);
  }

  /**
   * Every change from index `from` on, in batches, without a gap or a repeat: first what the
   * window holds, then each batch as it applies. Ends when `signal` aborts; throws
   * ChangesNotRetainedError when `from` has left the window, or FeedSourceChangedError when the
   * node underneath changes.
   */
  async *follow(from: number, signal?: AbortSignal): AsyncGenerator<CommittedChange[]> {
    const node = this.node;
    const generation = this.generation;
    if (!node) throw new FeedSourceChangedError();
    // Listen before reading the window: whatever applies meanwhile is then in one or the other
    // (or both, and skipped by index). Live batches wait here only up to a bound; past it they are
    // dropped and read again from the window, so a slow reader costs disk reads, not memory.
    let queue: CommittedChange[][] = [];
    let overflowed = false;
    let wake: (() => void) | undefined;
    // The reader wakes in the next check phase, not as a microtask of the apply: the apply has just
    // settled its writers' proposals, and their replies (microtasks of this turn) go out first
    // rather than taking turns with this reader's work.
    let nudged = false;
    const nudge = (): void => {
      if (nudged) return;
      nudged = true;
      setImmediate(() => {
        nudged = false;
        wake?.();
      });
    };
    const off = this.subscribe((changes) => {
      if (queue.length >= FOLLOW_QUEUE_BATCHES) {
        queue = [];
        overflowed = true;
      } else {
        queue.push(changes as CommittedChange[]);
      }
      nudge();
    });
    const onAbort = () => wake?.();
    signal?.addEventListener('abort', onAbort);
    const current = () => {
      if (this.generation !== generation) throw new FeedSourceChangedError();
    };
    try {
      let next = from;
      for (;;) {
        overflowed = false;
        for (;;) {
          const batch = await node.changesFrom(next, 1024);
          current();
          if (batch.length === 0) break;
          next = (batch[batch.length - 1] as CommittedChange).index + 1;
          yield batch;
          if (signal?.aborted) return;
        }
        while (!overflowed) {
          while (queue.length > 0 && !overflowed) {
            const fresh = (queue.shift() as CommittedChange[]).filter((c) => c.index >= next);
            if (fresh.length === 0) continue;
            // Checked before each yield: a batch queued after the node was replaced is another's.
            current();
            next = (fresh[fresh.length - 1] as CommittedChange).index + 1;
            yield fresh;
            if (signal?.aborted) return;
          }
          if (signal?.aborted) return;
          current();
          if (overflowed) break;
          await new Promise<void>((resolve) => { wake = resolve; });
          wake = undefined;
        }
      }
    } finally {
      off();
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private emit(changes: readonly CommittedChange[]): void {
    for (const listener of this.listeners) {
      try {
        listener(changes);
      } catch {
        // A subscriber's fault is its own: the others, and the apply loop, go on.
      }
    }
  }
}

/** Who reads physical changes logically: the core, which knows the mounts and holds the keys. */
export interface LogicalReader {
  logicalChange(change: CommittedChange): LogicalChange;
}

/**
 * The feed's logical view, for replication and secret sync: each change with its namespace, mount
 * (accessor, UUID, `local`), relative key and the engine's reading (a KV v2 secret's state). Read
 * on the active node, whose core has the mount tables and the keys.
 */
export async function* followLogical(feed: CommitFeed, from: number, reader: LogicalReader, signal?: AbortSignal): AsyncGenerator<LogicalChange[]> {
  for await (const batch of feed.follow(from, signal)) yield batch.map((change) => reader.logicalChange(change));
}
