import { BadRequestError, definePath, StrongroomError, type BackendRequest, type FieldData, type PathDefinition } from '@strongroom/core';
import { deleteAssociationOps, putAssociationOps, type Association, type AssociationStore } from './association-store';
import type { DestinationRef } from './associations';
import { effectiveTemplate, requireDestinationName, type Destination } from './destination';
import type { DestinationStore } from './destination-store';
import { requireType } from './destination-types';
import { isKvV2, type SyncMount, type SyncMounts } from './host';
import type { NewOperation, SyncQueue } from './sync-queue';
import { externalSecrets } from './sync-runner';
import { syncOperation } from './sync-service';

export interface AssociationPathDeps {
  destinations: DestinationStore;
  associations: AssociationStore;
  queue: SyncQueue;
  mounts: SyncMounts;
  now: () => number;
}

/** The queue could not take an unsync: removing now would leave the external secret behind for good. */
export class SyncQueueFullError extends StrongroomError {
  constructor(capacity: number) {
    super('sync_queue_full', 503, `the sync queue is full (queue_capacity ${capacity}): try again once it drains, or raise queue_capacity`);
  }
}

const MAX_SECRET_NAME = 1024;

function requireKvMount(mounts: SyncMounts, namespaceId: string, raw: string): SyncMount {
  const path = raw.replace(/^\/+|\/+$/g, '');
  if (path === '') throw new BadRequestError('missing required field "mount"');
  const mount = mounts.byPath(namespaceId, `${path}/`);
  if (!mount) throw new BadRequestError(`invalid value for "mount": no secrets engine is mounted at "${path}/" in this namespace`);
  if (!isKvV2(mount)) throw new BadRequestError(`invalid value for "mount": "${path}/" is not a KV version 2 mount; only KV v2 secrets can be synced`);
  return mount;
}

function requireSecretName(raw: string): string {
  if (raw === '') throw new BadRequestError('missing required field "secret_name"');
  if (raw.length > MAX_SECRET_NAME) throw new BadRequestError(`invalid value for "secret_name": must be at most ${MAX_SECRET_NAME} characters`);
  const segments = raw.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..') || /[\u0000-\u001f\u007f]/.test(raw)) {
    throw new BadRequestError('invalid value for "secret_name": must be a secret\'s path in the mount, without empty, "." or ".." segments, a leading or trailing "/", or control characters');
  }
  return raw;
}

/** The unsync of an association that goes: the names it wrote, and the destination as it is now, since both may be gone when it runs. */
export function unsyncOperation(a: Association, mount: SyncMount | undefined, d: Destination, cause: 'removed' | 'purged'): NewOperation {
  const names = new Set(Object.keys(a.synced));
  // Written by an attempt that had not recorded its result yet, perhaps.
  if (a.granularity === 'secret-path' && mount) names.add((externalSecrets(a, mount, null)[0] as { name: string }).name);
  return { ...syncOperation(a, cause), kind: 'unsync', names: [...names], destination: d };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** How one association reads: one entry, or with secret-key granularity one per key synced. */
function entries(a: Association): Array<[string, Record<string, unknown>]> {
  const base: Record<string, unknown> = {
    accessor: a.accessor, secret_name: a.secret_name, sync_status: a.sync_status, updated_at: iso(a.updated_at),
    store_name: a.name, store_type: a.type, ...(a.last_error ? { last_error: a.last_error } : {}),
  };
  const keys = Object.values(a.synced).flatMap((s) => (s.key !== undefined ? [s.key] : [])).sort();
  if (a.granularity === 'secret-key' && keys.length > 0) {
    return keys.map((key) => [`${a.accessor}/${a.secret_name}/${key}`, { ...base, sub_key: key }]);
  }
  return [[`${a.accessor}/${a.secret_name}`, base]];
}

export function associatedSecretsView(ref: DestinationRef, list: Association[]): Record<string, unknown> {
  return { associated_secrets: Object.fromEntries(list.flatMap(entries)), store_name: ref.name, store_type: ref.type };
}

/** The associations paths: set and remove on a destination, and the views by destination and by secret. */
export function associationPaths(deps: AssociationPathDeps): PathDefinition[] {
  const { destinations, associations, queue, mounts, now } = deps;
  const target = (req: BackendRequest, f: FieldData): DestinationRef => ({
    namespaceId: req.namespace.id, type: requireType(f.string('type')), name: requireDestinationName(f.string('name')),
  });
  const destinationFields = { type: { type: 'string', required: true }, name: { type: 'string', required: true } } as const;
  const secretFields = { mount: { type: 'string' }, secret_name: { type: 'string' } } as const;

  async function destinationsOfSecret(req: BackendRequest, f: FieldData) {
    const mount = requireKvMount(mounts, req.namespace.id, f.string('mount'));
    const secretName = requireSecretName(f.string('secret_name'));
    const found = (await associations.ofSecret(mount.accessor, secretName)).filter((a) => a.namespace_id === req.namespace.id);
    const associated_destinations: Record<string, unknown> = {};
    for (const a of found) {
      for (const [, view] of entries(a)) associated_destinations[`${a.type}/${a.name}`] ??= view;
    }
    return { data: { associated_destinations } };
  }

  return [
    definePath({
      pattern: 'sync/destinations/(?<type>[^/]+)/(?<name>[^/]+)/associations/set',
      fields: { ...destinationFields, ...secretFields },
      operations: {
        update: async (req, f) => {
          const ref = target(req, f);
          const mount = requireKvMount(mounts, ref.namespaceId, f.string('mount'));
          const secretName = requireSecretName(f.string('secret_name'));
          await destinations.locked(ref.namespaceId, ref.type, ref.name, async (d) => {
            if (!d) throw new BadRequestError(`destination ${ref.type}/${ref.name} does not exist: create it first`);
            if (d.purge_initiated_at !== undefined) throw new BadRequestError(`destination ${ref.type}/${ref.name} is being purged: it takes no new associations`);
            await queue.exclusive(async (t) => {
              // Already linked: a refresh, which queues a sync again (and so retries a failed one).
              const a: Association = (await associations.get(ref, mount.accessor, secretName)) ?? {
                namespace_id: ref.namespaceId, type: ref.type, name: ref.name, accessor: mount.accessor, secret_name: secretName,
                granularity: d.granularity, template: effectiveTemplate(d), sync_status: 'UNKNOWN', updated_at: now(), synced: {},
              };
              if (t.enqueue([syncOperation(a, 'associated')])) {
                a.sync_status = 'PENDING';
                delete a.last_error;
              } else {
                a.sync_status = 'INTERNAL_VAULT_ERROR';
                a.last_error = `the sync queue is full (queue_capacity ${t.capacity}): the sync was not queued; raise queue_capacity and set the association again`;
              }
              a.updated_at = now();
              t.write(putAssociationOps(a));
            });
          });
          return { data: associatedSecretsView(ref, await associations.ofDestination(ref)) };
        },
      },
    }),
    definePath({
      pattern: 'sync/destinations/(?<type>[^/]+)/(?<name>[^/]+)/associations/remove',
      fields: { ...destinationFields, ...secretFields },
      operations: {
        update: async (req, f) => {
          const ref = target(req, f);
          const mount = requireKvMount(mounts, ref.namespaceId, f.string('mount'));
          const secretName = requireSecretName(f.string('secret_name'));
          await destinations.locked(ref.namespaceId, ref.type, ref.name, async (d) => {
            if (!d) return;
            await queue.exclusive(async (t) => {
              const a = await associations.get(ref, mount.accessor, secretName);
              // Not associated: nothing to undo, and a success.
              if (!a) return;
              if (!t.enqueue([unsyncOperation(a, mount, d, 'removed')])) throw new SyncQueueFullError(t.capacity);
              t.write(deleteAssociationOps(a));
            });
          });
          return { data: associatedSecretsView(ref, await associations.ofDestination(ref)) };
        },
      },
    }),
    definePath({
      pattern: 'sync/destinations/(?<type>[^/]+)/(?<name>[^/]+)/associations',
      fields: destinationFields,
      operations: {
        read: async (req, f) => {
          const ref = target(req, f);
          if (!(await destinations.get(ref.namespaceId, ref.type, ref.name))) return null;
          return { data: associatedSecretsView(ref, await associations.ofDestination(ref)) };
        },
      },
    }),
    definePath({
      pattern: 'sync/associations/?',
      operations: {
        list: async (req) => {
          const all = (await associations.all()).filter((a) => a.namespace_id === req.namespace.id);
          const key_info: Record<string, string[]> = {};
          for (const a of all) {
            const secrets = (key_info[`${a.accessor}/`] ??= []);
            if (!secrets.includes(a.secret_name)) secrets.push(a.secret_name);
          }
          for (const list of Object.values(key_info)) list.sort();
          return {
            data: {
              keys: Object.keys(key_info).sort(), key_info,
              total_associations: all.length, total_secrets: Object.values(key_info).reduce((n, l) => n + l.length, 0),
            },
          };
        },
      },
    }),
    definePath({
      pattern: 'sync/associations/destinations',
      fields: secretFields,
      operations: { read: destinationsOfSecret },
    }),
    definePath({
      pattern: 'sync/associations/(?<mount>[^/]+)/(?<secret_name>.+)',
      fields: secretFields,
      operations: { read: destinationsOfSecret },
    }),
  ];
}
