import type { Logger } from '@strongroom/base';
import type { LogicalStorage } from '@strongroom/core';
import { associationId, refOf, type Association } from './association-store';
import type { DestinationClient } from './clients/destination-client';
import { isKvV2, type SecretState, type SyncMount } from './host';
import { loadSyncConfig } from './sync-config';
import type { NewOperation } from './sync-queue';
import { externalSecrets, scrub, type SyncRunnerDeps } from './sync-runner';
import { queueOperations, syncOperation } from './sync-service';

/** Out-of-band changes are looked for this often unless the operator says otherwise. */
export const DEFAULT_RECONCILE_INTERVAL_MS = 10 * 60_000;
/** The most associations one round reads at their destinations; the next round goes on from there. */
export const DEFAULT_RECONCILE_BATCH = 500;

/** What the runner needs, and the storage, logger and batch size of a round. */
export interface ReconcilerDeps extends SyncRunnerDeps {
  storage: LogicalStorage;
  logger: Logger;
  batch: number;
}

export interface RoundResult {
  /** Associations whose destination was read. */
  checked: number;
  /** Of those, the ones found changed out of band, with a sync queued. */
  queued: number;
}

/** True when the destination holds something other than what the secret's current state makes. */
async function drifted(client: DestinationClient, a: Association, mount: SyncMount, state: SecretState): Promise<boolean> {
  const wanted = state.live ? externalSecrets(a, mount, state.data) : [];
  for (const w of wanted) {
    const now = await client.read(w.name);
    // A store that shows no values back can only be seen to have lost the secret.
    if (!now.exists || (now.value !== null && now.value !== w.value)) return true;
  }
  const leftovers = new Set(Object.keys(a.synced).filter((n) => !wanted.some((w) => w.name === n)));
  if (!state.live && a.granularity === 'secret-path') leftovers.add((externalSecrets(a, mount, null)[0] as { name: string }).name);
  for (const name of leftovers) if ((await client.read(name)).exists) return true;
  return false;
}

/**
 * The periodic reconciliation: reads what each association's destination holds and queues a
 * sync where it differs from what the secret's current version makes, so a value changed or
 * deleted out of band is put back. A round reads at most `batch` associations, going on from
 * where the last one stopped, and leaves alone those with work queued (that work settles them).
 */
export class Reconciler {
  /** The last association looked at: the next round starts after it. */
  private after = '';

  constructor(private readonly deps: ReconcilerDeps) {}

  async round(signal?: AbortSignal): Promise<RoundResult> {
    const { storage, queue, associations, destinations, mounts, reader, clients, settings, clock, logger } = this.deps;
    const result: RoundResult = { checked: 0, queued: 0 };
    if ((await loadSyncConfig(storage)).disabled) return result;
    const all = (await associations.all()).map((a) => ({ id: associationId(a), a })).sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    const start = Math.max(0, all.findIndex((e) => e.id > this.after));
    const picked = [...all.slice(start), ...all.slice(0, start)].slice(0, this.deps.batch);
    const busy = new Set((await queue.operations()).map((op) => associationId(op)));
    const opened = new Map<string, DestinationClient | null>();
    const found: NewOperation[] = [];
    try {
      for (const { id, a } of picked) {
        if (signal?.aborted) break;
        this.after = id;
        if (busy.has(id)) continue;
        const destinationId = `${a.namespace_id}/${a.type}/${a.name}`;
        if (opened.get(destinationId) === null) continue;
        const ref = refOf(a);
        const destination = await destinations.get(ref.namespaceId, ref.type, ref.name);
        if (!destination || destination.purge_initiated_at !== undefined) continue;
        const mount = mounts.byAccessor(a.accessor);
        if (!mount) continue;
        // Like the runner: a mount no longer KV v2 holds no secret.
        const state: SecretState = isKvV2(mount) ? await reader.read(mount, a.secret_name) : { live: false };
        // A version newer than the one synced has its own sync coming (the feed may not have queued it yet).
        if (state.live && a.synced_version !== undefined && a.synced_version !== state.version) continue;
        let client = opened.get(destinationId);
        if (!client) {
          client = clients(destination, settings);
          opened.set(destinationId, client);
        }
        try {
          result.checked++;
          if (await drifted(client, a, mount, state)) found.push(syncOperation(a, 'reconcile', state.live ? state.version : 0));
        } catch (err) {
          // Unreachable or refusing: the rest of this destination waits for the next round.
          await client.close?.().catch(() => undefined);
          opened.set(destinationId, null);
          logger.warn('sync: reconciliation could not read a destination', {
            destination: `${a.type}/${a.name}`, error: scrub(err instanceof Error ? err.message : String(err), destination),
          });
        }
      }
    } finally {
      for (const client of opened.values()) await client?.close?.().catch(() => undefined);
    }
    if (found.length > 0) {
      await queueOperations(queue, associations, found, clock.now());
      result.queued = found.length;
      logger.info('sync: reconciliation found secrets changed at their destinations; syncing them again', { count: found.length });
    }
    return result;
  }
}
