export { associationPaths, associatedSecretsView, SyncQueueFullError } from './association-paths';
export { AssociationStore, SYNC_STATUSES } from './association-store';
export type { Association, SyncStatus } from './association-store';
export { associationsPrefix, storedAssociations } from './associations';
export type { DestinationAssociations, DestinationRef } from './associations';
export { defaultClients } from './clients';
export { MANAGED_TAG } from './clients/cloud1-sm';
export { DestinationError } from './clients/destination-client';
export type { DestinationClient, DestinationClientFactory } from './clients/destination-client';
export { buildDestination, destinationView, effectiveTemplate, OBFUSCATED } from './destination';
export type { Destination } from './destination';
export { DestinationStore } from './destination-store';
export {
  DEFAULT_DEPLOYHOST_API_URL, DEFAULT_REPOHOST_API_URL, DEPLOYMENT_ENVIRONMENTS, DESTINATION_TYPES, GRANULARITIES, syncSettingsFromEnv, TYPE_SPECS,
} from './destination-types';
export type { DestinationType, Granularity, SyncSettings } from './destination-types';
export { coreMounts, secretSync } from './extension';
export type { SecretSyncOptions } from './extension';
export { CHANGES_NOT_RETAINED, isKvV2 } from './host';
export type { SecretReader, SecretState, SyncFeed, SyncMount, SyncMounts } from './host';
export { syncPaths } from './paths';
export { DEFAULT_QUEUE_CAPACITY, loadSyncConfig } from './sync-config';
export type { SyncConfig } from './sync-config';
export { backoffMs, SyncQueue } from './sync-queue';
export type { SyncOperation } from './sync-queue';
export { externalSecrets, SyncRunner } from './sync-runner';
export { SyncService } from './sync-service';
export { parseTemplate, PLACEHOLDERS, renderTemplate } from './template';
export type { Placeholder, SecretNameTemplate } from './template';
