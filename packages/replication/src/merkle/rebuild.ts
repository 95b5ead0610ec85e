import { classifyKey } from '../key-space';
import { addToSum, entryHash, HASH_BYTES, leafOf, LEAVES, TREES } from './layout';
import type { RebuiltLeaves } from './merkle-tree';
import { ENTRY_RANGE, FIRST_FORMAT_LEAF_RANGE, parseNodeKey, PREFIX_LENGTH, STAGING_RANGE, stagingPrefix, type MerkleDb } from './store';

/** Every key of storage with its value, as of one applied index (RaftNode.scan). */
export interface StorageScan {
  index: number;
  records: AsyncIterable<Array<[string, Buffer]>>;
  /** Ends a scan whose records are not read. */
  close?(): Promise<void>;
}

export interface ReindexProgress {
  phase: 'scan' | 'build' | 'done';
  /** Storage keys read so far, of about `keysTotal` (the tree's size until the scan ends, then exact). */
  keysScanned: number;
  keysTotal: number;
  /** Leaves compared and written, of `leavesTotal`. */
  leavesBuilt: number;
  leavesTotal: number;
}

/** What a rebuild found different from the tree it replaced. */
export interface ReindexDiff {
  /** Leaves where an entry was written or deleted. */
  leavesRewritten: number;
  /** Key-level differences, in `diff` mode only, up to MAX_DIFF_KEYS keys in all. */
  added: string[];
  removed: string[];
  changed: string[];
  truncated: boolean;
}

const MAX_DIFF_KEYS = 1000;
const WRITE_BATCH = 256;

export interface RebuildOptions {
  /** Compare each key with the tree being replaced and name those that differ. */
  diff: boolean;
  /** Replace every entry without reading the one it replaces (unless `diff`, which compares). */
  force: boolean;
  progress: ReindexProgress;
  signal?: AbortSignal | undefined;
}

/**
 * Rebuilds every entry from a storage scan in two passes of bounded memory: the entries are first
 * written to a staging range of the store (LevelDB sorts them by tree, leaf and key, as it sorts
 * the stored entries), then read back in that order beside the stored ones, writing what differs
 * and summing each leaf. The pages are the caller's (MerkleTree.install).
 */
export async function rebuildLeaves(db: MerkleDb, scan: StorageScan, options: RebuildOptions): Promise<{ rebuilt: RebuiltLeaves; diff: ReindexDiff }> {
  const { progress, signal } = options;
  await db.clear(STAGING_RANGE);
  progress.phase = 'scan';
  for await (const batch of scan.records) {
    signal?.throwIfAborted();
    const ops: Array<{ type: 'put'; key: string; value: Buffer }> = [];
    for (const [key, value] of batch) {
      const cls = classifyKey(key);
      if (!cls) continue;
      ops.push({ type: 'put', key: stagingPrefix(TREES.indexOf(cls), leafOf(key)) + key, value: entryHash(key, value) });
    }
    if (ops.length > 0) await db.batch(ops);
    progress.keysScanned += batch.length;
    progress.keysTotal = Math.max(progress.keysTotal, progress.keysScanned);
  }
  progress.keysTotal = progress.keysScanned;
  progress.phase = 'build';

  // The store's first format kept whole leaves, which nothing reads any more.
  await db.clear(FIRST_FORMAT_LEAF_RANGE);
  if (options.force && !options.diff) await db.clear(ENTRY_RANGE);
  const diff: ReindexDiff = { leavesRewritten: 0, added: [], removed: [], changed: [], truncated: false };
  const leafHashes: [Buffer, Buffer] = [Buffer.alloc(LEAVES * HASH_BYTES), Buffer.alloc(LEAVES * HASH_BYTES)];
  const counts: [number, number] = [0, 0];
  const staged = new Sorted(db, STAGING_RANGE);
  const stored = new Sorted(db, ENTRY_RANGE);
  const note = (list: string[], key: string) => {
    if (!options.diff) return;
    if (diff.added.length + diff.removed.length + diff.changed.length >= MAX_DIFF_KEYS) diff.truncated = true;
    else list.push(key);
  };
  try {
    let ops: Array<{ type: 'put'; key: string; value: Buffer } | { type: 'del'; key: string }> = [];
    let lastRewritten = -1;
    const write = (id: number, op: (typeof ops)[number]) => {
      ops.push(op);
      if (id !== lastRewritten) {
        diff.leavesRewritten++;
        lastRewritten = id;
      }
    };
    for (;;) {
      signal?.throwIfAborted();
      const [next, held] = [await staged.peek(), await stored.peek()];
      if (!next && !held) break;
      // Both ranges order by (tree, leaf, key) after their one-letter prefix.
      const order = !next ? 1 : !held ? -1 : compare(next[0].slice(1), held[0].slice(1));
      const entryKey = 'e' + (order <= 0 ? next![0] : held![0]).slice(1);
      const { tree: t, n: leaf } = parseNodeKey(entryKey);
      const id = t * LEAVES + leaf;
      const key = entryKey.slice(PREFIX_LENGTH);
      if (order <= 0) {
        const hash = next![1];
        addToSum(leafHashes[t]!.subarray(leaf * HASH_BYTES, (leaf + 1) * HASH_BYTES), hash);
        counts[t] = (counts[t] ?? 0) + 1;
        if (order < 0) {
          write(id, { type: 'put', key: entryKey, value: hash });
          note(diff.added, key);
        } else if (!held![1].equals(hash)) {
          write(id, { type: 'put', key: entryKey, value: hash });
          note(diff.changed, key);
        }
        staged.take();
      }
      if (order >= 0) {
        if (order > 0) {
          write(id, { type: 'del', key: entryKey });
          note(diff.removed, key);
        }
        stored.take();
      }
      progress.leavesBuilt = id;
      if (ops.length >= WRITE_BATCH) {
        await db.batch(ops);
        ops = [];
      }
    }
    if (ops.length > 0) await db.batch(ops);
  } finally {
    await staged.close();
    await stored.close();
  }
  await db.clear(STAGING_RANGE);
  progress.leavesBuilt = progress.leavesTotal;
  progress.phase = 'done';
  return { rebuilt: { index: scan.index, leafHashes, counts }, diff };
}

/** The order LevelDB keeps keys in: their UTF-8 bytes. */
function compare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** One range of the store, read ahead in batches and looked at one record at a time. */
class Sorted {
  private readonly read: () => Promise<Array<[string, Buffer]>>;
  readonly close: () => Promise<void>;
  private buffered: Array<[string, Buffer]> = [];
  private at = 0;
  private ended = false;

  constructor(db: MerkleDb, range: { gte: string; lt: string }) {
    const iterator = db.iterator(range);
    this.read = () => iterator.nextv(1024);
    this.close = () => iterator.close();
  }

  async peek(): Promise<[string, Buffer] | undefined> {
    if (this.at < this.buffered.length) return this.buffered[this.at];
    if (this.ended) return undefined;
    this.buffered = await this.read();
    this.at = 0;
    this.ended = this.buffered.length === 0;
    return this.buffered[0];
  }

  take(): void {
    this.at++;
  }
}
