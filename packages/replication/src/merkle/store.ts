import { ClassicLevel } from 'classic-level';
import { makeDir } from '@strongroom/raft';

/*
 * Keys of the Merkle index's LevelDB (UTF-8), node-local and never replicated:
 *   'm'                          the checkpoint: applied index, roots, counts, history floor (JSON)
 *   'r'                          a reindex in progress or asked for (JSON), so a restart runs it again
 *   'l' + tree + leaf (4 hex)    a leaf record (leaf-record.ts); absent when empty
 *   'p' + tree + page (4 hex)    a page: its subpages' hashes; absent when never written (all zero)
 *   'h' + index (16 hex)         the composite root before that change
 *   'x' + tree + leaf + key      a reindex's sorted staging of (key -> entry hash), cleared after
 * `tree` is one digit: 0 for the replicated tree, 1 for the local one.
 */
export type MerkleDb = ClassicLevel<string, Buffer>;

export const META_KEY = 'm';
export const REINDEX_KEY = 'r';
export const LEAF_RANGE = { gte: 'l', lt: 'm' };
export const PAGE_RANGE = { gte: 'p', lt: 'q' };
export const HISTORY_RANGE = { gte: 'h', lt: 'i' };
export const STAGING_RANGE = { gte: 'x', lt: 'y' };

const hex4 = (n: number) => n.toString(16).padStart(4, '0');

export function leafKey(tree: number, leaf: number): string {
  return `l${tree}${hex4(leaf)}`;
}

export function pageKey(tree: number, page: number): string {
  return `p${tree}${hex4(page)}`;
}

/** The tree and node number of a leaf or page key. */
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
