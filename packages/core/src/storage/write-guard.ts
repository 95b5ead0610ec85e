import type { Storage, TxnOp } from './storage';

/** What a `WriteGuard` asks before a write reaches its storage. */
export interface WritePolicy {
  /**
   * Whether writes are checked at all now. Asked once per write; when false the write's keys
   * are not looked at, so a cluster that never refuses a write pays nothing per key.
   */
  guarding(): boolean;
  /** Throws when `key` may not be written; nothing of the write is stored then. */
  check(key: string): void;
}

/**
 * A storage that checks the keys of every write before any of it reaches `inner`, so a refused
 * write (or transaction) leaves nothing behind.
 */
export class WriteGuard implements Storage {
  constructor(private readonly inner: Storage, private readonly policy: WritePolicy) {}

  get(key: string): Promise<Buffer | null> {
    return this.inner.get(key);
  }

  list(prefix: string): Promise<string[]> {
    return this.inner.list(prefix);
  }

  async put(key: string, value: Buffer): Promise<void> {
    if (this.policy.guarding()) this.policy.check(key);
    await this.inner.put(key, value);
  }

  async delete(key: string): Promise<void> {
    if (this.policy.guarding()) this.policy.check(key);
    await this.inner.delete(key);
  }

  async txn(ops: TxnOp[]): Promise<void> {
    if (this.policy.guarding()) for (const op of ops) this.policy.check(op.key);
    await this.inner.txn(ops);
  }

  readBarrier(): Promise<void> | null {
    return this.inner.readBarrier?.() ?? null;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
