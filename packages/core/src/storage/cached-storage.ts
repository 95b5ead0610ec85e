import type { Storage, TxnOp } from './storage';

/**
 * A read cache of physical entries (ciphertext) below the barrier, bounded in bytes, least
 * recently used out first. Every write goes through it, so it stays exact as long as nothing
 * writes the inner storage behind its back; whatever does (a Raft follower applying the log)
 * must call `invalidate` for the keys it changed.
 *
 * Reads and writes overlap: a read that started before a write may finish after it with the
 * old value. So every change bumps a generation, and a read or write only caches what it saw
 * if no change happened while it was in flight; otherwise the key is left to the next read.
 */
export class CachedStorage implements Storage {
  private readonly entries = new Map<string, Buffer | null>();
  private bytes = 0;
  private generation = 0;

  constructor(private readonly inner: Storage, private readonly maxBytes = 64 * 1024 * 1024) {}

  private sizeOf(key: string, value: Buffer | null): number {
    return key.length * 2 + (value?.length ?? 0) + 64;
  }

  private remember(key: string, value: Buffer | null): void {
    this.forget(key);
    const size = this.sizeOf(key, value);
    if (size > this.maxBytes / 16) return;
    this.entries.set(key, value);
    this.bytes += size;
    while (this.bytes > this.maxBytes) {
      const oldest = this.entries.keys().next().value as string;
      this.forget(oldest);
    }
  }

  private forget(key: string): void {
    if (!this.entries.has(key)) return;
    this.bytes -= this.sizeOf(key, this.entries.get(key) ?? null);
    this.entries.delete(key);
  }

  /**
   * A write finished: whether nothing else changed while it ran (so what it wrote is current).
   * Either way the finish is a change, so reads that overlapped it do not cache what they saw.
   */
  private settle(started: number): boolean {
    const clean = started === this.generation;
    this.generation++;
    return clean;
  }

  invalidate(keys?: Iterable<string>): void {
    this.generation++;
    if (!keys) {
      this.entries.clear();
      this.bytes = 0;
      return;
    }
    for (const k of keys) this.forget(k);
  }

  async get(key: string): Promise<Buffer | null> {
    if (this.entries.has(key)) {
      const value = this.entries.get(key) ?? null;
      // Re-insert to mark it most recently used.
      this.entries.delete(key);
      this.entries.set(key, value);
      return value === null ? null : Buffer.from(value);
    }
    const started = this.generation;
    const value = await this.inner.get(key);
    if (started === this.generation) this.remember(key, value === null ? null : Buffer.from(value));
    return value;
  }

  async put(key: string, value: Buffer): Promise<void> {
    this.forget(key);
    const started = ++this.generation;
    await this.inner.put(key, value);
    if (this.settle(started)) this.remember(key, Buffer.from(value));
  }

  async delete(key: string): Promise<void> {
    this.forget(key);
    const started = ++this.generation;
    await this.inner.delete(key);
    if (this.settle(started)) this.remember(key, null);
  }

  list(prefix: string): Promise<string[]> {
    return this.inner.list(prefix);
  }

  async txn(ops: TxnOp[]): Promise<void> {
    for (const op of ops) this.forget(op.key);
    const started = ++this.generation;
    await this.inner.txn(ops);
    if (this.settle(started)) {
      for (const op of ops) this.remember(op.key, op.type === 'put' ? Buffer.from(op.value) : null);
    }
  }

  close(): Promise<void> {
    this.invalidate();
    return this.inner.close();
  }
}
