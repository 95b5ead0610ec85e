import { deleteAssociationOps, refOf, type AssociationStore } from './association-store';
import { SyncQueueFullError, unsyncOperation } from './association-paths';
import type { DestinationStore } from './destination-store';
import type { SyncMounts } from './host';
import type { SyncQueue } from './sync-queue';

export interface GoneMountsDeps {
  destinations: DestinationStore;
  associations: AssociationStore;
  queue: SyncQueue;
  mounts: SyncMounts;
}

/** Whether a system key is a mount table, whose change may have taken a mount (or a namespace's last one) away. */
export function isMountTableKey(key: string): boolean {
  return key === 'core/mounts' || key === 'core/local-mounts' || /^core\/namespaces\/[^/]+\/(local-)?mounts$/.test(key);
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
