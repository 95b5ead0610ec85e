import { MemoryStorage } from '../storage/memory-storage';
import type { LogicalStorage } from '../storage/logical';
import type { TxnOp } from '../storage/storage';
import { PolicyStore } from '../policy-store';

/** Storage whose reads can be held back, to line up a read with a concurrent write. */
class GatedStorage implements LogicalStorage {
  readonly inner = new MemoryStorage();
  private gate: Promise<void> | null = null;
  private open: (() => void) | null = null;
  /** Resolves when a read has reached the gate (and taken its value from storage). */
  reached: Promise<void> = Promise.resolve();
  private markReached: (() => void) | null = null;

  holdReads(): void {
    this.gate = new Promise((resolve) => { this.open = resolve; });
    this.reached = new Promise((resolve) => { this.markReached = resolve; });
  }

  release(): void {
    this.open?.();
    this.gate = null;
  }

  async get(key: string): Promise<Buffer | null> {
    const value = await this.inner.get(key);
    if (this.gate) {
      this.markReached?.();
      await this.gate;
    }
    return value;
  }

  put(key: string, value: Buffer): Promise<void> {
    return this.inner.put(key, value);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }

  list(prefix: string): Promise<string[]> {
    return this.inner.list(prefix);
  }

  txn(ops: TxnOp[]): Promise<void> {
    return this.inner.txn(ops);
  }
}

const GRANT = 'path "secret/*" { capabilities = ["read"] }';
const REVOKE = 'path "other/*" { capabilities = ["read"] }';

describe('PolicyStore caches', () => {
  it('does not keep a policy read before a concurrent write as the current one', async () => {
    const storage = new GatedStorage();
    const writer = new PolicyStore(storage);
    await writer.write('p', GRANT);
    // A fresh store (as after unseal) has nothing cached yet.
    const store = new PolicyStore(storage);
    storage.holdReads();
    const stale = store.acl(['p']);
    await storage.reached;
    await store.write('p', REVOKE);
    storage.release();
    await stale;
    expect((await store.acl(['p'])).allowed('secret/x', 'read').allowed).toBe(false);
    expect((await store.get('p'))?.text).toBe(REVOKE);
  });

  it('does not keep an ACL compiled before a concurrent delete', async () => {
    const storage = new GatedStorage();
    const store = new PolicyStore(storage);
    await store.write('p', GRANT);
    await store.write('q', REVOKE);
    store.clear();
    await store.get('p');
    storage.holdReads();
    const stale = store.acl(['p', 'q']);
    await storage.reached;
    await store.delete('p');
    storage.release();
    await stale;
    expect((await store.acl(['p', 'q'])).allowed('secret/x', 'read').allowed).toBe(false);
  });

  it('answers from the cache once a policy has been read', async () => {
    const storage = new GatedStorage();
    const store = new PolicyStore(storage);
    await store.write('p', GRANT);
    const acl = await store.acl(['p']);
    expect(await store.acl(['p'])).toBe(acl);
    expect(acl.allowed('secret/x', 'read').allowed).toBe(true);
  });

  it('lists names, root included, sorted', async () => {
    const store = new PolicyStore(new GatedStorage());
    await store.setup();
    await store.write('b/c', GRANT);
    await store.write('a', GRANT);
    expect(await store.list()).toEqual(['a', 'b/c', 'default', 'root']);
  });
});
