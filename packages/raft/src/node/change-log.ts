import { StrongroomError } from '@strongroom/base';
import { decodeCommand } from './command';
import type { AppliedChange } from './state-machine';

/** How much of the applied changes the state machine keeps, whichever bound is reached first. */
export interface ChangeLogLimits {
  maxEntries: number;
  maxBytes: number;
}

export const DEFAULT_CHANGE_LOG_LIMITS: ChangeLogLimits = { maxEntries: 16384, maxBytes: 256 * 1024 * 1024 };

/** The changes asked for have left the retained window (or were never there: a restore replaced them). */
export class ChangesNotRetainedError extends StrongroomError {
  constructor(readonly from: number, readonly first: number) {
    super('raft_changes_not_retained', 410, `index ${from} is no longer retained: the oldest retained change is ${first}`);
  }
}

/*
 * Keys of the state machine's LevelDB: '#' + index as 16 hex digits, so they sort by index and
 * stay out of the data ('d' on) that snapshots carry. The value is the txn command as the log
 * carried it (its checks are ignored when read), or RESTORED alone for a change that replaced
 * the whole state.
 */
export const CHANGE_PREFIX = '#';
/** The highest index no longer retained (8 bytes): indexes have gaps, so the window's first change does not say it. */
export const DROPPED_KEY = '!changes-dropped';
const CHANGES_END = '$';
const RESTORED = Buffer.from([0xff]);

export function changeKey(index: number): string {
  return CHANGE_PREFIX + index.toString(16).padStart(16, '0');
}

export function decodeChange(index: number, value: Buffer): AppliedChange {
  if (value.length === 1 && value[0] === RESTORED[0]) return { index, restored: true };
  const command = decodeCommand(value);
  if (command.kind !== 'txn') throw new Error(`change ${index} holds a ${command.kind} command`);
  return { index, ops: command.ops };
}

type PutOrDel = { type: 'put'; key: string; value: Buffer } | { type: 'del'; key: string };

/**
 * The bookkeeping of the retained window: which indexes it holds and their sizes, so that the
 * state machine can add a batch's changes and drop the oldest in the same LevelDB batch. Each
 * apply is then atomic with its changes: after any crash the window ends exactly at the applied
 * index, and nothing in it was lost or is ahead of the data.
 */
export class ChangeLogWindow {
  /** Indexes and value sizes, oldest first; `head` is where the live part starts. */
  private indexes: number[] = [];
  private sizes: number[] = [];
  private head = 0;
  private bytes = 0;
  /** Every change at or below this index has left the window (or never entered it). */
  private dropped = 0;
  /** Whether `dropped` must be written with the next batch (it was never stored, or it changed). */
  private droppedUnsaved = false;

  constructor(readonly limits: ChangeLogLimits) {}

  /** Sets what is known to be gone, from storage, or (never stored) from what the state holds. */
  initDropped(stored: number | undefined, applied: number): void {
    if (stored !== undefined) {
      this.dropped = stored;
      return;
    }
    // A state with no record: what it applied before keeping a window was never kept.
    this.dropped = this.first !== undefined ? this.first - 1 : applied;
    this.droppedUnsaved = true;
  }

  get droppedThrough(): number {
    return this.dropped;
  }

  /** Rebuilds the window from the stored changes, read in index order. */
  static async load(limits: ChangeLogLimits, stored: AsyncIterable<[string, Buffer]>): Promise<ChangeLogWindow> {
    const w = new ChangeLogWindow(limits);
    for await (const [key, value] of stored) {
      w.indexes.push(Number.parseInt(key.slice(CHANGE_PREFIX.length), 16));
      w.sizes.push(value.length);
      w.bytes += value.length;
    }
    return w;
  }

  static range(): { gte: string; lt: string } {
    return { gte: CHANGE_PREFIX, lt: CHANGES_END };
  }

  get first(): number | undefined {
    return this.indexes[this.head];
  }

  get last(): number | undefined {
    return this.indexes.length > this.head ? this.indexes[this.indexes.length - 1] : undefined;
  }

  get count(): number {
    return this.indexes.length - this.head;
  }

  get size(): number {
    return this.bytes;
  }

  /**
   * Ops that record `changes` (index and stored value, in order) and drop what then falls out of
   * the window; `commit` makes the bookkeeping match once the batch is written. The newest change
   * always stays, however large.
   */
  plan(changes: Array<[number, Buffer]>): { ops: PutOrDel[]; commit: () => void } {
    const live = this.count;
    let count = live + changes.length;
    let bytes = this.bytes;
    for (const [, value] of changes) bytes += value.length;
    const sizeAt = (i: number) => (i < live ? this.sizes[this.head + i]! : changes[i - live]![1].length);
    let drop = 0;
    while (count > 1 && (count > this.limits.maxEntries || bytes > this.limits.maxBytes)) {
      bytes -= sizeAt(drop);
      count--;
      drop++;
    }
    const ops: PutOrDel[] = [];
    for (let i = 0; i < Math.min(drop, live); i++) ops.push({ type: 'del', key: changeKey(this.indexes[this.head + i]!) });
    const indexAt = (i: number) => (i < live ? this.indexes[this.head + i]! : changes[i - live]![0]);
    const dropped = drop > 0 ? indexAt(drop - 1) : this.dropped;
    if (dropped !== this.dropped || this.droppedUnsaved) ops.push(droppedOp(dropped));
    // Changes of this batch that would fall out at once are not written at all.
    for (let j = Math.max(0, drop - live); j < changes.length; j++) {
      const [index, value] = changes[j]!;
      ops.push({ type: 'put', key: changeKey(index), value });
    }
    return {
      ops,
      commit: () => {
        for (const [index, value] of changes) {
          this.indexes.push(index);
          this.sizes.push(value.length);
        }
        this.head += drop;
        this.bytes = bytes;
        this.dropped = dropped;
        this.droppedUnsaved = false;
        // Keep the arrays from growing for ever: copy the live part once most of it is dead.
        if (this.head > 1024 && this.head * 2 > this.indexes.length) {
          this.indexes = this.indexes.slice(this.head);
          this.sizes = this.sizes.slice(this.head);
          this.head = 0;
        }
      },
    };
  }

  /** What a restore leaves in the window of the state it builds: its marker, and all before it gone. */
  static restoredMarker(index: number): PutOrDel[] {
    return [{ type: 'put', key: changeKey(index), value: RESTORED }, droppedOp(index - 1)];
  }

  /** After a restore (see `restoredMarker`): everything before it is gone with the old state. */
  resetTo(index: number): void {
    this.indexes = [index];
    this.sizes = [RESTORED.length];
    this.head = 0;
    this.bytes = RESTORED.length;
    this.dropped = index - 1;
    this.droppedUnsaved = false;
  }
}

function droppedOp(index: number): PutOrDel {
  const value = Buffer.alloc(8);
  value.writeBigUInt64BE(BigInt(index));
  return { type: 'put', key: DROPPED_KEY, value };
}

export function readDropped(value: Buffer | undefined): number | undefined {
  return value && value.length === 8 ? Number(value.readBigUInt64BE()) : undefined;
}
