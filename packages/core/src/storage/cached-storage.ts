import type { Storage, TxnOp } from './storage';

/** What is in flight for one key: operations, the writes among them, and changes so far. */
interface KeyActivity {
  pending: number;
  writers: number;
  changes: number;
}

/**
 * A read cache of physical entries (ciphertext) below the barrier, bounded in bytes; the oldest
 * entry not read since it was cached goes first (an entry read meanwhile gets a second chance,
 * see `remember`). Values are held as one-byte (latin1) strings, one character a byte:
 * a string costs V8 its bytes and a small header, while a Buffer of its own costs two objects
 * and a native allocation besides (more than the typical value itself), and a Buffer sliced
 * from the shared pool kept the pool's whole block (64 KiB on Node 24) alive, several times the
 * budget in all. Every write goes through it, so it stays exact as long as nothing writes
 * the inner storage behind its back; whatever does (a Raft follower applying the log) must call
 * `invalidate` for the keys it changed.
 *
 * Reads and writes overlap: a read that started before a write may finish after it with the
 * old value. So each key in flight counts its changes, and an operation caches what it saw
 * only if that key did not change while it ran; otherwise the key is left to the next read.
 * The count is per key so that, under a steady stream of writes, reads of other keys (mount
 * configuration, policies, tokens) still cache.
 */
export class CachedStorage implements Storage {
  private readonly entries = new Map<string, string | null>();
  /** Keys hit since they were last inserted or given their second chance. */
  private readonly used = new Set<string>();
  /** The eviction's place in `entries`: it visits keys oldest first, and reaches those moved to the young end last. */
  private hand: Iterator<string> | undefined;
  private bytes = 0;
  /** Only keys with an operation in flight, so it stays as small as the concurrency. */
  private readonly activity = new Map<string, KeyActivity>();
  /** Bumped when everything is invalidated at once. */
  private epoch = 0;

  constructor(private readonly inner: Storage, private readonly maxBytes = 64 * 1024 * 1024) {}

  private sizeOf(key: string, value: string | null): number {
    return key.length * 2 + (value?.length ?? 0) + 64;
  }

  private remember(key: string, bytes: Buffer | null): void {
    this.forget(key);
    // Through a view, so a plain Uint8Array from a caller reads as bytes too, with no copy.
    const value = bytes === null ? null : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString('latin1');
    const size = this.sizeOf(key, value);
    if (size > this.maxBytes / 16) return;
    this.entries.set(key, value);
    this.bytes += size;
    while (this.bytes > this.maxBytes) {
      // The hand goes on from where it stopped: a fresh iterator would first step over every
      // entry evicted since the table was last rebuilt, which V8 keeps as holes at its front.
      let next = this.hand?.next();
      if (!next || next.done) {
        this.hand = this.entries.keys();
        next = this.hand.next();
        if (next.done) return;
      }
      const oldest = next.value;
      if (this.used.delete(oldest)) {
        const kept = this.entries.get(oldest) as string | null;
        this.entries.delete(oldest);
        this.entries.set(oldest, kept);
      } else {
        this.forget(oldest);
      }
    }
  }

  private forget(key: string): void {
    this.used.delete(key);
    if (!this.entries.has(key)) return;
    this.bytes -= this.sizeOf(key, this.entries.get(key) ?? null);
    this.entries.delete(key);
  }

  private begin(key: string): KeyActivity {
    let a = this.activity.get(key);
    if (!a) {
      a = { pending: 0, writers: 0, changes: 0 };
      this.activity.set(key, a);
    }
    a.pending++;
    return a;
  }

  private end(key: string, a: KeyActivity): void {
    if (--a.pending === 0) this.activity.delete(key);
  }

  invalidate(keys?: Iterable<string>): void {
    if (!keys) {
      this.epoch++;
      for (const a of this.activity.values()) a.changes++;
      this.entries.clear();
      this.used.clear();
      this.hand = undefined;
      this.bytes = 0;
      return;
    }
    for (const k of keys) {
      this.forget(k);
      const a = this.activity.get(k);
      if (a) a.changes++;
    }
  }

  async get(key: string): Promise<Buffer | null> {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.used.add(key);
      return value === null ? null : Buffer.from(value, 'latin1');
    }
    const a = this.begin(key);
    // With a write of this key in flight, the read may see either value.
    const settled = a.writers === 0;
    const changes = a.changes;
    const epoch = this.epoch;
    try {
      const read = await this.inner.get(key);
      if (settled && a.changes === changes && this.epoch === epoch) this.remember(key, read);
      return read;
    } finally {
      this.end(key, a);
    }
  }

  put(key: string, value: Buffer): Promise<void> {
    return this.write([key], () => this.inner.put(key, value), () => this.remember(key, value));
  }

  delete(key: string): Promise<void> {
    return this.write([key], () => this.inner.delete(key), () => this.remember(key, null));
  }

  list(prefix: string): Promise<string[]> {
    return this.inner.list(prefix);
  }

  readBarrier(): Promise<void> | null {
    return this.inner.readBarrier?.() ?? null;
  }

  txn(ops: TxnOp[]): Promise<void> {
    return this.write(ops.map((op) => op.key), () => this.inner.txn(ops), () => {
      for (const op of ops) this.remember(op.key, op.type === 'put' ? op.value : null);
    });
  }

  /**
   * A write is a change to each of its keys when it starts (reads in flight must not cache the
   * old value) and when it ends. What it wrote is cached only if no other write of those keys
   * overlapped it and nothing invalidated them meanwhile, since otherwise which value the
   * storage holds last is unknown; then the keys are left to the next read.
   */
  private async write(keys: string[], run: () => Promise<void>, cache: () => void): Promise<void> {
    const started = [...new Set(keys)].map((key) => {
      this.forget(key);
      const a = this.begin(key);
      const alone = a.writers === 0;
      a.writers++;
      a.changes++;
      return { key, a, alone, changes: a.changes };
    });
    const epoch = this.epoch;
    let clean = false;
    try {
      await run();
      clean = this.epoch === epoch && started.every((s) => s.alone && s.a.changes === s.changes);
    } finally {
      for (const s of started) {
        s.a.writers--;
        s.a.changes++;
        this.forget(s.key);
        this.end(s.key, s.a);
      }
    }
    if (clean) cache();
  }

  close(): Promise<void> {
    this.invalidate();
    return this.inner.close();
  }
}
