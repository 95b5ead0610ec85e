import { ciphertextPrefix } from './codec';
import type { AeadKeyType } from './crypto';
import { sealPool } from './seal-pool';

/** Items a batch must have before its plain encryptions go to the seal pool. */
export const POOLED_BATCH_MIN_ITEMS = 64;

/** An item for the pool: its plaintext still in base64, and the key version it is sealed under. */
export interface PooledItem {
  plaintext: string;
  version: number;
  key: Buffer;
}

/**
 * Seals items on the pool, grouped by key version (one message carries one key). Answers each
 * item's ciphertext in order, or undefined where the request's thread must do the item itself:
 * its plaintext was not standard base64 (so the error comes from the same code as always), or
 * the pool failed.
 */
export async function sealOnPool(type: AeadKeyType, items: readonly PooledItem[]): Promise<Array<string | undefined>> {
  const out = new Array<string | undefined>(items.length);
  const groups = new Map<Buffer, number[]>();
  for (let i = 0; i < items.length; i++) {
    const key = (items[i] as PooledItem).key;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = []));
    group.push(i);
  }
  await Promise.all([...groups.values()].map(async (group) => {
    const first = items[group[0] as number] as PooledItem;
    let sealed: Array<string | null> | null;
    try {
      sealed = await sealPool.seal(type, first.key, ciphertextPrefix(first.version), group.map((i) => (items[i] as PooledItem).plaintext));
    } catch {
      sealed = null;
    }
    for (let k = 0; k < group.length; k++) out[group[k] as number] = sealed?.[k] ?? undefined;
  }));
  return out;
}
