import { BadRequestError, getJson, putJson, type FieldData, type FieldSchemas, type LogicalStorage } from '@strongroom/core';

export interface SyncConfig {
  /** While true, work that would sync is queued as PENDING instead of sent. */
  disabled: boolean;
  /** The most sync operations the queue holds. */
  queue_capacity: number;
}

export const DEFAULT_QUEUE_CAPACITY = 1_000_000;
/** Far beyond the default; a bound keeps a typo from promising a queue storage cannot hold. */
export const MAX_QUEUE_CAPACITY = 100_000_000;

export const SYNC_CONFIG_KEY = 'sys/sync/config';

export const SYNC_CONFIG_FIELDS: FieldSchemas = {
  disabled: { type: 'bool' },
  queue_capacity: { type: 'int' },
};

export async function loadSyncConfig(storage: LogicalStorage): Promise<SyncConfig> {
  const stored = await getJson<Partial<SyncConfig>>(storage, SYNC_CONFIG_KEY);
  return { disabled: stored?.disabled ?? false, queue_capacity: stored?.queue_capacity ?? DEFAULT_QUEUE_CAPACITY };
}

/** Applies a PATCH: only the fields it names change. */
export function patchSyncConfig(current: SyncConfig, f: FieldData): SyncConfig {
  const next = { ...current };
  if (f.has('disabled')) next.disabled = f.bool('disabled');
  if (f.has('queue_capacity')) {
    const capacity = f.int('queue_capacity');
    if (capacity < 1 || capacity > MAX_QUEUE_CAPACITY) {
      throw new BadRequestError(`invalid value for "queue_capacity": must be between 1 and ${MAX_QUEUE_CAPACITY}`);
    }
    next.queue_capacity = capacity;
  }
  return next;
}

export function saveSyncConfig(storage: LogicalStorage, config: SyncConfig): Promise<void> {
  return putJson(storage, SYNC_CONFIG_KEY, config);
}
