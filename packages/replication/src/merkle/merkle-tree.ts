import type { TxnOp } from '@strongroom/base';
import { classifyKey, type KeyClass } from '../key-space';
import {
  compositeRoot, entryHash, FANOUT, HASH_BYTES, LEAF_LEVEL, leafOf, LEAVES, nodesAt, pageHash, pageNumber, TREES, ZERO_HASH,
} from './layout';
import { encodeEntry, entryHashOf, Leaf, leafHash } from './leaf-record';
import { RootHistory } from './root-history';
import { HISTORY_RANGE, historyKey, leafKey, META_KEY, PAGE_RANGE, pageKey, parseNodeKey, REINDEX_KEY, type MerkleDb } from './store';

/** Vault's logshipper_buffer_length: how many roots-before are kept by default. */
export const DEFAULT_HISTORY_LENGTH = 16384;
/** Clean leaves kept decoded in memory; dirty ones are kept until written whatever their number. */
const LEAF_CACHE = 1024;

/** The checkpoint record. */
interface Meta {
  applied: number;
  floor: number;
  counts: [number, number];
  roots: [string, string];
  root: string;
  lastReindexEpoch?: string | undefined;
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

/**
 * One node's Merkle index (layout.ts): every hash in memory, leaves on disk behind a cache,
 * updated one committed change at a time and written to its LevelDB by `flush` with the
 * applied index it reflects. Only one caller applies (the indexer); `flush` may run meanwhile.
 */
export class MerkleTree {
  /** levels[tree][level]: the hashes of that level's nodes, HASH_BYTES each. */
  private levels: Buffer[][] = [];
  private counts: [number, number] = [0, 0];
  private rootValue: Buffer = compositeRoot(ZERO_HASH, ZERO_HASH);
  private appliedIndex = 0;
  private history: RootHistory;
  /** Decoded leaves by tree * LEAVES + leaf, least recently used first. */
  private readonly cache = new Map<number, Leaf>();
  /** Leaf records changed since the last flush began. */
  private pending = new Map<number, Buffer>();
  /** Leaf records of the flush being written: read from here, not from disk, until it lands. */
  private writing = new Map<number, Buffer>();
  private flushing: Promise<void> | undefined;
  private frozen = false;
  private flushedApplied = 0;
  private lastReindexEpoch: string | undefined;
  /** The checkpoint record did not parse: the tree is empty and wants a reindex. */
  unreadableCheckpoint = false;

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

  /** A leaf's entries, in key order. */
  leafEntries(tree: KeyClass, leaf: number): Array<{ key: string; hash: Buffer }> {
    if (!Number.isInteger(leaf) || leaf < 0 || leaf >= LEAVES) throw new RangeError(`leaf must be an integer from 0 to ${LEAVES - 1}`);
    const entries = this.leaf(treeNumber(tree) * LEAVES + leaf);
    return entries.keys().map((key) => ({ key, hash: Buffer.from(entryHashOf(entries.get(key) as Buffer)) }));
  }

  /**
   * Applies the writes of the committed change `index` (keys outside both trees are skipped) and
   * records the root before it when it touched the tree. Indexes must grow.
   */
  apply(index: number, ops: readonly TxnOp[]): void {
    if (index <= this.appliedIndex) throw new RangeError(`change ${index} is at or below the applied index ${this.appliedIndex}`);
    const touched = new Set<number>();
    for (const op of ops) {
      const cls = classifyKey(op.key);
      if (!cls) continue;
      const t = treeNumber(cls);
      const id = t * LEAVES + leafOf(op.key);
      const entries = this.leaf(id);
      if (op.type === 'put') {
        if (entries.set(op.key, encodeEntry(op.key, entryHash(op.key, op.value)))) this.counts[t] = this.count(cls) + 1;
      } else if (entries.delete(op.key)) {
        this.counts[t] = this.count(cls) - 1;
      }
      touched.add(id);
    }
    if (touched.size > 0) {
      const before = this.rootValue;
      for (const id of touched) {
        const record = (this.cache.get(id) as Leaf).encode();
        this.pending.set(id, record);
        const t = Math.floor(id / LEAVES);
        this.levels[t]![LEAF_LEVEL]!.set(leafHash(record), (id % LEAVES) * HASH_BYTES);
      }
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
    const pages = new Set<number>();
    for (const [id, record] of this.pending) {
      const t = Math.floor(id / LEAVES);
      ops.push(record.length === 0 ? { type: 'del', key: leafKey(t, id % LEAVES) } : { type: 'put', key: leafKey(t, id % LEAVES), value: record });
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
    this.pending = new Map();
    const applied = this.appliedIndex;
    const oldest = this.history.oldest;
    const write = async () => {
      try {
        await this.db.batch(ops);
        this.flushedApplied = applied;
      } catch (err) {
        // Not written: these records go out with the next flush, unless newer ones replaced them.
        for (const [id, record] of this.writing) if (!this.pending.has(id)) this.pending.set(id, record);
        throw err;
      } finally {
        this.writing = new Map();
      }
      this.evict();
      if (oldest !== undefined) await this.db.clear({ gte: HISTORY_RANGE.gte, lt: historyKey(oldest) });
    };
    this.flushing = write().finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  /**
   * Stops flushing until `install`, and waits for a flush in progress: a rebuild is about to
   * rewrite the store, which a flush of the old tree's leaves would undo.
   */
  async freeze(): Promise<void> {
    this.frozen = true;
    while (this.flushing) await this.flushing.catch(() => undefined);
  }

  /**
   * Takes over the leaves a rebuild wrote (rebuild.ts): recomputes and writes every page, and
   * the checkpoint at the rebuild's index, clearing the reindex marker in the same batch. The
   * history starts again there: roots before older indexes are no longer known.
   */
  async install(rebuilt: RebuiltLeaves, epoch: string): Promise<void> {
    await this.freeze();
    this.pending = new Map();
    this.cache.clear();
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
    await this.db.clear(HISTORY_RANGE);
    const ops: Op[] = [];
    for (let t = 0; t < TREES.length; t++) {
      for (let level = 0; level < LEAF_LEVEL; level++) {
        for (let n = 0; n < nodesAt(level); n++) ops.push({ type: 'put', key: pageKey(t, pageNumber(level, n)), value: this.pageContent(t, level, n) });
      }
    }
    ops.push({ type: 'put', key: META_KEY, value: this.metaRecord() }, { type: 'del', key: REINDEX_KEY });
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

  /** A leaf's entries, read from disk on a miss (a synchronous LevelDB read: usually cached). */
  private leaf(id: number): Leaf {
    let entries = this.cache.get(id);
    if (entries) {
      this.cache.delete(id);
      this.cache.set(id, entries);
      return entries;
    }
    const record = this.pending.get(id) ?? this.writing.get(id) ?? this.db.getSync(leafKey(Math.floor(id / LEAVES), id % LEAVES));
    try {
      entries = record ? Leaf.decode(record) : new Leaf();
    } catch (err) {
      throw new MerkleCorruptionError(`leaf ${id % LEAVES} of the ${TREES[Math.floor(id / LEAVES)]} tree does not parse`, { cause: err });
    }
    this.cache.set(id, entries);
    return entries;
  }

  /** Drops the least recently used clean leaves past the cache's size. */
  private evict(): void {
    let excess = this.cache.size - LEAF_CACHE;
    if (excess <= 0) return;
    for (const id of this.cache.keys()) {
      if (excess <= 0) break;
      if (this.pending.has(id) || this.writing.has(id)) continue;
      this.cache.delete(id);
      excess--;
    }
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
    };
    return Buffer.from(JSON.stringify(meta));
  }

  private async load(): Promise<void> {
    const raw = await this.db.get(META_KEY);
    if (!raw) return;
    let meta: Meta;
    try {
      meta = JSON.parse(raw.toString('utf8')) as Meta;
    } catch {
      this.unreadableCheckpoint = true;
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
