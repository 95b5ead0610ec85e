import { silentLogger, systemClock, type Clock, type Logger } from '@strongroom/base';
import { NAMESPACE_RECORD_PREFIX, type Core, type CoreExtension, type LogicalStorage } from '@strongroom/core';
import { associationPaths } from './association-paths';
import { AssociationStore } from './association-store';
import { storedAssociations, type DestinationAssociations } from './associations';
import { defaultClients } from './clients';
import type { DestinationClientFactory } from './clients/destination-client';
import { DestinationStore } from './destination-store';
import { removeWhatIsGone } from './gone-mounts';
import { syncSettingsFromEnv, type SyncSettings } from './destination-types';
import type { SecretReader, SyncFeed, SyncMount, SyncMounts } from './host';
import { syncPaths } from './paths';
import { startPurge } from './purge';
import { DEFAULT_RECONCILE_BATCH, DEFAULT_RECONCILE_INTERVAL_MS, Reconciler } from './reconciler';
import { SyncQueue } from './sync-queue';
import { SyncRunner, type SyncObserver } from './sync-runner';
import { SyncService } from './sync-service';

export interface SecretSyncOptions {
  /** The barrier: destinations hold credentials. */
  storage: LogicalStorage;
  /** The mount tables associations refer to (`coreMounts(core)`). */
  mounts: SyncMounts;
  /** Reads KV v2 secrets when an operation runs. */
  reader: SecretReader;
  /** The commit feed's logical view; without it KV changes queue nothing (only the API does). */
  feed?: SyncFeed;
  /** Operator settings; by default read from the environment once, here. */
  settings?: SyncSettings;
  /** By default, the associations the association store keeps in `storage`. */
  associations?: DestinationAssociations;
  /** By default, each type's client on its vendor's SDK or API. */
  clients?: DestinationClientFactory;
  clock?: Clock;
  logger?: Logger;
  /** The most associations a reconciliation round reads at their destinations. */
  reconcileBatch?: number;
  /** Told of the queue and of each operation's outcome (the server's metrics). */
  observer?: SyncObserver;
}

/** The mount tables of a core, as sync reads them. */
export function coreMounts(core: Core): SyncMounts {
  const views = () => core.namespaces.all();
  const toMount = (view: { id: string; path: string }, e: { path: string; type: string; accessor: string; options: Record<string, string> }): SyncMount => ({
    namespaceId: view.id, namespacePath: view.path, path: e.path, type: e.type, accessor: e.accessor, options: e.options,
  });
  return {
    byPath(namespaceId, path) {
      const view = core.namespaces.byId(namespaceId);
      const entry = view?.mounts.get(path);
      return view && entry ? toMount(view, entry) : undefined;
    },
    byAccessor(accessor) {
      for (const view of views()) {
        const entry = view.mounts.all().find((e) => e.accessor === accessor);
        if (entry) return toMount(view, entry);
      }
      return undefined;
    },
    async namespaceExists(namespaceId) {
      if (namespaceId === core.namespaces.root.id) return true;
      // Storage, not the registry in memory: its deletion is stored first, and a registry not loaded yet would know no namespace.
      return (await core.barrier.get(NAMESPACE_RECORD_PREFIX + namespaceId)) !== null;
    },
  };
}

/** Secret sync as a core extension: the `sys/sync/*` paths, and the queue as background work of the active node. */
export function secretSync(options: SecretSyncOptions): CoreExtension {
  const settings = options.settings ?? syncSettingsFromEnv(process.env);
  const clock = options.clock ?? systemClock;
  const { storage } = options;
  const destinations = new DestinationStore(storage);
  const associations = new AssociationStore(storage);
  // Every association is written through the queue's transactions: the index sees each write.
  const queue = new SyncQueue(storage, () => clock.now(), (ops, phase) => associations.index.note(ops, phase));
  const clients = options.clients ?? defaultClients;
  const logger = options.logger ?? silentLogger;
  const runnerDeps = {
    queue, associations, destinations, mounts: options.mounts, reader: options.reader, clients, settings, clock,
    ...(options.observer ? { observer: options.observer } : {}),
  };
  options.observer?.queue?.(() => queue.size());
  const runner = new SyncRunner(runnerDeps);
  const reconciler = new Reconciler({ ...runnerDeps, storage, logger, batch: options.reconcileBatch ?? DEFAULT_RECONCILE_BATCH });
  const service = new SyncService({
    storage, queue, associations, runner, clock, logger, ...(options.feed ? { feed: options.feed } : {}),
    reconciler, reconcileIntervalMs: settings.reconcileIntervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS,
    removeGone: () => removeWhatIsGone({ storage, destinations, associations, queue, mounts: options.mounts }),
  });
  return {
    systemPaths: [
      ...syncPaths({
        storage, destinations, associations: options.associations ?? storedAssociations(storage), settings, onConfigChange: () => service.wake(),
        purge: (ref) => startPurge({ destinations, associations, queue, mounts: options.mounts, now: () => clock.now() }, ref),
      }),
      ...associationPaths({ destinations, associations, queue, mounts: options.mounts, now: () => clock.now() }),
    ],
    service,
  };
}
