import type { Entry } from './types';

/**
 * The in-memory Raft log: a snapshot position (index, term) followed by the entries after it,
 * kept in one array offset by the snapshot index (`entries[i].index === snapIndex + 1 + i`), so
 * lookups are O(1) and compaction is one slice.
 *
 * Three cursors, always `snapIndex <= applied <= committed <= lastIndex` and `stabled <= lastIndex`:
 *  - `stabled`: entries at or below it are durable; the ones above go out in the next Ready.
 *  - `committed`: known committed.
 *  - `applied`: committed entries up to here have been handed to the state machine.
 */
export class RaftLog {
  private snapIndex: number;
  private snapTerm: number;
  private entries: Entry[];
  committed: number;
  applied: number;
  stabled: number;

  /** `entries` must directly follow the snapshot position; they are taken as already durable. */
  constructor(snapIndex: number, snapTerm: number, entries: readonly Entry[], committed: number, applied: number) {
    entries.forEach((e, i) => {
      if (e.index !== snapIndex + 1 + i) throw new Error(`log entries are not contiguous after index ${snapIndex}`);
    });
    this.snapIndex = snapIndex;
    this.snapTerm = snapTerm;
    this.entries = [...entries];
    const last = this.lastIndex();
    this.applied = Math.min(Math.max(applied, snapIndex), last);
    this.committed = Math.min(Math.max(committed, this.applied), last);
    this.stabled = last;
  }

  snapshotIndex(): number {
    return this.snapIndex;
  }

  firstIndex(): number {
    return this.snapIndex + 1;
  }

  lastIndex(): number {
    return this.snapIndex + this.entries.length;
  }

  lastTerm(): number {
    return this.entries.length === 0 ? this.snapTerm : this.entries[this.entries.length - 1]!.term;
  }

  /** The term at `index`, or undefined when it is compacted away or beyond the end. */
  term(index: number): number | undefined {
    if (index === this.snapIndex) return this.snapTerm;
    if (index < this.snapIndex) return undefined;
    return this.entries[index - this.snapIndex - 1]?.term;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Raft's election restriction (§5.4.1): is a log ending at (index, term) at least as up to date as ours? */
  isUpToDate(index: number, term: number): boolean {
    const lastTerm = this.lastTerm();
    return term > lastTerm || (term === lastTerm && index >= this.lastIndex());
  }

  /**
   * Entries from `lo` (> snapIndex) on, at most `maxCount` of them and at most `maxBytes` of data,
   * but always at least one when any exist.
   */
  slice(lo: number, maxCount = Infinity, maxBytes = Infinity): Entry[] {
    const start = lo - this.snapIndex - 1;
    if (start < 0) throw new RangeError(`slice from ${lo} below first index ${this.firstIndex()}`);
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = start; i < this.entries.length && out.length < maxCount; i++) {
      const e = this.entries[i]!;
      bytes += e.data.byteLength;
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  /** Entries in [lo, hi], clamped to what the log holds after the snapshot. */
  between(lo: number, hi: number): Entry[] {
    const start = Math.max(lo, this.firstIndex()) - this.snapIndex - 1;
    const end = Math.min(hi, this.lastIndex()) - this.snapIndex;
    return start < end ? this.entries.slice(start, end) : [];
  }

  /** The leader's append: `e.index` must be `lastIndex() + 1`. */
  append(e: Entry): void {
    this.entries.push(e);
  }

  /**
   * First index in `ents` (contiguous, starting inside or right after our log) whose term
   * differs from ours, or that we do not hold; 0 when we already hold all of them.
   */
  findConflict(ents: readonly Entry[]): number {
    for (const e of ents) if (!this.matchTerm(e.index, e.term)) return e.index;
    return 0;
  }

  /**
   * Replaces everything from index `from` on with the entries of `ents` at or after `from`.
   * `from` is a conflict found by `findConflict` (so it is above `committed`).
   */
  truncateAndAppend(ents: readonly Entry[], from: number): void {
    const first = ents[0];
    if (first === undefined) return;
    this.entries.length = from - this.snapIndex - 1;
    for (let i = from - first.index; i < ents.length; i++) this.entries.push(ents[i]!);
    this.stabled = Math.min(this.stabled, from - 1);
  }

  /**
   * The largest index <= `index` whose term is <= `term` (never below the snapshot index). Used
   * from both sides of a rejected append to skip a whole term of mismatched entries at once.
   */
  findConflictByTerm(index: number, term: number): number {
    let i = Math.min(index, this.lastIndex());
    while (i > this.snapIndex) {
      const t = this.term(i);
      if (t !== undefined && t <= term) return i;
      i--;
    }
    return this.snapIndex;
  }

  commitTo(index: number): boolean {
    const to = Math.min(index, this.lastIndex());
    if (to <= this.committed) return false;
    this.committed = to;
    return true;
  }

  hasUnstable(): boolean {
    return this.lastIndex() > this.stabled;
  }

  unstable(): Entry[] {
    return this.entries.slice(this.stabled - this.snapIndex);
  }

  /** The Ready that carried entries up to (index, term) was persisted. Ignored if the log was rewritten since. */
  stableTo(index: number, term: number): void {
    if (this.matchTerm(index, term)) this.stabled = Math.max(this.stabled, index);
  }

  /**
   * Committed entries to apply next: only those persisted by an earlier Ready, so that the caller
   * may apply them while it writes the next one, and the state machine never runs ahead of the
   * durable log (a restart would hand out again what it had applied).
   */
  hasNextCommitted(): boolean {
    return Math.min(this.committed, this.stabled) > this.applied;
  }

  nextCommitted(): Entry[] {
    return this.between(this.applied + 1, Math.min(this.committed, this.stabled));
  }

  /** Replaces the whole log with a snapshot position (a leader's snapshot that our log does not match). */
  restore(index: number, term: number): void {
    this.snapIndex = index;
    this.snapTerm = term;
    this.entries = [];
    this.committed = index;
    this.applied = index;
    this.stabled = index;
  }

  /** Drops entries at or below `index` (which the state machine has applied and snapshotted). */
  compact(index: number): void {
    const term = this.term(index);
    if (term === undefined || index < this.snapIndex || index > this.applied) {
      throw new RangeError(`cannot compact to ${index} (snapshot ${this.snapIndex}, applied ${this.applied})`);
    }
    this.entries = this.entries.slice(index - this.snapIndex);
    this.snapIndex = index;
    this.snapTerm = term;
  }
}
