import { BadRequestError, definePath, type BackendRequest, type FieldData, type LogicalStorage, type PathDefinition } from '@strongroom/core';
import type { DestinationAssociations, DestinationRef } from './associations';
import { buildDestination, DESTINATION_FIELDS, destinationView, requireDestinationName } from './destination';
import type { DestinationStore } from './destination-store';
import { requireType, type SyncSettings } from './destination-types';
import { loadSyncConfig, patchSyncConfig, saveSyncConfig, SYNC_CONFIG_FIELDS } from './sync-config';

export interface SyncPathDeps {
  storage: LogicalStorage;
  destinations: DestinationStore;
  associations: DestinationAssociations;
  settings: SyncSettings;
  /** Told after the config changes: re-enabling sync runs what waited. */
  onConfigChange?: () => void;
  /** `DELETE ?purge=true` on a destination with associations (`startPurge`); without it such a delete is refused. */
  purge?: (ref: DestinationRef) => Promise<void>;
}

function target(req: BackendRequest, f: FieldData) {
  return { namespaceId: req.namespace.id, type: requireType(f.string('type')), name: requireDestinationName(f.string('name')) };
}

/** `sys/sync/config` and `sys/sync/destinations/*`. */
export function syncPaths(deps: SyncPathDeps): PathDefinition[] {
  const { storage, destinations, associations, settings } = deps;
  return [
    definePath({
      pattern: 'sync/config',
      // One queue for the whole server: only the root namespace may switch it off.
      restricted: true,
      fields: SYNC_CONFIG_FIELDS,
      operations: {
        read: async () => ({ data: { ...(await loadSyncConfig(storage)) } }),
        patch: async (_req, f) => {
          const next = patchSyncConfig(await loadSyncConfig(storage), f);
          await saveSyncConfig(storage, next);
          deps.onConfigChange?.();
          return { data: { ...next } };
        },
      },
    }),
    definePath({
      pattern: 'sync/destinations/?',
      operations: {
        list: async (req) => {
          const all = await destinations.all(req.namespace.id);
          const key_info: Record<string, string[]> = {};
          for (const { type, names } of all) key_info[`${type}/`] = names;
          return { data: { keys: Object.keys(key_info).sort(), key_info, total_destinations: all.reduce((n, t) => n + t.names.length, 0) } };
        },
      },
    }),
    definePath({
      pattern: 'sync/destinations/(?<type>[^/]+)/?',
      fields: { type: { type: 'string', required: true } },
      operations: {
        list: async (req, f) => {
          const keys = await destinations.names(req.namespace.id, requireType(f.string('type')));
          return { data: { keys, total_destinations: keys.length } };
        },
      },
    }),
    definePath({
      pattern: 'sync/destinations/(?<type>[^/]+)/(?<name>[^/]+)',
      fields: { ...DESTINATION_FIELDS, purge: { type: 'bool' } },
      existenceCheck: async (req, f) => {
        const t = target(req, f);
        return (await destinations.get(t.namespaceId, t.type, t.name)) !== null;
      },
      operations: {
        read: async (req, f) => {
          const t = target(req, f);
          const d = await destinations.get(t.namespaceId, t.type, t.name);
          return d ? { data: destinationView(d) } : null;
        },
        update: async (req, f) => {
          const t = target(req, f);
          if (f.has('purge')) throw new BadRequestError('"purge" is a parameter of DELETE, not of a write');
          const saved = await destinations.save(t.namespaceId, t.type, t.name, (existing) => ({
            ...buildDestination(t.type, t.name, f, existing, settings),
            // A purge goes on through an update (one that fixes the credentials it was refused with).
            ...(existing?.purge_initiated_at !== undefined ? { purge_initiated_at: existing.purge_initiated_at, purge_error: existing.purge_error ?? '' } : {}),
          }));
          return { data: destinationView(saved) };
        },
        delete: async (req, f) => {
          const t = target(req, f);
          if (f.bool('purge') && deps.purge) {
            await deps.purge(t);
            return null;
          }
          await destinations.remove(t.namespaceId, t.type, t.name, async () => {
            const count = await associations.countFor(t);
            if (count === 0) return;
            throw new BadRequestError(`destination ${t.type}/${t.name} still manages ${count} association(s): remove them first, or delete with purge=true`);
          });
          return null;
        },
      },
    }),
  ];
}
