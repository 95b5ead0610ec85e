import type { CommittedChange } from '@strongroom/base';
import type { CommitFeed } from '@strongroom/cluster';
import { classifyKey } from './key-space';

/** Whether a committed change is a WAL entry: it touched the replicated key space (or replaced it all). */
export function isWal(change: CommittedChange): boolean {
  return 'restored' in change || change.ops.some((op) => classifyKey(op.key) !== null);
}

/**
 * The index of the newest WAL entry this node applied: a primary's `last_wal`. Changes that
 * touch only this cluster's own keys (its role, its autopilot settings) are not WALs, so two
 * idle clusters in sync show the same number on both sides.
 */
export class WalTracker {
  private last = 0;
  private readonly off: () => void;

  constructor(private readonly feed: CommitFeed) {
    this.off = feed.subscribe((changes) => {
      for (const c of changes) if (isWal(c) && c.index > this.last) this.last = c.index;
    });
  }

  /** Reads the retained window once, for the WALs applied before this process started. */
  async start(): Promise<void> {
    const { first } = this.feed.window();
    if (first === undefined) return;
    let next = first;
    for (let round = 0; round < 1_000_000; round++) {
      const batch = await this.feed.read(next, 1024);
      if (batch.length === 0) return;
      for (const c of batch) if (isWal(c) && c.index > this.last) this.last = c.index;
      next = (batch[batch.length - 1] as CommittedChange).index + 1;
    }
  }

  get lastWal(): number {
    return this.last;
  }

  close(): void {
    this.off();
  }
}
