export { buildConfig, CONFIG_FIELDS, DEFAULT_FILE_PREFIX, publicView, STORAGE_TYPES } from './config';
export type { SnapshotConfig, StorageType } from './config';
export { snapshotAutoPaths } from './paths';
export { SnapshotScheduler, snapshotName } from './scheduler';
export type { SchedulerOptions } from './scheduler';
export { statusView } from './status';
export type { SnapshotStatus } from './status';
export { openTarget } from './targets';
export type { SnapshotTarget, StoredSnapshot } from './targets/target';
