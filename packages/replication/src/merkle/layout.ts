import { hash } from 'node:crypto';
import type { KeyClass } from '../key-space';

/*
 * The shape of each of the two trees (`replicated` and `local`), identical on every node of every
 * cluster, so that two trees compare node by node:
 *
 *   level 0   1 page (the tree's root page)         16 subpages each
 *   level 1   16 pages                              16 subpages each
 *   level 2   256 pages                             16 subpages each: the leaves
 *   level 3   4096 leaves, a key's leaf being the first 12 bits of sha256(key)
 *
 * A leaf holds its entries (key, sha256 of key and value). Its hash is the sum of its entries'
 * hashes, each read as a 256-bit big-endian number, modulo 2^256: a write changes it by the
 * difference of one entry's old and new hash, whatever the number of entries in the leaf, and
 * equal sets of entries sum alike in any order. A page holds its 16 subpages' hashes (512 bytes);
 * its hash is their sha256. Anything empty hashes to 32 zero bytes, so empty parts of two trees
 * agree without hashing. The tree's root is its level-0 page's hash; the composite root is the
 * sha256 of the replicated root then the local one.
 *
 * Pages are numbered level by level from the root (level 0 is page 0, level 1 pages 1-16, level 2
 * pages 17-272); that number names a page on disk and in a corruption report.
 *
 * Why this shape: the leaf level's hashes are 128 KiB a tree, small enough for a secondary to
 * send in one message, so a diff takes two round trips (leaf hashes, then the values of the keys
 * that differ); the hashes of both trees stay in memory (about 280 KiB) while the entries live on
 * disk, one record each; and a write costs the same at 1,000 keys as at 1,000,000 (a leaf summed
 * rather than hashed whole needs no other entry of its leaf).
 */
export const FANOUT = 16;
export const LEAF_LEVEL = 3;
export const LEAVES = FANOUT ** LEAF_LEVEL;
const LEAF_BITS = Math.log2(LEAVES);
export const HASH_BYTES = 32;
export const ZERO_HASH: Buffer = Buffer.alloc(HASH_BYTES);
/** Tree numbers as a corruption report names them. */
export const TREES: readonly KeyClass[] = ['replicated', 'local'];

/** How many nodes (pages, or leaves at LEAF_LEVEL) a tree has at `level`. */
export function nodesAt(level: number): number {
  return FANOUT ** level;
}

/** The number of page `n` of `level` (see the layout above). */
export function pageNumber(level: number, n: number): number {
  return (FANOUT ** level - 1) / (FANOUT - 1) + n;
}

export function leafOf(key: string): number {
  return sha256(key).readUInt32BE(0) >>> (32 - LEAF_BITS);
}

/** One-shot hashing: a hash object per call costs more than the hash itself at these sizes. */
export function sha256(data: string | Buffer): Buffer {
  return hash('sha256', data, 'buffer');
}

/** What a leaf keeps of a key: never the value, which replication does not decrypt nor copy here. */
export function entryHash(key: string, value: Buffer): Buffer {
  const keyBytes = Buffer.byteLength(key, 'utf8');
  const input = Buffer.allocUnsafe(4 + keyBytes + value.length);
  input.writeUInt32BE(keyBytes, 0);
  input.write(key, 4, 'utf8');
  input.set(value, 4 + keyBytes);
  return sha256(input);
}

/** A page's hash from its subpages' hashes (FANOUT * HASH_BYTES bytes). */
export function pageHash(children: Buffer): Buffer {
  for (let i = 0; i < children.length; i++) if (children[i] !== 0) return sha256(children);
  return ZERO_HASH;
}

export function compositeRoot(replicated: Buffer, local: Buffer): Buffer {
  return sha256(Buffer.concat([replicated, local]));
}

/** Adds `entry` (HASH_BYTES) to the leaf sum `sum` in place, modulo 2^256. */
export function addToSum(sum: Buffer, entry: Buffer): void {
  let carry = 0;
  for (let at = HASH_BYTES - 4; at >= 0; at -= 4) {
    const total = sum.readUInt32BE(at) + entry.readUInt32BE(at) + carry;
    sum.writeUInt32BE(total >>> 0, at);
    carry = total > 0xffffffff ? 1 : 0;
  }
}

/** Subtracts `entry` (HASH_BYTES) from the leaf sum `sum` in place, modulo 2^256. */
export function subtractFromSum(sum: Buffer, entry: Buffer): void {
  let borrow = 0;
  for (let at = HASH_BYTES - 4; at >= 0; at -= 4) {
    const total = sum.readUInt32BE(at) - entry.readUInt32BE(at) - borrow;
    sum.writeUInt32BE(total >>> 0, at);
    borrow = total < 0 ? 1 : 0;
  }
}
