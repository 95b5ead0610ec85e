import type { ClassicLevel } from 'classic-level';
import type { Entry, HardState, SnapshotMeta } from '../core/types';
import { openLevel } from './level';
import {
  cloneMeta, decodeEntryValue, decodeHardState, encodeEntryValue, encodeHardState, rangeAfterSave, readUint64, writeUint64,
  type LogStore, type StoredLog,
} from './log-store';

/**
 * Keys: 'e' + the index as 8 big-endian bytes (so LevelDB's byte order is log order), 'h' for
 * the hard state, 's' for the snapshot meta (JSON: written once per snapshot, never on the hot path).
 */
const HARD_STATE_KEY = Buffer.from('h');
const SNAPSHOT_KEY = Buffer.from('s');
const ENTRY_PREFIX = 0x65;
const ENTRIES_FROM = Buffer.from([ENTRY_PREFIX]);
const ENTRIES_TO = Buffer.from([ENTRY_PREFIX + 1]);

type Op = { type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer };

function entryKey(index: number): Buffer {
  const key = Buffer.allocUnsafe(9);
  key[0] = ENTRY_PREFIX;
  writeUint64(key, index, 1);
  return key;
}

/** The Raft log on its own LevelDB (one per node). Every write is synced. */
export class LevelLogStore implements LogStore {
  /** Range of stored entry indexes, kept in memory so a save knows what it replaces (empty when first > last). */
  private first = 1;
  private last = 0;

  private constructor(private readonly db: ClassicLevel<Buffer, Buffer>) {}

  static async open(dir: string): Promise<LevelLogStore> {
    const store = new LevelLogStore(await openLevel<Buffer>(dir, 'buffer'));
    const [firstKey] = await store.db.keys({ gte: ENTRIES_FROM, lt: ENTRIES_TO, limit: 1 }).all();
    const [lastKey] = await store.db.keys({ gte: ENTRIES_FROM, lt: ENTRIES_TO, limit: 1, reverse: true }).all();
    if (firstKey && lastKey) {
      store.first = readUint64(firstKey, 1);
      store.last = readUint64(lastKey, 1);
    }
    return store;
  }

  async load(): Promise<StoredLog> {
    const [hs, meta] = await this.db.getMany([HARD_STATE_KEY, SNAPSHOT_KEY]);
    const snapshot = meta ? (JSON.parse(meta.toString('utf8')) as SnapshotMeta) : undefined;
    const from = Math.max(this.first, (snapshot?.index ?? 0) + 1);
    const entries: Entry[] = [];
    for await (const [key, value] of this.db.iterator({ gte: entryKey(from), lt: ENTRIES_TO })) {
      entries.push(decodeEntryValue(readUint64(key, 1), value));
    }
    return { ...(hs && { hardState: decodeHardState(hs) }), ...(snapshot && { snapshot }), entries };
  }

  async save(hardState: HardState | undefined, entries: readonly Entry[], snapshot?: SnapshotMeta): Promise<void> {
    const { first, last } = rangeAfterSave({ first: this.first, last: this.last }, entries, snapshot);
    const ops: Op[] = [];
    if (snapshot) {
      for (let i = this.first; i <= this.last; i++) ops.push({ type: 'del', key: entryKey(i) });
      ops.push({ type: 'put', key: SNAPSHOT_KEY, value: Buffer.from(JSON.stringify(cloneMeta(snapshot))) });
    }
    const tail = entries[entries.length - 1];
    if (tail) {
      // Entries above the new tail belong to a replaced suffix; those at or below it are overwritten.
      for (let i = tail.index + 1; i <= (snapshot ? snapshot.index : this.last); i++) ops.push({ type: 'del', key: entryKey(i) });
      for (const e of entries) ops.push({ type: 'put', key: entryKey(e.index), value: encodeEntryValue(e) });
    }
    if (hardState) ops.push({ type: 'put', key: HARD_STATE_KEY, value: encodeHardState(hardState) });
    if (ops.length === 0) return;
    await this.db.batch(ops, { sync: true });
    this.first = first;
    this.last = last;
  }

  async saveCommit(hardState: HardState): Promise<void> {
    await this.db.put(HARD_STATE_KEY, encodeHardState(hardState));
  }

  /**
   * Records the snapshot (synced), then drops the entries it covers with a range delete that
   * LevelDB runs off the main thread: a batch of one delete per entry (thousands at the default
   * snapshot interval) blocked the event loop for tens of milliseconds. The two steps need not
   * be atomic: entries left at or below the snapshot's index by a crash between them are never
   * loaded (load starts after the snapshot), and the next compaction or snapshot install
   * removes them, since `first` is read back from the stored keys on open.
   */
  async compact(snapshot: SnapshotMeta, truncateTo: number): Promise<void> {
    await this.db.put(SNAPSHOT_KEY, Buffer.from(JSON.stringify(cloneMeta(snapshot))), { sync: true });
    const upTo = Math.min(truncateTo, this.last);
    if (upTo >= this.first) await this.db.clear({ gte: entryKey(this.first), lte: entryKey(upTo) });
    if (upTo >= this.first) this.first = upTo + 1;
    if (this.last < this.first) {
      // Everything went: the next entry saved starts the range afresh.
      this.first = snapshot.index + 1;
      this.last = snapshot.index;
    }
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
