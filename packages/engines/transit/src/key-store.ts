import { getJson, putJson, type LogicalStorage } from '@strongroom/core';
import { KeyedMutex } from '@strongroom/core';
import { KeyPolicy, POLICY_PREFIX, type StoredKeyPolicy } from './key-policy';
import { LruCache } from './lru-cache';

export const KEYS_CONFIG_KEY = 'config/keys';
export const CACHE_CONFIG_KEY = 'config/cache';

export interface KeysConfig {
  disable_upsert: boolean;
}

export interface CacheConfig {
  /** Parsed keys kept in memory; 0 is unlimited. */
  size: number;
}

export async function loadKeysConfig(storage: LogicalStorage): Promise<KeysConfig> {
  const stored = await getJson<Partial<KeysConfig>>(storage, KEYS_CONFIG_KEY);
  return { disable_upsert: stored?.disable_upsert === true };
}

export async function loadCacheConfig(storage: LogicalStorage): Promise<CacheConfig> {
  const stored = await getJson<Partial<CacheConfig>>(storage, CACHE_CONFIG_KEY);
  return { size: typeof stored?.size === 'number' ? stored.size : 0 };
}

/** Changes `update` decided on; `null` means "leave the key as it is". */
export type KeyChange = { next: KeyPolicy } | { delete: true } | null;

/**
 * The named keys of one mount: storage, the per-key write lock and the cache of parsed keys.
 * One instance per mounted backend, so the cache is per mount.
 *
 * Every write goes through `update`, under the key's lock, and puts the stored result in the
 * cache; a cache miss is also filled under the lock, so a reader can never put back a version
 * older than a writer just stored. Cache hits take no lock: the hot path is a Map lookup.
 */
export class KeyStore {
  private cache: LruCache<KeyPolicy> | undefined;
  private cacheLoading: Promise<LruCache<KeyPolicy>> | undefined;
  private readonly locks = new KeyedMutex();

  /**
   * The cache is sized from cache-config when the mount first serves a request, the moment
   * that corresponds to Vault loading the plugin; later changes to cache-config wait for the
   * next load, as the spec says.
   */
  private cacheFor(storage: LogicalStorage): LruCache<KeyPolicy> | Promise<LruCache<KeyPolicy>> {
    if (this.cache) return this.cache;
    this.cacheLoading ??= loadCacheConfig(storage).then((config) => {
      this.cache = new LruCache<KeyPolicy>(config.size);
      return this.cache;
    }).finally(() => { this.cacheLoading = undefined; });
    return this.cacheLoading;
  }

  /**
   * Sizes the cache now if no request has yet. cache-config calls it before storing a new size,
   * so that size waits for the next load like every later change does.
   */
  async load(storage: LogicalStorage): Promise<void> {
    await this.cacheFor(storage);
  }

  /** The cache size in force for this mount, or undefined before the first request. */
  get activeCacheSize(): number | undefined {
    return this.cache?.capacity;
  }

  get cachedKeys(): number {
    return this.cache?.size ?? 0;
  }

  private async readStored(storage: LogicalStorage, name: string): Promise<KeyPolicy | null> {
    const stored = await getJson<StoredKeyPolicy>(storage, POLICY_PREFIX + name);
    return stored ? KeyPolicy.fromStored(stored) : null;
  }

  /**
   * The key when the cache holds it, else undefined (read it with `get`). The hot path checks
   * here first so a cached key costs no Promise.
   */
  cached(name: string): KeyPolicy | undefined {
    return this.cache?.get(name);
  }

  async get(storage: LogicalStorage, name: string): Promise<KeyPolicy | null> {
    const cache = await this.cacheFor(storage);
    const hit = cache.get(name);
    if (hit) return hit;
    return this.locks.run(name, async () => {
      const again = cache.get(name);
      if (again) return again;
      const loaded = await this.readStored(storage, name);
      if (loaded) cache.set(name, loaded);
      return loaded;
    });
  }

  /**
   * Runs `decide` with the key's current state under its lock and persists what it returns.
   * `decide` must not change `current`: it clones it (cached instances are shared).
   */
  async update<T>(
    storage: LogicalStorage, name: string,
    decide: (current: KeyPolicy | null) => Promise<{ change: KeyChange; result: T }>,
  ): Promise<T> {
    const cache = await this.cacheFor(storage);
    return this.locks.run(name, async () => {
      const current = cache.get(name) ?? await this.readStored(storage, name);
      const { change, result } = await decide(current);
      if (change && 'next' in change) {
        await putJson(storage, POLICY_PREFIX + name, change.next.toStored());
        cache.set(name, change.next);
      } else if (change) {
        await storage.delete(POLICY_PREFIX + name);
        cache.delete(name);
      }
      return result;
    });
  }

  async list(storage: LogicalStorage): Promise<string[]> {
    return (await storage.list(POLICY_PREFIX)).filter((k) => !k.endsWith('/')).sort();
  }

  /**
   * Drops cached keys so the next request reads storage. For whoever learns that storage
   * changed underneath this node (a new leader, a replicated write); nothing calls it yet.
   */
  invalidate(name?: string): void {
    if (name === undefined) this.cache?.clear();
    else this.cache?.delete(name);
  }
}
