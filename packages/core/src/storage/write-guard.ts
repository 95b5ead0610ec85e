import type { Storage, TxnOp } from './storage';

/**
 * A storage that asks `check` about the keys of every write before any of it reaches `inner`,
 * so a refused write (or transaction) leaves nothing behind.
 */
export class WriteGuard implements Storage {
  constructor(private readonly inner: Storage, private readonly check: (keys: readonly string[]) => void) {}

  get(key: string): Promise<Buffer | null> {
    return this.inner.get(key);
  }

  list(prefix: string): Promise<string[]> {
    return this.inner.list(prefix);
  }

  async put(key: string, value: Buffer): Promise<void> {
    this.check([key]);
    await this.inner.put(key, value);
  }

  async delete(key: string): Promise<void> {
    this.check([key]);
    await this.inner.delete(key);
  }

  async txn(ops: TxnOp[]): Promise<void> {
    this.check(ops.map((op) => op.key));
    await this.inner.txn(ops);
  }

  readBarrier(): Promise<void> | null {
    return this.inner.readBarrier?.() ?? null;
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
