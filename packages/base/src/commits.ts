import type { TxnOp } from './storage';

/**
 * One committed change to physical storage, as the commit feed tells it: the writes of one log
 * entry, or a restore that replaced everything. `index` is the entry's, so it grows but has gaps
 * (entries that changed no data). `own` marks, on the node that wrote it, a change whose writer
 * still awaits its result and so learns of it from that result; it is never stored.
 */
export type CommittedChange =
  | { index: number; ops: readonly TxnOp[]; own?: true }
  | { index: number; restored: true };

/** The live edge of the commit feed: batches of changes in commit order, as they apply here. */
export interface CommitSubscription {
  /** Calls `listener` with every batch from now on; returns the function that stops it. */
  subscribe(listener: (changes: readonly CommittedChange[]) => void): () => void;
}
