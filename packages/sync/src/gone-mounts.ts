import type { LogicalStorage } from '@strongroom/core';
import { deleteAssociationOps, refOf, type AssociationStore } from './association-store';
import { SyncQueueFullError, unsyncOperation } from './association-paths';
import { destinationKey, DESTINATIONS_PREFIX, type DestinationStore } from './destination-store';
import { DESTINATION_TYPES } from './destination-types';
import type { SyncMounts } from './host';
import type { SyncQueue } from './sync-queue';

export interface GoneMountsDeps {
  storage: LogicalStorage;
  destinations: DestinationStore;
  associations: AssociationStore;
  queue: SyncQueue;
  mounts: SyncMounts;
}

/** Whether a system key is a mount table or a namespace record, whose change may have taken a mount or a namespace away. */
export function isTableKey(key: string): boolean {
  return key === 'core/mounts' || key === 'core/local-mounts' || /^core\/namespaces\/[^/]+\/(local-)?mounts$/.test(key) || key.startsWith('sys/namespaces/');
}

/**
 * Removes, as `associations/remove` would, every association whose mount is gone (disabled, or
 * its namespace deleted), an unsync queued for each in the same commit: else the external secrets
 * would stay behind with nothing left here to remove them. Accessors are never reused, so a mount
 * missing now is gone for good. Returns how many went.
 */
export async function removeAssociationsOfGoneMounts(deps: GoneMountsDeps): Promise<number> {
  const { destinations, associations, queue, mounts } = deps;
  const gone = (await associations.all()).filter((a) => mounts.byAccessor(a.accessor) === undefined);
  let removed = 0;
  for (const a of gone) {
    await destinations.locked(a.namespace_id, a.type, a.name, async (d) => {
      await queue.exclusive(async (t) => {
        const current = await associations.get(refOf(a), a.accessor, a.secret_name);
        if (!current) return;
        // A destination already gone was purged: its purge queued the unsyncs.
        if (d && !t.enqueue([unsyncOperation(current, undefined, d, 'removed')])) throw new SyncQueueFullError(t.capacity);
        t.write(deleteAssociationOps(current));
        removed++;
      });
    });
  }
  return removed;
}

/**
 * Deletes the destinations of namespaces that are gone: nothing can reach them any more, and
 * they hold credentials. A namespace goes only once its mounts are disabled, so its associations
 * are gone first; a destination that still has some (queued unsyncs carry their own copy of it)
 * is left for the next look. Returns how many went.
 */
export async function removeDestinationsOfGoneNamespaces(deps: GoneMountsDeps): Promise<number> {
  const { storage, destinations, associations, queue, mounts } = deps;
  if (!mounts.namespaceExists) return 0;
  let removed = 0;
  for (const dir of await storage.list(DESTINATIONS_PREFIX)) {
    if (!dir.endsWith('/')) continue;
    const namespaceId = dir.slice(0, -1);
    if (await mounts.namespaceExists(namespaceId)) continue;
    for (const type of DESTINATION_TYPES) {
      for (const name of await destinations.names(namespaceId, type)) {
        await destinations.locked(namespaceId, type, name, async (d) => {
          if (!d || (await associations.ofDestination({ namespaceId, type, name })).length > 0) return;
          await queue.exclusive(async (t) => t.write([{ type: 'delete', key: destinationKey(namespaceId, type, name) }]));
          removed++;
        });
      }
    }
  }
  return removed;
}

/** Both of the above: what a mount or namespace that went leaves behind. */
export async function removeWhatIsGone(deps: GoneMountsDeps): Promise<number> {
  return (await removeAssociationsOfGoneMounts(deps)) + (await removeDestinationsOfGoneNamespaces(deps));
}
