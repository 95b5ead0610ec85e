import { deleteAssociationOps, type AssociationStore } from './association-store';
import { SyncQueueFullError, unsyncOperation } from './association-paths';
import type { DestinationRef } from './associations';
import { destinationKey, putDestinationOps, type DestinationStore } from './destination-store';
import type { SyncMounts } from './host';
import type { NewOperation, SyncQueue } from './sync-queue';

export interface PurgeDeps {
  destinations: DestinationStore;
  associations: AssociationStore;
  queue: SyncQueue;
  mounts: SyncMounts;
  now: () => number;
}

/** The queued deletion of a destination, run after the unsyncs queued before it. */
export function purgeOperation(ref: DestinationRef): NewOperation {
  return { kind: 'purge', namespace_id: ref.namespaceId, type: ref.type, name: ref.name, accessor: '', secret_name: '', cause: 'purged', version: 0 };
}

/**
 * `DELETE ?purge=true`: in one commit, every association of the destination goes with an unsync
 * queued for it, then the destination's own deletion, and the destination is marked as being
 * purged (it takes no new associations meanwhile). With no associations it is deleted at once.
 * Under the destination's lock, so no association is made meanwhile. A purge already running is
 * left to run.
 */
export async function startPurge(deps: PurgeDeps, ref: DestinationRef): Promise<void> {
  const { destinations, associations, queue, mounts } = deps;
  await destinations.locked(ref.namespaceId, ref.type, ref.name, async (d) => {
    if (!d || d.purge_initiated_at !== undefined) return;
    await queue.exclusive(async (t) => {
      const list = await associations.ofDestination(ref);
      if (list.length === 0) {
        t.write([{ type: 'delete', key: destinationKey(ref.namespaceId, ref.type, ref.name) }]);
        return;
      }
      const ops = [...list.map((a) => unsyncOperation(a, mounts.byAccessor(a.accessor), d, 'purged')), purgeOperation(ref)];
      if (!t.enqueue(ops)) throw new SyncQueueFullError(t.capacity);
      for (const a of list) t.write(deleteAssociationOps(a));
      t.write(putDestinationOps(ref.namespaceId, { ...d, purge_initiated_at: deps.now(), purge_error: '' }));
    });
  });
}
