import type { Entry, EntryType, HardState, SnapshotMeta } from '../core/types';

/** What a log store hands back on open: enough to rebuild the core after a restart. */
export interface StoredLog {
  hardState?: HardState;
  /** The latest snapshot recorded by `save` (installed from a leader) or `compact` (taken locally). */
  snapshot?: SnapshotMeta;
  /** Entries after `snapshot.index` (after 0 without one), contiguous and ascending. */
  entries: Entry[];
}

/**
 * The durable half of the Raft log. The runtime calls it from one drive loop, one call at a
 * time, so implementations need no locking.
 */
export interface LogStore {
  load(): Promise<StoredLog>;
  /**
   * One durable write (an fsync for on-disk stores) that, in this order: when `snapshot` is set,
   * drops every stored entry and records the snapshot (a leader's snapshot replaces the whole
   * log); drops stored entries at or after `entries[0].index` that the new ones replace; stores
   * `entries`; stores `hardState` when given. This is the group commit of the runtime: every
   * proposal that reached the core since the previous call shares it.
   */
  save(hardState: HardState | undefined, entries: readonly Entry[], snapshot?: SnapshotMeta): Promise<void>;
  /**
   * Records a hard state whose term and vote are already durable, without waiting for the disk
   * (a store may hold it until its next write or `close`): only the commit index moved, and Raft
   * does not need that to survive a crash (a leader re-establishes it, and the state machine's
   * applied index is a floor for it on restart).
   */
  saveCommit(hardState: HardState): Promise<void>;
  /**
   * Records a snapshot taken locally and drops entries at or below `truncateTo` (at most
   * `snapshot.index`: the runtime keeps a trailing window for followers that lag a little).
   */
  compact(snapshot: SnapshotMeta, truncateTo: number): Promise<void>;
  close(): Promise<void>;
}

/** The log in memory, for tests: the same contract, with nothing to lose on a crash. */
export class MemoryLogStore implements LogStore {
  private hardState: HardState | undefined;
  private snapshot: SnapshotMeta | undefined;
  /** Stored entries by index; contiguous, possibly starting before snapshot.index + 1. */
  private entries: Entry[] = [];

  async load(): Promise<StoredLog> {
    const after = this.snapshot?.index ?? 0;
    return {
      ...(this.hardState && { hardState: { ...this.hardState } }),
      ...(this.snapshot && { snapshot: cloneMeta(this.snapshot) }),
      entries: this.entries.filter((e) => e.index > after).map(cloneEntry),
    };
  }

  async save(hardState: HardState | undefined, entries: readonly Entry[], snapshot?: SnapshotMeta): Promise<void> {
    if (snapshot) {
      this.entries = [];
      this.snapshot = cloneMeta(snapshot);
    }
    const first = entries[0];
    if (first) {
      this.entries = this.entries.filter((e) => e.index < first.index);
      const last = this.entries[this.entries.length - 1];
      if (last && last.index !== first.index - 1) throw new Error(`log gap: stored up to ${last.index}, saving from ${first.index}`);
      for (const e of entries) this.entries.push(cloneEntry(e));
    }
    if (hardState) this.hardState = { ...hardState };
  }

  async saveCommit(hardState: HardState): Promise<void> {
    this.hardState = { ...hardState };
  }

  async compact(snapshot: SnapshotMeta, truncateTo: number): Promise<void> {
    this.snapshot = cloneMeta(snapshot);
    this.entries = this.entries.filter((e) => e.index > truncateTo);
  }

  async close(): Promise<void> {}
}

function cloneEntry(e: Entry): Entry {
  return { index: e.index, term: e.term, type: e.type, data: Uint8Array.from(e.data) };
}

export function cloneMeta(m: SnapshotMeta): SnapshotMeta {
  return { index: m.index, term: m.term, conf: { voters: [...m.conf.voters], learners: [...m.conf.learners] } };
}

/**
 * The range of stored entry indexes (empty when first > last) after a save of `entries`, with
 * `snapshot` replacing the log first: the check every store makes before writing, since a save
 * that would leave a hole in the log is a caller's bug.
 */
export function rangeAfterSave(
  stored: { first: number; last: number }, entries: readonly Entry[], snapshot?: SnapshotMeta,
): { first: number; last: number } {
  let { first, last } = snapshot ? { first: snapshot.index + 1, last: snapshot.index } : stored;
  const head = entries[0];
  const tail = entries[entries.length - 1];
  if (head && tail) {
    if (head.index > last + 1 && last >= first) throw new Error(`log gap: stored up to ${last}, saving from ${head.index}`);
    if (last < first || head.index < first) first = head.index;
    last = tail.index;
  }
  return { first, last };
}

/** Entry types as stored: one byte each. */
export const TYPE_CODES: Record<EntryType, number> = { normal: 0, conf: 1, empty: 2 };
export const TYPES: readonly EntryType[] = ['normal', 'conf', 'empty'];

/** Writes `n` (< 2^53) as 8 big-endian bytes, so that byte order is numeric order. */
export function writeUint64(buf: Buffer, n: number, offset: number): void {
  buf.writeUInt32BE(Math.floor(n / 0x1_0000_0000), offset);
  buf.writeUInt32BE(n >>> 0, offset + 4);
}

export function readUint64(buf: Uint8Array, offset: number): number {
  const view = Buffer.isBuffer(buf) ? buf : Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  return view.readUInt32BE(offset) * 0x1_0000_0000 + view.readUInt32BE(offset + 4);
}

/** Entry value on disk: type (1 byte), term (8 bytes), data; the index lives in the key. */
export function encodeEntryValue(e: Entry): Buffer {
  const out = Buffer.allocUnsafe(9 + e.data.byteLength);
  out[0] = TYPE_CODES[e.type];
  writeUint64(out, e.term, 1);
  out.set(e.data, 9);
  return out;
}

export function decodeEntryValue(index: number, value: Buffer): Entry {
  const type = TYPES[value[0] ?? 255];
  if (type === undefined) throw new Error(`log entry ${index} has an unknown type ${String(value[0])}`);
  // A view, not a copy: classic-level hands out a fresh Buffer per value.
  return { index, term: readUint64(value, 1), type, data: value.subarray(9) };
}

/** Hard state on disk: term (8), commit (8), then the vote as UTF-8 (absent for no vote, flagged by a byte). */
export function encodeHardState(hs: HardState): Buffer {
  const vote = hs.vote === null ? null : Buffer.from(hs.vote, 'utf8');
  const out = Buffer.allocUnsafe(17 + (vote?.length ?? 0));
  writeUint64(out, hs.term, 0);
  writeUint64(out, hs.commit, 8);
  out[16] = vote === null ? 0 : 1;
  if (vote) out.set(vote, 17);
  return out;
}

export function decodeHardState(buf: Buffer): HardState {
  return { term: readUint64(buf, 0), commit: readUint64(buf, 8), vote: buf[16] === 1 ? buf.toString('utf8', 17) : null };
}
