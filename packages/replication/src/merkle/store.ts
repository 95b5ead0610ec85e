import { ClassicLevel } from 'classic-level';
import { makeDir } from '@strongroom/raft';

/*
 * Keys of the Merkle index's LevelDB (UTF-8), node-local and never replicated:
 *   'M'                          the checkpoint: applied index, roots, counts, history floor (JSON)
 *   'm'                          the first format's checkpoint: its presence means that format's
 *                                records (an older release may have written them since), so the
 *                                index rebuilds; a rebuild deletes it
 *   'r'                          a reindex in progress or asked for (JSON), so a restart runs it again
 *   'e' + tree + leaf + key      an entry: the key's entry hash (32 bytes), under its leaf (4 hex)
 *   'l' + tree + leaf (4 hex)    a whole leaf's record, written by the first format only (a
 *                                reindex into this format deletes them)
 *   'p' + tree + page (4 hex)    a page: its subpages' hashes; absent when never written (all zero)
 *   'h' + index (16 hex)         the composite root before that change
 *   'x' + tree + leaf + key      a reindex's sorted staging of (key -> entry hash), cleared after
 * `tree` is one digit: 0 for the replicated tree, 1 for the local one.
 */
export type MerkleDb = ClassicLevel<string, Buffer>;

export const META_KEY = 'M';
export const FIRST_FORMAT_META_KEY = 'm';
export const REINDEX_KEY = 'r';
export const ENTRY_RANGE = { gte: 'e', lt: 'f' };
export const FIRST_FORMAT_LEAF_RANGE = { gte: 'l', lt: 'm' };
export const PAGE_RANGE = { gte: 'p', lt: 'q' };
export const HISTORY_RANGE = { gte: 'h', lt: 'i' };
export const STAGING_RANGE = { gte: 'x', lt: 'y' };

const hex4 = (n: number) => n.toString(16).padStart(4, '0');

/** Where a leaf's entries are: each entry's key is this and the storage key. */
export function entryPrefix(tree: number, leaf: number): string {
  return `e${tree}${hex4(leaf)}`;
}

/** The length of an entry's or a staged entry's prefix (`entryPrefix`, `stagingPrefix`). */
export const PREFIX_LENGTH = 6;

export function pageKey(tree: number, page: number): string {
  return `p${tree}${hex4(page)}`;
}

/** The tree and node number of a page key, or the tree and leaf of an entry key. */
export function parseNodeKey(key: string): { tree: number; n: number } {
  return { tree: Number(key[1]), n: Number.parseInt(key.slice(2, 6), 16) };
}

export function historyKey(index: number): string {
  return `h${index.toString(16).padStart(16, '0')}`;
}

export function stagingPrefix(tree: number, leaf: number): string {
  return `x${tree}${hex4(leaf)}`;
}

/** Not compressed: the records are hashes, which do not compress. */
export async function openMerkleDb(dir: string): Promise<MerkleDb> {
  await makeDir(dir);
  const db = new ClassicLevel<string, Buffer>(dir, { keyEncoding: 'utf8', valueEncoding: 'buffer', compression: false });
  await db.open();
  return db;
}
