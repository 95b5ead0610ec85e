import type { CommittedChange, TxnOp } from '@strongroom/base';
import { FeedSourceChangedError } from '@strongroom/cluster';
import { ChangesNotRetainedError } from '@strongroom/raft';
import type { MerkleFeed } from '../indexer';
import type { StorageScan } from '../rebuild';

/**
 * A node's storage and commit feed in memory: `commit` applies writes and announces them like
 * CommitFeed; `forget` drops the oldest changes from the window; `replaceNode` makes readers
 * start again, like an attach; `restore` replaces the data like a snapshot restore.
 */
export class FakeCluster implements MerkleFeed {
  readonly data = new Map<string, Buffer>();
  private changes: CommittedChange[] = [];
  private applied = 0;
  private droppedThrough = 0;
  private generation = 0;
  private wake = new Set<() => void>();
  follows = 0;

  commit(ops: TxnOp[], gap = 0): number {
    this.applied += 1 + gap;
    for (const op of ops) {
      if (op.type === 'put') this.data.set(op.key, op.value);
      else this.data.delete(op.key);
    }
    this.changes.push({ index: this.applied, ops });
    this.notify();
    return this.applied;
  }

  restore(data: Map<string, Buffer>): number {
    this.data.clear();
    for (const [k, v] of data) this.data.set(k, v);
    this.applied++;
    this.changes = [{ index: this.applied, restored: true }];
    this.droppedThrough = this.applied - 1;
    this.notify();
    return this.applied;
  }

  /** Drops every change up to `index` from the window. */
  forget(index: number): void {
    this.changes = this.changes.filter((c) => c.index > index);
    this.droppedThrough = Math.max(this.droppedThrough, index);
  }

  replaceNode(): void {
    this.generation++;
    this.notify();
  }

  /** The writes of every retained change after `index`, in order. */
  async changesAfter(index: number): Promise<TxnOp[][]> {
    return this.changes.filter((c) => c.index > index).map((c) => ('ops' in c ? [...c.ops] : []));
  }

  get index(): number {
    return this.applied;
  }

  async scan(): Promise<StorageScan> {
    const entries = [...this.data.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const index = this.applied;
    return {
      index,
      records: (async function* () {
        for (let i = 0; i < entries.length; i += 100) yield entries.slice(i, i + 100);
      })(),
    };
  }

  async *follow(from: number, signal?: AbortSignal): AsyncGenerator<CommittedChange[]> {
    this.follows++;
    const generation = this.generation;
    let next = from;
    for (;;) {
      if (signal?.aborted) return;
      if (this.generation !== generation) throw new FeedSourceChangedError();
      if (next <= this.droppedThrough) throw new ChangesNotRetainedError(next, this.droppedThrough + 1);
      const batch = this.changes.filter((c) => c.index >= next).slice(0, 50);
      if (batch.length > 0) {
        next = (batch[batch.length - 1] as CommittedChange).index + 1;
        yield batch;
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          this.wake.delete(done);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        this.wake.add(done);
        signal?.addEventListener('abort', done);
      });
    }
  }

  private notify(): void {
    for (const w of [...this.wake]) w();
  }
}

export const put = (key: string, value: string): TxnOp => ({ type: 'put', key, value: Buffer.from(value) });
export const del = (key: string): TxnOp => ({ type: 'delete', key });

/** Polls `condition` every 10 ms for up to `ms` (generous: the machine may be busy). */
export async function waitUntil(condition: () => boolean, what: string, ms = 20000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
