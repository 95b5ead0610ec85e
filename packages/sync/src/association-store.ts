import { getJson, jsonOp, type LogicalStorage, type TxnOp } from '@strongroom/core';
import { AssociationIndex, SECRET_INDEX_PREFIX } from './association-index';
import { associationsPrefix, type DestinationRef } from './associations';
import type { DestinationType, Granularity } from './destination-types';

export const SYNC_STATUSES = [
  'UNKNOWN', 'PENDING', 'SYNCED', 'UNSYNCED', 'INTERNAL_VAULT_ERROR', 'CLIENT_SIDE_ERROR', 'EXTERNAL_SERVICE_ERROR',
] as const;
export type SyncStatus = (typeof SYNC_STATUSES)[number];

/** One secret linked to one destination, stored under the destination's `associationsPrefix`. */
export interface Association {
  namespace_id: string;
  type: DestinationType;
  name: string;
  accessor: string;
  secret_name: string;
  /** Fixed when the association is made: changing a destination's options affects only new associations. */
  granularity: Granularity;
  template: string;
  sync_status: SyncStatus;
  /** Epoch ms of the last status change. */
  updated_at: number;
  /** Why the last operation failed or could not be queued (never a credential). */
  last_error?: string;
  /**
   * The external names last written (with the key each holds, for secret-key granularity): what
   * an unsync deletes, and what a new version no longer holding a key removes.
   */
  synced: Record<string, { key?: string }>;
  /**
   * The KV version the destination was last made to hold (0: none, the secret being gone). A
   * newer current version has a sync of its own coming, so the reconciliation leaves it to that.
   */
  synced_version?: number;
}

const INDEX_PREFIX = SECRET_INDEX_PREFIX;

/** A secret name as one key segment: it may hold `/`. */
function segment(text: string): string {
  return encodeURIComponent(text);
}

export function associationKey(ref: DestinationRef, accessor: string, secretName: string): string {
  return associationsPrefix(ref) + segment(`${accessor}/${secretName}`);
}

function indexKey(accessor: string, secretName: string, type: DestinationType, name: string): string {
  return `${INDEX_PREFIX}${segment(accessor)}/${segment(secretName)}/${type}/${segment(name)}`;
}

export function refOf(a: Pick<Association, 'namespace_id' | 'type' | 'name'>): DestinationRef {
  return { namespaceId: a.namespace_id, type: a.type, name: a.name };
}

/** The identity of an association, for ordering work on it. */
export function associationId(a: Pick<Association, 'namespace_id' | 'type' | 'name' | 'accessor' | 'secret_name'>): string {
  return associationKey(refOf(a), a.accessor, a.secret_name);
}

/** The writes that store an association with its index entry. */
export function putAssociationOps(a: Association): TxnOp[] {
  return [jsonOp(associationKey(refOf(a), a.accessor, a.secret_name), a), jsonOp(indexKey(a.accessor, a.secret_name, a.type, a.name), { namespace_id: a.namespace_id })];
}

export function deleteAssociationOps(a: Association): TxnOp[] {
  return [
    { type: 'delete', key: associationKey(refOf(a), a.accessor, a.secret_name) },
    { type: 'delete', key: indexKey(a.accessor, a.secret_name, a.type, a.name) },
  ];
}

/** Reads of the stored associations. */
export class AssociationStore {
  readonly index: AssociationIndex;

  constructor(private readonly storage: LogicalStorage) {
    this.index = new AssociationIndex(storage);
  }

  get(ref: DestinationRef, accessor: string, secretName: string): Promise<Association | null> {
    return getJson<Association>(this.storage, associationKey(ref, accessor, secretName));
  }

  async ofDestination(ref: DestinationRef): Promise<Association[]> {
    const prefix = associationsPrefix(ref);
    const out: Association[] = [];
    for (const key of await this.storage.list(prefix)) {
      const a = await getJson<Association>(this.storage, prefix + key);
      if (a) out.push(a);
    }
    return out.sort((x, y) => (x.accessor + '/' + x.secret_name).localeCompare(y.accessor + '/' + y.secret_name));
  }

  /** Every association of one secret, across the destinations of its namespace. */
  async ofSecret(accessor: string, secretName: string): Promise<Association[]> {
    const prefix = `${INDEX_PREFIX}${segment(accessor)}/${segment(secretName)}/`;
    const out: Association[] = [];
    for (const typeDir of await this.storage.list(prefix)) {
      for (const name of await this.storage.list(prefix + typeDir)) {
        const entry = await getJson<{ namespace_id: string }>(this.storage, prefix + typeDir + name);
        if (!entry) continue;
        const ref = { namespaceId: entry.namespace_id, type: typeDir.slice(0, -1) as DestinationType, name: decodeURIComponent(name) };
        const a = await this.get(ref, accessor, secretName);
        if (a) out.push(a);
      }
    }
    return out;
  }

  /** Every association of every namespace, by secret. */
  async all(): Promise<Association[]> {
    const out: Association[] = [];
    for (const accessor of await this.storage.list(INDEX_PREFIX)) {
      for (const secret of await this.storage.list(INDEX_PREFIX + accessor)) {
        out.push(...(await this.ofSecret(decodeURIComponent(accessor.slice(0, -1)), decodeURIComponent(secret.slice(0, -1)))));
      }
    }
    return out;
  }

  /** The associations of the mounts of one namespace, by accessor. */
  async ofAccessors(accessors: readonly string[]): Promise<Association[]> {
    const out: Association[] = [];
    for (const accessor of accessors) {
      const dir = `${INDEX_PREFIX}${segment(accessor)}/`;
      for (const secret of await this.storage.list(dir)) out.push(...(await this.ofSecret(accessor, decodeURIComponent(secret.slice(0, -1)))));
    }
    return out;
  }
}
