import type { KeyClass } from '../key-space';
import { HASH_BYTES, LEAF_LEVEL, LEAVES, nodesAt, TREES } from './layout';
import type { LeafEntry, MerkleTree } from './merkle-tree';

export type { LeafEntry } from './merkle-tree';

/*
 * A Merkle sync, as plain data for the wire, page by page of the answer:
 *   1. merkle-diff: the secondary sends `summarize(tree)` (both trees' leaf hashes, 128 KiB each);
 *      the primary answers `answerDiff(tree, theirs, { page })`: its applied index and, for each
 *      leaf that differs from `page.from` on, its entries (key and hash), up to about
 *      `page.maxBytes`, and where the next page starts.
 *   2. merkle-sync: the secondary computes `planSync(tree, answer.leaves)`, asks the primary for
 *      the values of `fetch`, writes them and deletes `remove`, and asks for the next page.
 * Then it streams from the first page's index + 1. Writes on the primary meanwhile are in that
 * stream, and applying a write twice is harmless.
 */

/** The hashes of both trees at one level (HASH_BYTES per node, node order). */
export interface MerkleSummary {
  level: number;
  replicated: Buffer;
  local: Buffer;
}

/** One differing leaf as the primary has it. */
export interface LeafDiff {
  tree: KeyClass;
  leaf: number;
  entries: LeafEntry[];
}

export interface DiffAnswer {
  /** The applied index the entries reflect. */
  index: number;
  leaves: LeafDiff[];
  /** Where the next page starts; null: this answer ends the diff. */
  next: number | null;
}

export function summarize(tree: MerkleTree, level = LEAF_LEVEL): MerkleSummary {
  return { level, replicated: tree.hashesAt('replicated', level), local: tree.hashesAt('local', level) };
}

/** The nodes at the summary's level whose hashes differ from `theirs`. Throws RangeError on a malformed summary. */
export function differingNodes(tree: MerkleTree, theirs: MerkleSummary): Record<KeyClass, number[]> {
  const out: Record<KeyClass, number[]> = { replicated: [], local: [] };
  for (const cls of TREES) {
    const ours = tree.hashesAt(cls, theirs.level);
    const other = theirs[cls];
    if (!(other instanceof Uint8Array) || other.length !== ours.length) {
      throw new RangeError(`${cls} hashes must be ${nodesAt(theirs.level)} hashes of ${HASH_BYTES} bytes for level ${theirs.level}`);
    }
    for (let n = 0; n < nodesAt(theirs.level); n++) {
      const at = n * HASH_BYTES;
      if (ours.compare(other, at, at + HASH_BYTES, at, at + HASH_BYTES) !== 0) out[cls].push(n);
    }
  }
  return out;
}

/**
 * Where an answer may start and how large it may grow. Positions run through the trees in
 * TREES order, then leaf order: the replicated tree's leaf n is n, the local tree's LEAVES + n.
 */
export interface DiffPage {
  from: number;
  /** The answer stops before the leaf that would take it past this many bytes on the wire (one leaf at least). */
  maxBytes: number;
}

export interface DiffAnswerOptions {
  page?: DiffPage;
  /**
   * For a secondary that may hold only some keys: only the replicated tree answers, and only
   * with the entries it allows. A leaf holding keys it may not have answers too, even when its
   * hash matches (it still holds them from before its filter changed): it then removes them.
   */
  allows?: (key: string) => boolean;
}

/** Positions past the last leaf: where a full answer ends. */
export const DIFF_POSITIONS = TREES.length * LEAVES;

/**
 * On the primary: the leaves that differ from the secondary's leaf-level summary, with their
 * entries, from `page.from` on; `next` is where the following page starts, null after the last.
 */
export async function answerDiff(tree: MerkleTree, theirs: MerkleSummary, options: DiffAnswerOptions = {}): Promise<DiffAnswer> {
  if (theirs.level !== LEAF_LEVEL) throw new RangeError(`a diff compares leaves: level must be ${LEAF_LEVEL}`);
  const from = options.page?.from ?? 0;
  const maxBytes = options.page?.maxBytes ?? Infinity;
  if (!Number.isInteger(from) || from < 0 || from > DIFF_POSITIONS) throw new RangeError(`a diff page starts at a position from 0 to ${DIFF_POSITIONS}`);
  const differing = differingNodes(tree, theirs);
  // Taken first: each leaf is read as of this index or later, and replaying a write is harmless.
  const index = tree.applied;
  const leaves: LeafDiff[] = [];
  let bytes = 0;
  for (const [t, cls] of TREES.entries()) {
    const start = from - t * LEAVES;
    if (start >= LEAVES || (options.allows && cls !== 'replicated')) continue;
    const answering = options.allows
      ? leavesAnsweringFiltered(tree, cls, differing[cls], Math.max(0, start), options.allows)
      : differingLeaves(tree, cls, differing[cls].filter((leaf) => leaf >= start));
    for await (const leaf of answering) {
      const size = wireBytes(leaf);
      if (leaves.length > 0 && bytes + size > maxBytes) return { index, leaves, next: t * LEAVES + leaf.leaf };
      leaves.push(leaf);
      bytes += size;
    }
  }
  return { index, leaves, next: null };
}

/** Leaves read per step, at first and at most: each step reads twice the last, so a page reads at most about twice what it holds. */
const FIRST_READ_LEAVES = 16;
const MOST_READ_LEAVES = 1024;

async function* differingLeaves(tree: MerkleTree, cls: KeyClass, leaves: number[]): AsyncGenerator<LeafDiff> {
  for (let i = 0, step = FIRST_READ_LEAVES; i < leaves.length; i += step, step = Math.min(step * 2, MOST_READ_LEAVES)) {
    const some = leaves.slice(i, i + step);
    const found = await entriesOf(tree, cls, some);
    for (const leaf of some) yield { tree: cls, leaf, entries: found.get(leaf) ?? [] };
  }
}

/** Every leaf from `start` that differs or holds a refused key, with only the allowed entries, in leaf order. */
async function* leavesAnsweringFiltered(tree: MerkleTree, cls: KeyClass, differing: number[], start: number, allows: (key: string) => boolean): AsyncGenerator<LeafDiff> {
  const differs = new Set(differing);
  // A differing leaf empty here is not in the scan: it answers empty where the scan passes it.
  const emptyHere = differing.filter((leaf) => leaf >= start);
  let e = 0;
  for await (const { leaf, entries } of tree.leaves(cls, start)) {
    for (; e < emptyHere.length && (emptyHere[e] as number) < leaf; e++) yield { tree: cls, leaf: emptyHere[e] as number, entries: [] };
    if (e < emptyHere.length && emptyHere[e] === leaf) e++;
    const kept = entries.filter((entry) => allows(entry.key));
    if (differs.has(leaf) || kept.length < entries.length) yield { tree: cls, leaf, entries: kept };
  }
  for (; e < emptyHere.length; e++) yield { tree: cls, leaf: emptyHere[e] as number, entries: [] };
}

/** About what a leaf costs in a MerkleDiffResponse (field tags and lengths included). */
function wireBytes(leaf: LeafDiff): number {
  let bytes = 24;
  for (const e of leaf.entries) bytes += Buffer.byteLength(e.key) + HASH_BYTES + 8;
  return bytes;
}

/** Past this many leaves, one scan of the range they span costs less than a read per leaf. */
const LEAVES_READ_ONE_BY_ONE = 16;

/** The entries of `leaves` (in increasing order) of one tree, as of the call or later. */
export async function entriesOf(tree: MerkleTree, cls: KeyClass, leaves: readonly number[]): Promise<Map<number, LeafEntry[]>> {
  const out = new Map<number, LeafEntry[]>();
  if (leaves.length <= LEAVES_READ_ONE_BY_ONE) {
    for (const leaf of leaves) out.set(leaf, await tree.leafEntries(cls, leaf));
    return out;
  }
  const wanted = new Set(leaves);
  for await (const { leaf, entries } of tree.leaves(cls, leaves[0], (leaves.at(-1) as number) + 1)) if (wanted.has(leaf)) out.set(leaf, entries);
  return out;
}

/** On the secondary: the keys to fetch from the primary (missing or different here) and those to delete. */
export async function planSync(tree: MerkleTree, leaves: readonly LeafDiff[]): Promise<{ fetch: string[]; remove: string[] }> {
  const fetch: string[] = [];
  const remove: string[] = [];
  for (const { tree: cls, leaf } of leaves) {
    if (!TREES.includes(cls) || !Number.isInteger(leaf) || leaf < 0 || leaf >= LEAVES) throw new RangeError(`no leaf ${leaf} in a ${cls} tree`);
  }
  const held = new Map<KeyClass, Map<number, LeafEntry[]>>();
  for (const cls of TREES) {
    const wanted = [...new Set(leaves.filter((l) => l.tree === cls).map((l) => l.leaf))].sort((a, b) => a - b);
    held.set(cls, await entriesOf(tree, cls, wanted));
  }
  for (const { tree: cls, leaf, entries } of leaves) {
    const ours = new Map((held.get(cls)?.get(leaf) ?? []).map((e) => [e.key, e.hash]));
    for (const { key, hash } of entries) {
      const mine = ours.get(key);
      if (!mine || !mine.equals(hash)) fetch.push(key);
      ours.delete(key);
    }
    for (const key of ours.keys()) remove.push(key);
  }
  return { fetch, remove };
}
