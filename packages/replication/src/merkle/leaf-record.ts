import { HASH_BYTES, sha256, ZERO_HASH } from './layout';

/**
 * An entry as a leaf record holds it: the key's UTF-8 length (4 bytes), the key, its 32-byte hash.
 * In memory of its own, not a slice of Node's shared Buffer pool: cached leaves keep entries for
 * long, and one kept slice keeps its whole pool block (64 KiB on Node 24) alive.
 */
export function encodeEntry(key: string, hash: Buffer): Buffer {
  const keyBytes = Buffer.byteLength(key, 'utf8');
  const out = Buffer.allocUnsafeSlow(4 + keyBytes + HASH_BYTES);
  out.writeUInt32BE(keyBytes, 0);
  out.write(key, 4, 'utf8');
  out.set(hash, 4 + keyBytes);
  return out;
}

export function entryHashOf(entry: Buffer): Buffer {
  return entry.subarray(entry.length - HASH_BYTES);
}

/**
 * A leaf's entries, each kept as its record holds it (`encodeEntry`), with their keys in order
 * (JavaScript's string order, the same on every node): re-encoding the leaf after a write only
 * concatenates. The record is the entries in that order; an empty leaf's is empty (not stored).
 */
export class Leaf {
  private readonly entries = new Map<string, Buffer>();
  private order: string[] = [];

  get size(): number {
    return this.entries.size;
  }

  get(key: string): Buffer | undefined {
    return this.entries.get(key);
  }

  /** Returns whether `key` is new to the leaf. */
  set(key: string, entry: Buffer): boolean {
    const added = !this.entries.has(key);
    this.entries.set(key, entry);
    if (added) this.order.splice(this.position(key), 0, key);
    return added;
  }

  delete(key: string): boolean {
    if (!this.entries.delete(key)) return false;
    this.order.splice(this.position(key), 1);
    return true;
  }

  keys(): readonly string[] {
    return this.order;
  }

  encode(): Buffer {
    let length = 0;
    for (const entry of this.entries.values()) length += entry.length;
    const out = Buffer.allocUnsafe(length);
    let at = 0;
    // TypedArray.set: Buffer.copy costs more per call than these few dozen bytes take to copy.
    for (const key of this.order) {
      const entry = this.entries.get(key) as Buffer;
      out.set(entry, at);
      at += entry.length;
    }
    return out;
  }

  /** Throws on a record that does not parse (a damaged one): the caller treats it as corruption. */
  static decode(record: Buffer): Leaf {
    const leaf = new Leaf();
    let at = 0;
    while (at < record.length) {
      if (at + 4 > record.length) throw new Error('truncated leaf record');
      const len = record.readUInt32BE(at);
      const end = at + 4 + len + HASH_BYTES;
      if (end > record.length) throw new Error('truncated leaf record');
      leaf.set(record.toString('utf8', at + 4, at + 4 + len), record.subarray(at, end));
      at = end;
    }
    return leaf;
  }

  /** Where `key` is or would go in the order. */
  private position(key: string): number {
    let lo = 0;
    let hi = this.order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.order[mid] as string) < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

export function leafHash(record: Buffer): Buffer {
  return record.length === 0 ? ZERO_HASH : sha256(record);
}
