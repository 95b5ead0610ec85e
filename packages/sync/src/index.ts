export { associationsPrefix, storedAssociations } from './associations';
export type { DestinationAssociations, DestinationRef } from './associations';
export { buildDestination, destinationView, effectiveTemplate, OBFUSCATED } from './destination';
export type { Destination } from './destination';
export { DestinationStore } from './destination-store';
export {
  DEPLOYMENT_ENVIRONMENTS, DESTINATION_TYPES, GRANULARITIES, syncSettingsFromEnv, TYPE_SPECS,
} from './destination-types';
export type { DestinationType, Granularity, SyncSettings } from './destination-types';
export { secretSync } from './extension';
export type { SecretSyncOptions } from './extension';
export { syncPaths } from './paths';
export { DEFAULT_QUEUE_CAPACITY, loadSyncConfig } from './sync-config';
export type { SyncConfig } from './sync-config';
export { parseTemplate, PLACEHOLDERS, renderTemplate } from './template';
export type { Placeholder, SecretNameTemplate } from './template';
