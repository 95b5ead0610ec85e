import { classifyKey } from '../key-space';
import { entryHash, HASH_BYTES, leafOf, LEAVES, TREES } from './layout';
import { encodeEntry, Leaf, leafHash } from './leaf-record';
import type { RebuiltLeaves } from './merkle-tree';
import { leafKey, STAGING_RANGE, stagingPrefix, type MerkleDb } from './store';

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
  /** Leaves written, of `leavesTotal`. */
  leavesBuilt: number;
  leavesTotal: number;
}

/** What a rebuild found different from the tree it replaced. */
export interface ReindexDiff {
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
  /** Write every leaf without reading the one it replaces. */
  force: boolean;
  progress: ReindexProgress;
  signal?: AbortSignal | undefined;
}

/**
 * Rebuilds every leaf from a storage scan in two passes of bounded memory: the entries are first
 * written to a staging range of the store (LevelDB sorts them by tree, leaf and key), then read
 * back leaf by leaf into leaf records. The pages are the caller's (MerkleTree.install). Leaves
 * that did not change are not rewritten unless `force`.
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

  const compare = options.diff || !options.force;
  const diff: ReindexDiff = { leavesRewritten: 0, added: [], removed: [], changed: [], truncated: false };
  const leafHashes: [Buffer, Buffer] = [Buffer.alloc(LEAVES * HASH_BYTES), Buffer.alloc(LEAVES * HASH_BYTES)];
  const counts: [number, number] = [0, 0];
  const staged = db.iterator(STAGING_RANGE);
  let buffered: Array<[string, Buffer]> = [];
  let at = 0;
  let ended = false;
  const peek = async (): Promise<[string, Buffer] | undefined> => {
    if (at < buffered.length) return buffered[at];
    if (ended) return undefined;
    buffered = await staged.nextv(1024);
    at = 0;
    ended = buffered.length === 0;
    return buffered[0];
  };
  try {
    let ops: Array<{ type: 'put'; key: string; value: Buffer } | { type: 'del'; key: string }> = [];
    for (let t = 0; t < TREES.length; t++) {
      for (let leaf = 0; leaf < LEAVES; leaf++) {
        signal?.throwIfAborted();
        const prefix = stagingPrefix(t, leaf);
        const entries = new Leaf();
        for (let next = await peek(); next && next[0].startsWith(prefix); next = await peek()) {
          const key = next[0].slice(prefix.length);
          entries.set(key, encodeEntry(key, next[1]));
          at++;
        }
        const record = entries.encode();
        leafHash(record).copy(leafHashes[t]!, leaf * HASH_BYTES);
        counts[t] = (counts[t] ?? 0) + entries.size;
        const key = leafKey(t, leaf);
        const old = compare ? db.getSync(key) ?? Buffer.alloc(0) : undefined;
        if (!old || !old.equals(record)) {
          ops.push(record.length === 0 ? { type: 'del', key } : { type: 'put', key, value: record });
          diff.leavesRewritten++;
          if (options.diff && old) compareLeaf(old, entries, diff);
        }
        if (ops.length >= WRITE_BATCH) {
          await db.batch(ops);
          ops = [];
        }
        progress.leavesBuilt++;
      }
    }
    if (ops.length > 0) await db.batch(ops);
  } finally {
    await staged.close();
  }
  await db.clear(STAGING_RANGE);
  progress.phase = 'done';
  return { rebuilt: { index: scan.index, leafHashes, counts }, diff };
}

function compareLeaf(oldRecord: Buffer, entries: Leaf, diff: ReindexDiff): void {
  let old: Leaf;
  try {
    old = Leaf.decode(oldRecord);
  } catch {
    // A damaged record: every key of the new leaf counts as changed.
    old = new Leaf();
    for (const key of entries.keys()) old.set(key, Buffer.alloc(0));
  }
  const note = (list: string[], key: string) => {
    if (diff.added.length + diff.removed.length + diff.changed.length >= MAX_DIFF_KEYS) diff.truncated = true;
    else list.push(key);
  };
  for (const key of entries.keys()) {
    const before = old.get(key);
    if (!before) note(diff.added, key);
    else if (!before.equals(entries.get(key) as Buffer)) note(diff.changed, key);
  }
  for (const key of old.keys()) if (entries.get(key) === undefined) note(diff.removed, key);
}
