import { hash } from 'node:crypto';
import type { Clock } from '@strongroom/base';
import { associationId, putAssociationOps, refOf, type Association, type AssociationStore, type SyncStatus } from './association-store';
import { DestinationError, type DestinationClient, type DestinationClientFactory } from './clients/destination-client';
import { sameTarget, type Destination } from './destination';
import { putDestinationOps, type DestinationStore } from './destination-store';
import { TYPE_SPECS, type DestinationType, type SyncSettings } from './destination-types';
import { isKvV2, type SecretReader, type SecretState, type SyncMount, type SyncMounts } from './host';
import { backoffMs, type SyncOperation, type SyncQueue } from './sync-queue';
import { parseTemplate, renderTemplate } from './template';

export interface SyncRunnerDeps {
  queue: SyncQueue;
  associations: AssociationStore;
  destinations: DestinationStore;
  mounts: SyncMounts;
  reader: SecretReader;
  clients: DestinationClientFactory;
  settings: SyncSettings;
  clock: Clock;
  observer?: SyncObserver;
}

/** What secret sync tells whoever keeps metrics (calls must not throw or block). */
export interface SyncObserver {
  /** Once, at setup: how to read the number of operations waiting in the queue. */
  queue?(depth: () => Promise<number>): void;
  /** An operation against a destination of `type` ran and left its secrets `status`. */
  operation?(type: DestinationType, status: SyncStatus): void;
}

interface Wanted {
  name: string;
  key?: string;
  value: string;
}

/** The external secrets one KV version becomes at a destination, by the association's granularity and template. */
export function externalSecrets(a: Association, mount: SyncMount, data: Record<string, unknown> | null): Wanted[] {
  const template = parseTemplate(a.template);
  const secretPath = a.secret_name;
  const values = {
    DestinationType: a.type,
    DestinationName: a.name,
    NamespacePath: mount.namespacePath,
    MountPath: mount.path.replace(/\/$/, ''),
    MountAccessor: a.accessor,
    SecretPath: secretPath,
    SecretBaseName: secretPath.slice(secretPath.lastIndexOf('/') + 1),
  };
  if (a.granularity === 'secret-path') return [{ name: renderTemplate(template, values), value: JSON.stringify(data ?? {}) }];
  return Object.entries(data ?? {}).sort(([x], [y]) => x.localeCompare(y)).map(([key, v]) => ({
    name: renderTemplate(template, { ...values, SecretKey: key }),
    key,
    value: typeof v === 'string' ? v : JSON.stringify(v),
  }));
}

/** The same for every attempt at writing one KV version under one name, and for no other write. */
function writeToken(a: Association, name: string, state: SecretState & { live: true }): string {
  return hash('sha256', [associationId(a), name, state.version, state.createdTime].join('\0'), 'hex');
}

/**
 * A reconciliation's put-back is a new external version, so it cannot share the token of the KV
 * version's own write (a store that keeps versions would answer with that old version and change
 * nothing); the same for every attempt of one operation.
 */
function reconcileToken(a: Association, name: string, op: SyncOperation): string {
  return hash('sha256', [associationId(a), name, 'reconcile', op.seq, op.enqueued_at].join('\0'), 'hex');
}

/** Error text as stored and shown: any credential of the destination that an error quotes is masked. */
export function scrub(message: string, destination: Destination | null | undefined): string {
  let out = message.slice(0, 1024);
  if (!destination) return out;
  for (const field of TYPE_SPECS[destination.type].credentials) {
    const v = destination.connection[field];
    if (typeof v === 'string' && v.length >= 4) out = out.split(v).join('*****');
  }
  return out;
}

/** Runs queued operations against the destinations, one at a time, and records each result. */
export class SyncRunner {
  constructor(private readonly deps: SyncRunnerDeps) {}

  /** Runs `op`; true when it finished (and left the queue), false when it waits for a retry. */
  async run(op: SyncOperation): Promise<boolean> {
    const { associations, destinations, queue } = this.deps;
    let destination: Destination | null | undefined = op.destination;
    try {
      if (op.kind === 'purge') return await this.purge(op);
      if (op.kind === 'unsync') {
        destination = await this.unsyncDestination(op);
        await this.withClient(destination, async (client) => {
          for (const name of op.names ?? []) await client.remove(name);
        });
        await queue.exclusive(async (t) => t.complete(op));
        this.deps.observer?.operation?.(op.type, 'UNSYNCED');
        return true;
      }
      const ref = refOf(op);
      const association = await associations.get(ref, op.accessor, op.secret_name);
      destination = await destinations.get(ref.namespaceId, ref.type, ref.name);
      if (!association || !destination) {
        // Removed since: the removal queued its own unsync.
        await queue.exclusive(async (t) => t.complete(op));
        return true;
      }
      const mount = this.deps.mounts.byAccessor(op.accessor);
      // A mount disabled since is a secret that is gone.
      const state: SecretState = mount && isKvV2(mount) ? await this.deps.reader.read(mount, op.secret_name) : { live: false };
      if (op.cause === 'reconcile' && op.version > 0 && state.live && state.version !== op.version) {
        // Found changed out of band at an older version: the newer version's own sync, queued after this, puts it right.
        await queue.exclusive(async (t) => t.complete(op));
        return true;
      }
      const wanted = state.live && mount ? externalSecrets(association, mount, state.data) : [];
      const stale = new Set(Object.keys(association.synced).filter((n) => !wanted.some((w) => w.name === n)));
      // What an attempt that crashed before recording its result may have written.
      if (!state.live && mount && association.granularity === 'secret-path') stale.add((externalSecrets(association, mount, null)[0] as Wanted).name);
      await this.withClient(destination, async (client) => {
        for (const w of wanted) {
          if (op.cause === 'reconcile') {
            // Only what differs is written again: a reconciliation adds no version where nothing changed.
            const now = await client.read(w.name);
            if (now.exists && now.value === w.value) continue;
            await client.put(w.name, w.value, reconcileToken(association, w.name, op));
          } else {
            await client.put(w.name, w.value, writeToken(association, w.name, state as SecretState & { live: true }));
          }
        }
        for (const name of stale) await client.remove(name);
      });
      await this.finish(op, (a) => {
        a.synced = Object.fromEntries(wanted.map((w) => [w.name, w.key !== undefined ? { key: w.key } : {}]));
        a.sync_status = state.live ? 'SYNCED' : 'UNSYNCED';
        a.synced_version = state.live ? state.version : 0;
        delete a.last_error;
      });
      this.deps.observer?.operation?.(op.type, state.live ? 'SYNCED' : 'UNSYNCED');
      return true;
    } catch (err) {
      const status: SyncStatus = err instanceof DestinationError ? err.status : 'INTERNAL_VAULT_ERROR';
      const message = scrub(err instanceof Error ? err.message : String(err), destination);
      const attempts = op.attempts + 1;
      const retry: SyncOperation = { ...op, attempts, next_attempt_at: this.deps.clock.now() + backoffMs(attempts), last_error: message };
      await queue.exclusive(async (t) => {
        t.update(retry);
        if (op.kind !== 'sync') return;
        const a = await associations.get(refOf(op), op.accessor, op.secret_name);
        if (!a) return;
        a.sync_status = status;
        a.last_error = message;
        a.updated_at = this.deps.clock.now();
        t.write(putAssociationOps(a));
      });
      this.deps.observer?.operation?.(op.type, status);
      return false;
    }
  }

  /**
   * The destination an unsync writes to: as it was when the association went, or as it is now
   * if it still reaches the same place, so credentials fixed since (a purge held up by a refused
   * key) are used.
   */
  private async unsyncDestination(op: SyncOperation): Promise<Destination> {
    const then = op.destination as Destination;
    const now = await this.deps.destinations.get(op.namespace_id, op.type, op.name);
    return now && sameTarget(now, then) ? now : then;
  }

  /**
   * Deletes a purged destination once no unsync queued before this operation is left; until
   * then, shows on the destination what holds it up and looks again when those are retried.
   */
  private async purge(op: SyncOperation): Promise<boolean> {
    const { queue, destinations, clock } = this.deps;
    const waiting = (await queue.operations()).filter((o) => o.seq < op.seq && o.kind === 'unsync' &&
      o.namespace_id === op.namespace_id && o.type === op.type && o.name === op.name);
    if (waiting.length === 0) {
      await destinations.remove(op.namespace_id, op.type, op.name, async () => undefined);
      await queue.exclusive(async (t) => t.complete(op));
      return true;
    }
    const failed = waiting.find((o) => o.last_error !== undefined);
    const purgeError = failed ? `unsyncing ${failed.secret_name} failed: ${failed.last_error}` : '';
    await destinations.locked(op.namespace_id, op.type, op.name, async (d) => {
      if (d && d.purge_error !== purgeError) await queue.exclusive(async (t) => t.write(putDestinationOps(op.namespace_id, { ...d, purge_error: purgeError })));
    });
    const next = Math.max(clock.now() + 100, ...waiting.map((o) => o.next_attempt_at));
    await queue.exclusive(async (t) => t.update({ ...op, attempts: op.attempts + 1, next_attempt_at: next }));
    return false;
  }

  private async withClient(destination: Destination, fn: (client: DestinationClient) => Promise<void>): Promise<void> {
    const client = this.deps.clients(destination, this.deps.settings);
    try {
      await fn(client);
    } finally {
      await client.close?.().catch(() => undefined);
    }
  }

  /** Removes `op` from the queue and records its result on the association, in one commit. */
  private finish(op: SyncOperation, change: (a: Association) => void): Promise<void> {
    return this.deps.queue.exclusive(async (t) => {
      t.complete(op);
      // Read again under the queue's lock: the API may have refreshed the association meanwhile.
      const a = await this.deps.associations.get(refOf(op), op.accessor, op.secret_name);
      if (!a) return;
      change(a);
      a.updated_at = this.deps.clock.now();
      t.write(putAssociationOps(a));
    });
  }
}
