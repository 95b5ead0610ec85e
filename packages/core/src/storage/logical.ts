import type { TxnOp } from './storage';

/**
 * What a backend sees: plaintext values under its own prefix. The barrier encrypts below this;
 * a mount's view adds its `logical/<uuid>/` prefix so engines never see other mounts' keys.
 */
export interface LogicalStorage {
  get(key: string): Promise<Buffer | null>;
  put(key: string, value: Buffer): Promise<void>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<string[]>;
  txn(ops: TxnOp[]): Promise<void>;
}

export async function getJson<T>(storage: LogicalStorage, key: string): Promise<T | null> {
  const raw = await storage.get(key);
  return raw === null ? null : (JSON.parse(raw.toString('utf8')) as T);
}

export function putJson(storage: LogicalStorage, key: string, value: unknown): Promise<void> {
  return storage.put(key, Buffer.from(JSON.stringify(value)));
}

export function jsonOp(key: string, value: unknown): TxnOp {
  return { type: 'put', key, value: Buffer.from(JSON.stringify(value)) };
}

/** A view of `inner` under `prefix` (which ends with '/'). */
export class PrefixedStorage implements LogicalStorage {
  constructor(private readonly inner: LogicalStorage, private readonly prefix: string) {}

  get(key: string): Promise<Buffer | null> {
    return this.inner.get(this.prefix + key);
  }

  put(key: string, value: Buffer): Promise<void> {
    return this.inner.put(this.prefix + key, value);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(this.prefix + key);
  }

  list(prefix: string): Promise<string[]> {
    return this.inner.list(this.prefix + prefix);
  }

  txn(ops: TxnOp[]): Promise<void> {
    return this.inner.txn(ops.map((op) => ({ ...op, key: this.prefix + op.key })));
  }
}

/** Every key below `prefix`, depth first; used to delete a mount's data or a whole subtree. */
export async function collectKeys(storage: LogicalStorage, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for (const child of await storage.list(prefix)) {
    if (child.endsWith('/')) out.push(...(await collectKeys(storage, prefix + child)));
    else out.push(prefix + child);
  }
  return out;
}

export async function deleteTree(storage: LogicalStorage, prefix: string): Promise<void> {
  const keys = await collectKeys(storage, prefix);
  for (let i = 0; i < keys.length; i += 500) {
    await storage.txn(keys.slice(i, i + 500).map((key) => ({ type: 'delete' as const, key })));
  }
}
