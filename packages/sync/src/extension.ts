import type { CoreExtension, LogicalStorage } from '@strongroom/core';
import { storedAssociations, type DestinationAssociations } from './associations';
import { DestinationStore } from './destination-store';
import { syncSettingsFromEnv, type SyncSettings } from './destination-types';
import { syncPaths } from './paths';

export interface SecretSyncOptions {
  /** The barrier: destinations hold credentials. */
  storage: LogicalStorage;
  /** Operator settings; by default read from the environment once, here. */
  settings?: SyncSettings;
  /** By default, the associations the association store keeps in `storage`. */
  associations?: DestinationAssociations;
}

/** Secret sync as a core extension: the `sys/sync/*` paths. */
export function secretSync(options: SecretSyncOptions): CoreExtension {
  const settings = options.settings ?? syncSettingsFromEnv(process.env);
  return {
    systemPaths: syncPaths({
      storage: options.storage,
      destinations: new DestinationStore(options.storage),
      associations: options.associations ?? storedAssociations(options.storage),
      settings,
    }),
  };
}
