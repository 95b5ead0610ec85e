import { createHash } from 'node:crypto';
import { HASH_BYTES, ZERO_HASH } from './layout';

/** A leaf's entries: key -> sha256 of key and value. */
export type LeafEntries = Map<string, Buffer>;

/**
 * A leaf as stored and as hashed: for each entry in key order (JavaScript's string order, the
 * same on every node), the key's UTF-8 length (4 bytes), the key, its 32-byte hash. An empty
 * leaf has an empty record and is not stored.
 */
export function encodeLeaf(entries: LeafEntries): Buffer {
  const keys = [...entries.keys()].sort();
  const parts: Buffer[] = [];
  for (const key of keys) {
    const keyBytes = Buffer.from(key, 'utf8');
    const len = Buffer.allocUnsafe(4);
    len.writeUInt32BE(keyBytes.length, 0);
    parts.push(len, keyBytes, entries.get(key) as Buffer);
  }
  return Buffer.concat(parts);
}

/** Throws on a record that does not parse (a damaged one): the caller treats it as corruption. */
export function decodeLeaf(record: Buffer): LeafEntries {
  const entries: LeafEntries = new Map();
  let at = 0;
  while (at < record.length) {
    if (at + 4 > record.length) throw new Error('truncated leaf record');
    const len = record.readUInt32BE(at);
    const end = at + 4 + len + HASH_BYTES;
    if (end > record.length) throw new Error('truncated leaf record');
    const key = record.toString('utf8', at + 4, at + 4 + len);
    entries.set(key, Buffer.from(record.subarray(at + 4 + len, end)));
    at = end;
  }
  return entries;
}

export function leafHash(record: Buffer): Buffer {
  return record.length === 0 ? ZERO_HASH : createHash('sha256').update(record).digest();
}
