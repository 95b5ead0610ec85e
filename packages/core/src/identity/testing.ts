import type { LogicalStorage } from '../storage/logical';
import type { MemoryStorage } from '../storage/memory-storage';
import type { TxnOp } from '../storage/storage';

/**
 * Yields to the event loop before every operation, so that concurrent callers really interleave
 * between their reads and writes, as they would over Raft.
 */
export class SlowStorage implements LogicalStorage {
  constructor(private readonly inner: LogicalStorage) {}

  private async pause(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  async get(key: string): Promise<Buffer | null> {
    await this.pause();
    return this.inner.get(key);
  }

  async put(key: string, value: Buffer): Promise<void> {
    await this.pause();
    return this.inner.put(key, value);
  }

  async delete(key: string): Promise<void> {
    await this.pause();
    return this.inner.delete(key);
  }

  async list(prefix: string): Promise<string[]> {
    await this.pause();
    return this.inner.list(prefix);
  }

  async txn(ops: TxnOp[]): Promise<void> {
    await this.pause();
    return this.inner.txn(ops);
  }
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The store's records as they sit in memory under `prefix`, decoded, grouped by kind. */
export function dump(memory: MemoryStorage, prefix: string) {
  const out = { entities: new Map<string, Json>(), names: new Map<string, Json>(), aliases: new Map<string, Json>(), aliasIds: new Map<string, Json>() };
  for (const [key, value] of memory.data) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    const parsed = JSON.parse(value.toString('utf8')) as Json;
    if (rest.startsWith('entity/')) out.entities.set(rest, parsed);
    else if (rest.startsWith('entity-name/')) out.names.set(rest, parsed);
    else if (rest.startsWith('alias/')) out.aliases.set(rest, parsed);
    else if (rest.startsWith('alias-id/')) out.aliasIds.set(rest, parsed);
    else throw new Error(`unexpected key ${key}`);
  }
  return out;
}

/**
 * Problems with the stored indexes: every reference must lead to a record that points back,
 * and nothing may be left that no entity owns. Empty when the store is consistent.
 */
export function inconsistencies(memory: MemoryStorage, prefix: string): string[] {
  const { entities, names, aliases, aliasIds } = dump(memory, prefix);
  const problems: string[] = [];
  const enc = encodeURIComponent;
  const owned = new Set<string>();
  for (const [key, e] of entities) {
    if (key !== `entity/${enc(e['id'])}`) problems.push(`${key} holds entity ${e['id']}`);
    if (names.get(`entity-name/${enc(e['name'])}`)?.['id'] !== e['id']) problems.push(`no name index for ${e['id']}`);
    for (const ref of e['aliases'] as Json[]) {
      const aliasKey = `alias/${enc(ref['mount_accessor'])}/${enc(ref['name'])}`;
      const alias = aliases.get(aliasKey);
      if (!alias || alias['id'] !== ref['id'] || alias['canonical_id'] !== e['id']) problems.push(`entity ${e['id']} has a dangling alias ${ref['id']}`);
      owned.add(aliasKey);
    }
  }
  for (const [key, pointer] of names) {
    if (!entities.has(`entity/${enc(pointer['id'])}`)) problems.push(`${key} points to a missing entity`);
  }
  for (const [key, alias] of aliases) {
    if (!owned.has(key)) problems.push(`alias ${alias['id']} at ${key} belongs to no entity`);
    const pointer = aliasIds.get(`alias-id/${enc(alias['id'])}`);
    if (!pointer || `alias/${enc(pointer['mount_accessor'])}/${enc(pointer['name'])}` !== key) problems.push(`no ID index for alias ${alias['id']}`);
  }
  for (const [key, pointer] of aliasIds) {
    if (!aliases.has(`alias/${enc(pointer['mount_accessor'])}/${enc(pointer['name'])}`)) problems.push(`${key} points to a missing alias`);
  }
  return problems;
}
