import { getJson, jsonOp, KeyedMutex, putJson, type LogicalStorage, type TxnOp } from '@strongroom/core';
import { DESTINATION_TYPES, type DestinationType } from './destination-types';
import type { Destination } from './destination';

/** Destinations of namespace <id> live under `sys/sync/destinations/<id>/<type>/<name>`. */
export const DESTINATIONS_PREFIX = 'sys/sync/destinations/';

export function destinationKey(namespaceId: string, type: DestinationType, name: string): string {
  return `${DESTINATIONS_PREFIX}${namespaceId}/${type}/${name}`;
}

/** The write that stores a destination, for a commit that changes more than it. */
export function putDestinationOps(namespaceId: string, d: Destination): TxnOp[] {
  return [jsonOp(destinationKey(namespaceId, d.type, d.name), d)];
}

/** The stored destinations; writes to one destination run one at a time, so an update never loses another's fields. */
export class DestinationStore {
  private readonly locks = new KeyedMutex();

  constructor(private readonly storage: LogicalStorage) {}

  get(namespaceId: string, type: DestinationType, name: string): Promise<Destination | null> {
    return getJson<Destination>(this.storage, destinationKey(namespaceId, type, name));
  }

  /** Runs `change` on the stored destination (or null) and stores what it returns. */
  save(namespaceId: string, type: DestinationType, name: string, change: (existing: Destination | null) => Destination): Promise<Destination> {
    const key = destinationKey(namespaceId, type, name);
    return this.locks.run(key, async () => {
      const next = change(await getJson<Destination>(this.storage, key));
      await putJson(this.storage, key, next);
      return next;
    });
  }

  /**
   * Runs `fn` under the destination's lock with the stored destination (or null): an association
   * made here cannot race the delete check, which runs under the same lock.
   */
  locked<T>(namespaceId: string, type: DestinationType, name: string, fn: (existing: Destination | null) => Promise<T>): Promise<T> {
    const key = destinationKey(namespaceId, type, name);
    return this.locks.run(key, async () => fn(await getJson<Destination>(this.storage, key)));
  }

  /** Deletes unless `guard` throws; the guard runs under the destination's lock. */
  remove(namespaceId: string, type: DestinationType, name: string, guard: () => Promise<void>): Promise<void> {
    const key = destinationKey(namespaceId, type, name);
    return this.locks.run(key, async () => {
      if ((await this.storage.get(key)) === null) return;
      await guard();
      await this.storage.delete(key);
    });
  }

  async names(namespaceId: string, type: DestinationType): Promise<string[]> {
    return (await this.storage.list(`${DESTINATIONS_PREFIX}${namespaceId}/${type}/`)).filter((k) => !k.endsWith('/')).sort();
  }

  /** Names by type, for the types that have any. */
  async all(namespaceId: string): Promise<Array<{ type: DestinationType; names: string[] }>> {
    const out: Array<{ type: DestinationType; names: string[] }> = [];
    for (const type of DESTINATION_TYPES) {
      const names = await this.names(namespaceId, type);
      if (names.length > 0) out.push({ type, names });
    }
    return out;
  }
}
