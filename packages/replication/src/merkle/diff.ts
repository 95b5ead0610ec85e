import type { KeyClass } from '../key-space';
import { HASH_BYTES, LEAF_LEVEL, LEAVES, nodesAt, TREES } from './layout';
import type { LeafEntry, MerkleTree } from './merkle-tree';

export type { LeafEntry } from './merkle-tree';

/*
 * The two round trips of a Merkle sync, as plain data for the wire:
 *   1. merkle-diff: the secondary sends `summarize(tree)` (both trees' leaf hashes, 128 KiB each);
 *      the primary answers `answerDiff(tree, theirs)`: its applied index and, for each leaf
 *      that differs, its entries (key and hash).
 *   2. merkle-sync: the secondary computes `planSync(tree, answer.leaves)`, asks the primary for
 *      the values of `fetch`, writes them and deletes `remove`, then streams from answer.index + 1.
 * Writes on the primary meanwhile are in that stream, and applying a write twice is harmless.
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

/** On the primary: every leaf that differs from the secondary's leaf-level summary, with its entries, at one index. */
export async function answerDiff(tree: MerkleTree, theirs: MerkleSummary): Promise<DiffAnswer> {
  if (theirs.level !== LEAF_LEVEL) throw new RangeError(`a diff compares leaves: level must be ${LEAF_LEVEL}`);
  const differing = differingNodes(tree, theirs);
  // Taken first: each leaf is read as of this index or later, and replaying a write is harmless.
  const index = tree.applied;
  const leaves: LeafDiff[] = [];
  for (const cls of TREES) {
    const found = await entriesOf(tree, cls, differing[cls]);
    for (const leaf of differing[cls]) leaves.push({ tree: cls, leaf, entries: found.get(leaf) ?? [] });
  }
  return { index, leaves };
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
