import type { TxnOp } from '@strongroom/base';
import { classifyKey, type KeyClass } from '../key-space';
import {
  addToSum, compositeRoot, entryHash, FANOUT, HASH_BYTES, LEAF_LEVEL, leafOf, LEAVES, nodesAt, pageHash, pageNumber, subtractFromSum, TREES, ZERO_HASH,
} from './layout';
import { RootHistory } from './root-history';
import {
  entryPrefix, FIRST_FORMAT_META_KEY, HISTORY_RANGE, historyKey, META_KEY, PAGE_RANGE, pageKey, parseNodeKey, PREFIX_LENGTH, REINDEX_KEY, type MerkleDb,
} from './store';

/** Vault's logshipper_buffer_length: how many roots-before are kept by default. */
export const DEFAULT_HISTORY_LENGTH = 16384;
/**
 * The store's layout (store.ts). The first format kept each leaf as one record, rewritten whole
 * on every write to it, and its checkpoint under another key; a store holding that checkpoint is
 * rebuilt from storage at open. An older release finds no checkpoint of its own in a store of
 * this format, so it too rebuilds rather than read these records as its own.
 */
const FORMAT = 2;

/** The checkpoint record. */
interface Meta {
  applied: number;
  floor: number;
  counts: [number, number];
  roots: [string, string];
  root: string;
  lastReindexEpoch?: string | undefined;
  format?: number;
}

type Op = { type: 'put'; key: string; value: Buffer } | { type: 'del'; key: string };

/** What a rebuild hands over: the leaves it wrote, as of `index`. */
export interface RebuiltLeaves {
  index: number;
  /** Per tree, LEAVES hashes of HASH_BYTES. */
  leafHashes: [Buffer, Buffer];
  counts: [number, number];
}

/** A stored record of the tree does not parse: only a reindex brings it back. */
export class MerkleCorruptionError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'MerkleCorruptionError';
  }
}

export function treeNumber(tree: KeyClass): number {
  return TREES.indexOf(tree);
}

/** A leaf's entry: its key and entry hash. */
export interface LeafEntry {
  key: string;
  hash: Buffer;
}

/** Entries written since a flush began, by entry key (store.ts): the entry hash, or null for a delete. */
type Overlay = Map<string, Buffer | null>;

/**
 * One node's Merkle index (layout.ts): every hash in memory, entries on disk, updated one
 * committed change at a time and written to its LevelDB by `flush` with the applied index it
 * reflects. A write reads only the entry it replaces (from the writes not yet flushed, else from
 * disk), so its cost does not grow with the number of keys. Only one caller applies (the
 * indexer); `flush` and reads of entries may run meanwhile.
 */
export class MerkleTree {
  /** levels[tree][level]: the hashes of that level's nodes, HASH_BYTES each (the leaves' sums at LEAF_LEVEL). */
  private levels: Buffer[][] = [];
  private counts: [number, number] = [0, 0];
  private rootValue: Buffer = compositeRoot(ZERO_HASH, ZERO_HASH);
  private appliedIndex = 0;
  private history: RootHistory;
  /** Entries changed since the last flush began. */
  private pending: Overlay = new Map();
  /** Leaves changed since the last flush began, as tree * LEAVES + leaf: their pages are written with it. */
  private pendingLeaves = new Set<number>();
  /** The entries of the flush being written: read from here, not from disk, until it lands. */
  private writing: Overlay = new Map();
  private writingLeaves = new Set<number>();
  /** Flushes ended so far: a read of disk made before one ended may miss what it wrote. */
  private flushesEnded = 0;
  /**
   * Read ahead of the changes about to apply (`prefetch`): stored entries by entry key, and the
   * leaf of each key written (a sha256 not to compute twice).
   */
  private prefetched: { flushesEnded: number; found: Map<string, Buffer | undefined>; leaves: Map<string, number> } | undefined;
  private flushing: Promise<void> | undefined;
  private frozen = false;
  private flushedApplied = 0;
  private lastReindexEpoch: string | undefined;
  /** The checkpoint did not parse, or the store is of the first format: the tree is empty and wants a reindex. */
  wantsRebuild = false;
  /** Told when a read of stored entries outside `apply` (a diff's) finds one damaged. */
  onCorruption: ((err: MerkleCorruptionError) => void) | undefined;

  private constructor(private readonly db: MerkleDb, private readonly historyLength: number) {
    this.history = new RootHistory(historyLength, 0);
    this.resetLevels();
  }

  /** Loads the tree at its last checkpoint (an empty tree at index 0 in a new store). */
  static async open(db: MerkleDb, historyLength = DEFAULT_HISTORY_LENGTH): Promise<MerkleTree> {
    const tree = new MerkleTree(db, historyLength);
    await tree.load();
    return tree;
  }

  get applied(): number {
    return this.appliedIndex;
  }

  /** The composite root. */
  get root(): Buffer {
    return this.rootValue;
  }

  treeRoot(tree: KeyClass): Buffer {
    return this.levels[treeNumber(tree)]![0]!;
  }

  /** Keys in `tree`. */
  count(tree: KeyClass): number {
    return this.counts[treeNumber(tree)]!;
  }

  get reindexedAt(): string | undefined {
    return this.lastReindexEpoch;
  }

  /**
   * The composite root as it was just before the change at `index` applied (for an index that
   * changed nothing in the tree, the root then): known for indexes above the history's floor up
   * to the next one to apply; undefined otherwise.
   */
  rootBefore(index: number): Buffer | undefined {
    if (index > this.appliedIndex + 1) return undefined;
    return this.history.lookup(index) ?? (index > this.history.floor ? this.rootValue : undefined);
  }

  /** The hashes of every node of `tree` at `level` (a copy), HASH_BYTES each. */
  hashesAt(tree: KeyClass, level: number): Buffer {
    if (!Number.isInteger(level) || level < 0 || level > LEAF_LEVEL) throw new RangeError(`level must be an integer from 0 to ${LEAF_LEVEL}`);
    return Buffer.from(this.levels[treeNumber(tree)]![level]!);
  }

  /** A leaf's entries, in key order, as applied when it is called (or later). */
  async leafEntries(tree: KeyClass, leaf: number): Promise<LeafEntry[]> {
    if (!Number.isInteger(leaf) || leaf < 0 || leaf >= LEAVES) throw new RangeError(`leaf must be an integer from 0 to ${LEAVES - 1}`);
    for await (const found of this.leaves(tree, leaf, leaf + 1)) return found.entries;
    return [];
  }

  /**
   * Every non-empty leaf of `tree` from `from` up to (not including) `to`, in leaf order, each
   * with its entries in key order, as applied when iteration starts (a generator's body runs at
   * the first `next()`): later applies do not show.
   */
  async *leaves(tree: KeyClass, from = 0, to = LEAVES): AsyncGenerator<{ leaf: number; entries: LeafEntry[] }> {
    const t = treeNumber(tree);
    // What is not on disk yet, taken in the same turn as the disk's snapshot: together they are the tree now.
    const unflushed = new Map<number, Overlay>();
    for (const overlay of [this.writing, this.pending]) {
      for (const [key, hash] of overlay) {
        const { tree: kt, n: leaf } = parseNodeKey(key);
        if (kt !== t || leaf < from || leaf >= to) continue;
        let entries = unflushed.get(leaf);
        if (!entries) unflushed.set(leaf, (entries = new Map()));
        entries.set(key.slice(PREFIX_LENGTH), hash);
      }
    }
    const snapshot = this.db.snapshot();
    const stored = this.db.iterator({ gte: entryPrefix(t, from), lt: entryPrefix(t, to), snapshot });
    const extra = [...unflushed.keys()].sort((a, b) => a - b);
    let nextExtra = 0;
    const leafOut = (leaf: number, entries: Map<string, Buffer>) => {
      for (const [key, hash] of unflushed.get(leaf) ?? []) {
        if (hash) entries.set(key, hash);
        else entries.delete(key);
      }
      const keys = [...entries.keys()].sort();
      return { leaf, entries: keys.map((key) => ({ key, hash: entries.get(key) as Buffer })) };
    };
    try {
      let current = -1;
      let entries = new Map<string, Buffer>();
      for (let batch = await stored.nextv(1024); batch.length > 0; batch = await stored.nextv(1024)) {
        for (const [key, hash] of batch) {
          const leaf = parseNodeKey(key).n;
          if (leaf !== current) {
            if (current >= 0) {
              const out = leafOut(current, entries);
              if (out.entries.length > 0) yield out;
            }
            while (nextExtra < extra.length && (extra[nextExtra] as number) < leaf) {
              const out = leafOut(extra[nextExtra++] as number, new Map());
              if (out.entries.length > 0) yield out;
            }
            if (extra[nextExtra] === leaf) nextExtra++;
            current = leaf;
            entries = new Map();
          }
          entries.set(key.slice(PREFIX_LENGTH), this.checked(key, hash));
        }
      }
      if (current >= 0) {
        const out = leafOut(current, entries);
        if (out.entries.length > 0) yield out;
      }
      while (nextExtra < extra.length) {
        const out = leafOut(extra[nextExtra++] as number, new Map());
        if (out.entries.length > 0) yield out;
      }
    } finally {
      await stored.close();
      await snapshot.close();
    }
  }

  /**
   * Reads from disk, off the main thread, the stored entries that the writes of `changes` will
   * replace, so that `apply` finds them in memory. Optional: `apply` reads what it lacks itself.
   */
  async prefetch(changes: ReadonlyArray<{ ops: readonly TxnOp[] }>): Promise<void> {
    const keys: string[] = [];
    const leaves = new Map<string, number>();
    for (const change of changes) {
      for (const op of change.ops) {
        const cls = classifyKey(op.key);
        if (!cls) continue;
        const leaf = leafOf(op.key);
        leaves.set(op.key, leaf);
        const key = entryPrefix(treeNumber(cls), leaf) + op.key;
        if (!this.pending.has(key) && !this.writing.has(key)) keys.push(key);
      }
    }
    const flushesEnded = this.flushesEnded;
    const values = keys.length > 0 ? await this.db.getMany(keys) : [];
    const found = new Map<string, Buffer | undefined>();
    for (let i = 0; i < keys.length; i++) found.set(keys[i] as string, values[i]);
    this.prefetched = { flushesEnded, found, leaves };
  }

  /**
   * Applies the writes of the committed change `index` (keys outside both trees are skipped) and
   * records the root before it when it touched the tree. Indexes must grow.
   */
  apply(index: number, ops: readonly TxnOp[]): void {
    if (index <= this.appliedIndex) throw new RangeError(`change ${index} is at or below the applied index ${this.appliedIndex}`);
    // Every replaced entry is read before anything changes: a read that fails leaves the tree
    // as it was, and the change can be applied again.
    const writes: Array<{ t: number; leaf: number; key: string; before: Buffer | null; after: Buffer | null }> = [];
    const inChange = new Map<string, Buffer | null>();
    for (const op of ops) {
      const cls = classifyKey(op.key);
      if (!cls) continue;
      const t = treeNumber(cls);
      const leaf = this.prefetched?.leaves.get(op.key) ?? leafOf(op.key);
      const key = entryPrefix(t, leaf) + op.key;
      const before = inChange.has(key) ? (inChange.get(key) as Buffer | null) : this.entryBefore(key);
      const after = op.type === 'put' ? entryHash(op.key, op.value) : null;
      inChange.set(key, after);
      if (before || after) writes.push({ t, leaf, key, before, after });
    }
    const touched = new Set<number>();
    for (const { t, leaf, key, before, after } of writes) {
      const sum = this.levels[t]![LEAF_LEVEL]!.subarray(leaf * HASH_BYTES, (leaf + 1) * HASH_BYTES);
      if (before) subtractFromSum(sum, before);
      if (after) addToSum(sum, after);
      this.counts[t] = this.counts[t]! + (after ? 1 : 0) - (before ? 1 : 0);
      this.pending.set(key, after);
      touched.add(t * LEAVES + leaf);
    }
    if (touched.size > 0) {
      const before = this.rootValue;
      for (const id of touched) this.pendingLeaves.add(id);
      this.rehashAbove(touched);
      this.history.record(index, before);
    }
    this.appliedIndex = index;
  }

  /** Whether applies happened since the last flush began. */
  get dirty(): boolean {
    return this.appliedIndex !== this.flushedApplied;
  }

  /**
   * Writes what changed since the last flush, with the applied index it reflects, in one batch:
   * the records are taken now, so applies may go on while it is written. Flushes run one at a time.
   */
  async flush(): Promise<void> {
    // A failed flush is its caller's to report; this one writes what it left.
    while (this.flushing) await this.flushing.catch(() => undefined);
    if (this.frozen || !this.dirty) return;
    const ops: Op[] = [];
    for (const [key, hash] of this.pending) ops.push(hash ? { type: 'put', key, value: hash } : { type: 'del', key });
    const pages = new Set<number>();
    for (const id of this.pendingLeaves) {
      const t = Math.floor(id / LEAVES);
      // Every page above the leaf, as (tree, level, page) packed in one number.
      let n = id % LEAVES;
      for (let level = LEAF_LEVEL - 1; level >= 0; level--) {
        n = Math.floor(n / FANOUT);
        pages.add((t * (LEAF_LEVEL + 1) + level) * LEAVES + n);
      }
    }
    for (const packed of pages) {
      const n = packed % LEAVES;
      const level = Math.floor(packed / LEAVES) % (LEAF_LEVEL + 1);
      const t = Math.floor(packed / LEAVES / (LEAF_LEVEL + 1));
      ops.push({ type: 'put', key: pageKey(t, pageNumber(level, n)), value: this.pageContent(t, level, n) });
    }
    for (const [index, root] of this.history.since(this.flushedApplied)) ops.push({ type: 'put', key: historyKey(index), value: root });
    ops.push({ type: 'put', key: META_KEY, value: this.metaRecord() });
    this.writing = this.pending;
    this.writingLeaves = this.pendingLeaves;
    this.pending = new Map();
    this.pendingLeaves = new Set();
    const applied = this.appliedIndex;
    const oldest = this.history.oldest;
    const write = async () => {
      try {
        await this.db.batch(ops);
        this.flushedApplied = applied;
      } catch (err) {
        // Not written: these entries and pages go out with the next flush, unless newer ones replaced them.
        for (const [key, hash] of this.writing) if (!this.pending.has(key)) this.pending.set(key, hash);
        for (const id of this.writingLeaves) this.pendingLeaves.add(id);
        throw err;
      } finally {
        this.writing = new Map();
        this.writingLeaves = new Set();
        this.flushesEnded++;
      }
      if (oldest !== undefined) await this.db.clear({ gte: HISTORY_RANGE.gte, lt: historyKey(oldest) });
    };
    this.flushing = write().finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  /**
   * Stops flushing until `install`, and waits for a flush in progress: a rebuild is about to
   * rewrite the store, which a flush of the old tree's entries would undo.
   */
  async freeze(): Promise<void> {
    this.frozen = true;
    while (this.flushing) await this.flushing.catch(() => undefined);
  }

  /**
   * Takes over the entries a rebuild wrote (rebuild.ts): recomputes and writes every page, and
   * the checkpoint at the rebuild's index, clearing the reindex marker in the same batch. The
   * history starts again there: roots before older indexes are no longer known.
   */
  async install(rebuilt: RebuiltLeaves, epoch: string): Promise<void> {
    await this.freeze();
    this.pending = new Map();
    this.pendingLeaves = new Set();
    this.prefetched = undefined;
    this.flushesEnded++;
    this.resetLevels();
    for (let t = 0; t < TREES.length; t++) rebuilt.leafHashes[t]!.copy(this.levels[t]![LEAF_LEVEL]!);
    for (let t = 0; t < TREES.length; t++) {
      for (let level = LEAF_LEVEL - 1; level >= 0; level--) {
        for (let n = 0; n < nodesAt(level); n++) pageHash(this.subpages(t, level, n)).copy(this.levels[t]![level]!, n * HASH_BYTES);
      }
    }
    this.counts = [...rebuilt.counts];
    this.rootValue = compositeRoot(this.levels[0]![0]!, this.levels[1]![0]!);
    this.appliedIndex = rebuilt.index;
    this.history = new RootHistory(this.historyLength, rebuilt.index);
    this.lastReindexEpoch = epoch;
    this.wantsRebuild = false;
    await this.db.clear(HISTORY_RANGE);
    const ops: Op[] = [];
    for (let t = 0; t < TREES.length; t++) {
      for (let level = 0; level < LEAF_LEVEL; level++) {
        for (let n = 0; n < nodesAt(level); n++) ops.push({ type: 'put', key: pageKey(t, pageNumber(level, n)), value: this.pageContent(t, level, n) });
      }
    }
    ops.push({ type: 'put', key: META_KEY, value: this.metaRecord() }, { type: 'del', key: REINDEX_KEY }, { type: 'del', key: FIRST_FORMAT_META_KEY });
    await this.db.batch(ops);
    this.flushedApplied = this.appliedIndex;
    this.frozen = false;
  }

  /** A page's content: its subpages' hashes, as in memory now (a copy). */
  private pageContent(t: number, level: number, n: number): Buffer {
    return Buffer.from(this.subpages(t, level, n));
  }

  /** A page's content as a view of the level below (no copy: for hashing it now). */
  private subpages(t: number, level: number, n: number): Buffer {
    const span = FANOUT * HASH_BYTES;
    return this.levels[t]![level + 1]!.subarray(n * span, (n + 1) * span);
  }

  private rehashAbove(leaves: Set<number>): void {
    const byTree: Array<Set<number>> = TREES.map(() => new Set());
    for (const id of leaves) byTree[Math.floor(id / LEAVES)]!.add(Math.floor((id % LEAVES) / FANOUT));
    for (let t = 0; t < TREES.length; t++) {
      let pages = byTree[t]!;
      for (let level = LEAF_LEVEL - 1; level >= 0 && pages.size > 0; level--) {
        const parents = new Set<number>();
        for (const n of pages) {
          this.levels[t]![level]!.set(pageHash(this.subpages(t, level, n)), n * HASH_BYTES);
          parents.add(Math.floor(n / FANOUT));
        }
        pages = parents;
      }
    }
    this.rootValue = compositeRoot(this.levels[0]![0]!, this.levels[1]![0]!);
  }

  /** A stored entry's hash read for a diff: damage is reported to the owner, which rebuilds, as well as thrown. */
  private checked(key: string, stored: Buffer): Buffer {
    try {
      return storedHash(key, stored);
    } catch (err) {
      if (err instanceof MerkleCorruptionError) this.onCorruption?.(err);
      throw err;
    }
  }

  /** The entry hash a write to `key` replaces, or null if the key is not in the tree. */
  private entryBefore(key: string): Buffer | null {
    // null is a delete not yet flushed: the key is gone whatever disk says.
    const unflushed = this.pending.has(key) ? this.pending.get(key) : this.writing.get(key);
    if (unflushed !== undefined) return unflushed;
    const ahead = this.prefetched;
    let stored: Buffer | undefined;
    // A read ahead made before a flush ended may predate what that flush wrote.
    if (ahead && ahead.flushesEnded === this.flushesEnded && ahead.found.has(key)) stored = ahead.found.get(key);
    else stored = this.db.getSync(key);
    return stored ? storedHash(key, stored) : null;
  }

  private resetLevels(): void {
    this.levels = TREES.map(() => Array.from({ length: LEAF_LEVEL + 1 }, (_, level) => Buffer.alloc(nodesAt(level) * HASH_BYTES)));
  }

  private metaRecord(): Buffer {
    const meta: Meta = {
      applied: this.appliedIndex,
      floor: this.history.floor,
      counts: [...this.counts],
      roots: [this.levels[0]![0]!.toString('hex'), this.levels[1]![0]!.toString('hex')],
      root: this.rootValue.toString('hex'),
      lastReindexEpoch: this.lastReindexEpoch,
      format: FORMAT,
    };
    return Buffer.from(JSON.stringify(meta));
  }

  private async load(): Promise<void> {
    if (await this.db.get(FIRST_FORMAT_META_KEY)) {
      this.wantsRebuild = true;
      return;
    }
    const raw = await this.db.get(META_KEY);
    if (!raw) return;
    let meta: Meta;
    try {
      meta = JSON.parse(raw.toString('utf8')) as Meta;
    } catch {
      this.wantsRebuild = true;
      return;
    }
    if (meta.format !== FORMAT) {
      this.wantsRebuild = true;
      return;
    }
    for (const [key, content] of await this.db.iterator(PAGE_RANGE).all()) {
      const { tree: t, n: page } = parseNodeKey(key);
      let level = 0;
      while (pageNumber(level + 1, 0) <= page) level++;
      content.copy(this.levels[t]![level + 1]!, (page - pageNumber(level, 0)) * FANOUT * HASH_BYTES);
    }
    // The roots are the pages' hashes, recomputed: the checkpoint's copies are what a check compares them with.
    for (let t = 0; t < TREES.length; t++) pageHash(this.subpages(t, 0, 0)).copy(this.levels[t]![0]!);
    this.rootValue = compositeRoot(this.levels[0]![0]!, this.levels[1]![0]!);
    this.counts = meta.counts;
    this.appliedIndex = meta.applied;
    this.flushedApplied = meta.applied;
    this.lastReindexEpoch = meta.lastReindexEpoch;
    // One more than the ring holds: if it is there, older roots are gone and the floor rises to it.
    const recorded = await this.db.iterator({ gte: HISTORY_RANGE.gte, lte: historyKey(meta.applied), reverse: true, limit: this.historyLength + 1 }).all();
    const entries = recorded.reverse().map(([key, root]): [number, Buffer] => [Number.parseInt(key.slice(1), 16), root]);
    const dropped = entries.length > this.historyLength ? entries.shift() : undefined;
    this.history = new RootHistory(this.historyLength, Math.max(meta.floor, dropped?.[0] ?? 0));
    for (const [index, root] of entries) this.history.record(index, root);
  }
}

/** A stored entry's hash; anything else in its place is damage that only a reindex repairs. */
function storedHash(key: string, stored: Buffer): Buffer {
  if (stored.length !== HASH_BYTES) throw new MerkleCorruptionError(`the entry of ${JSON.stringify(key.slice(PREFIX_LENGTH))} is ${stored.length} bytes, not ${HASH_BYTES}`);
  return stored;
}
