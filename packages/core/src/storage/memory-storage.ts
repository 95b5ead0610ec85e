import { childrenOf, type Storage, type TxnOp } from './storage';

/** In-memory physical storage for tests and for engines' unit tests. */
export class MemoryStorage implements Storage {
  readonly data = new Map<string, Buffer>();

  async get(key: string): Promise<Buffer | null> {
    const v = this.data.get(key);
    return v === undefined ? null : Buffer.from(v);
  }

  async put(key: string, value: Buffer): Promise<void> {
    this.data.set(key, Buffer.from(value));
  }

  async delete(key: string): Promise<void> {
    this.data.delete(key);
  }

  async list(prefix: string): Promise<string[]> {
    return childrenOf(prefix, this.data.keys());
  }

  async txn(ops: TxnOp[]): Promise<void> {
    for (const op of ops) {
      if (op.type === 'put') this.data.set(op.key, Buffer.from(op.value));
      else this.data.delete(op.key);
    }
  }

  async close(): Promise<void> {}
}
