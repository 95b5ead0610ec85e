import { StrongroomError, type Clock, type Logger, type TimerHandle } from '@strongroom/base';
import type { BackgroundService, LogicalStorage, LogicalOp } from '@strongroom/core';
import { associationId, putAssociationOps, refOf, type Association, type AssociationStore } from './association-store';
import { isTableKey } from './gone-mounts';
import { CHANGES_NOT_RETAINED, type SyncFeed } from './host';
import { loadSyncConfig } from './sync-config';
import type { Reconciler } from './reconciler';
import type { NewOperation, SyncQueue } from './sync-queue';
import type { SyncRunner } from './sync-runner';

/** A KV v2 secret's state after a change, as the KV engine describes it on the feed. */
interface KvSecretEvent {
  kind: 'kv-secret';
  path: string;
  metadata: { currentVersion: number; versions: Record<string, { deletionTime: number | null; destroyed: boolean }> } | null;
}

/** The cursor is stored with queued work; with none, after this many indexes, so a restart rereads little. */
const CURSOR_EVERY = 1000;
/** The wait before following the feed again after a failure (the node under it changed, storage failed). */
const RETRY_MS = 1000;

export interface SyncServiceDeps {
  storage: LogicalStorage;
  queue: SyncQueue;
  associations: AssociationStore;
  runner: SyncRunner;
  /** Absent: only the API queues work (no KV change reaches the queue). */
  feed?: SyncFeed;
  /** Looks for out-of-band changes every `reconcileIntervalMs`; absent or 0: never. */
  reconciler?: Reconciler;
  reconcileIntervalMs?: number;
  /**
   * Removes the associations of mounts that are gone (queuing their unsyncs) and the destinations
   * of namespaces that are gone; run when a mount table or a namespace changed, before the cursor
   * passes that change, so a crash runs it again, and before each reconciliation round, in case
   * the tables in memory had not caught up with the change yet.
   */
  removeGone?: () => Promise<number>;
  clock: Clock;
  logger: Logger;
}

export function syncOperation(a: Association, cause: NewOperation['cause'], version = 0): NewOperation {
  return { kind: 'sync', namespace_id: a.namespace_id, type: a.type, name: a.name, accessor: a.accessor, secret_name: a.secret_name, cause, version };
}

function kvEvent(op: LogicalOp): KvSecretEvent | undefined {
  const e = op.event as KvSecretEvent | undefined;
  if (e?.kind !== 'kv-secret' || !op.mount || op.mount.type !== 'kv' || op.mount.options['version'] !== '2') return undefined;
  return e;
}

/**
 * Queues, under the queue's lock, `ops` with the status they give their associations (PENDING,
 * or why they could not be queued), and moves the cursor: one commit.
 */
export async function queueOperations(queue: SyncQueue, associations: AssociationStore, ops: NewOperation[], now: number, cursor?: number): Promise<boolean> {
  return queue.exclusive(async (t) => {
    const current: Association[] = [];
    for (const op of ops) {
      const a = await associations.get(refOf(op), op.accessor, op.secret_name);
      if (a && !current.some((c) => associationId(c) === associationId(a))) current.push(a);
    }
    const live = ops.filter((op) => current.some((a) => associationId(a) === associationId(op)));
    const accepted = t.enqueue(live);
    for (const a of current) {
      if (accepted) {
        a.sync_status = 'PENDING';
        delete a.last_error;
      } else {
        a.sync_status = 'INTERNAL_VAULT_ERROR';
        a.last_error = `the sync queue is full (queue_capacity ${t.capacity}): this change was not queued; raise queue_capacity and set the association again`;
      }
      a.updated_at = now;
      t.write(putAssociationOps(a));
    }
    if (cursor !== undefined) t.setCursor(cursor);
    return accepted;
  });
}

/**
 * The active node's sync work: follows the commit feed from the stored cursor and queues an
 * operation for every association of each KV v2 secret that changed, and runs the queue. Both
 * stop with the node's activity and resume from storage on whichever node is active next.
 */
export class SyncService implements BackgroundService {
  private controller: AbortController | null = null;
  private loops: Promise<void>[] = [];
  private wakeRunner: (() => void) | null = null;
  private woken = false;
  private offEnqueue: (() => void) | null = null;

  constructor(private readonly deps: SyncServiceDeps) {}

  async start(): Promise<void> {
    if (this.controller) return;
    const controller = new AbortController();
    this.controller = controller;
    this.deps.queue.reset();
    this.offEnqueue = this.deps.queue.onEnqueue(() => this.wake());
    this.loops = [this.drain(controller.signal)];
    if (this.deps.feed) this.loops.push(this.follow(this.deps.feed, controller.signal));
    const interval = this.deps.reconcileIntervalMs ?? 0;
    if (this.deps.reconciler && interval > 0) this.loops.push(this.reconcile(this.deps.reconciler, interval, controller.signal));
  }

  async stop(): Promise<void> {
    const controller = this.controller;
    if (!controller) return;
    this.controller = null;
    controller.abort();
    this.offEnqueue?.();
    this.wake();
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** New work, or the config changed: the runner looks at the queue again. */
  wake(): void {
    this.woken = true;
    this.wakeRunner?.();
  }

  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken || signal.aborted) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      let timer: TimerHandle | undefined;
      const done = () => {
        timer?.cancel();
        this.wakeRunner = null;
        this.woken = false;
        resolve();
      };
      this.wakeRunner = done;
      if (Number.isFinite(ms)) timer = this.deps.clock.setTimer(Math.max(0, ms), done);
    });
  }

  /** Runs ready operations in queue order; an association whose operation waits for a retry holds back its later ones. */
  private async drain(signal: AbortSignal): Promise<void> {
    const { storage, queue, runner, clock, logger } = this.deps;
    while (!signal.aborted) {
      let next = Infinity;
      let worked = false;
      try {
        this.woken = false;
        if (!(await loadSyncConfig(storage)).disabled) {
          const held = new Set<string>();
          for (const op of await queue.operations()) {
            if (signal.aborted) return;
            const id = associationId(op);
            if (held.has(id)) continue;
            if (op.next_attempt_at > clock.now()) {
              held.add(id);
              next = Math.min(next, op.next_attempt_at);
              continue;
            }
            // A PATCH disabling sync holds everything not yet started.
            if ((await loadSyncConfig(storage)).disabled) break;
            worked = true;
            if (!(await runner.run(op))) held.add(id);
          }
        }
      } catch (err) {
        if (signal.aborted) return;
        logger.warn('sync: running the queue failed; trying again', { error: (err as Error).message });
        next = clock.now() + RETRY_MS;
      }
      if (!worked) await this.sleep(next - clock.now(), signal);
    }
  }

  /** A reconciliation round every `intervalMs` while this node is active; the first one an interval after it became active. */
  private async reconcile(reconciler: Reconciler, intervalMs: number, signal: AbortSignal): Promise<void> {
    const { clock, logger } = this.deps;
    while (!signal.aborted) {
      await new Promise<void>((resolve) => {
        const timer = clock.setTimer(intervalMs, resolve);
        signal.addEventListener('abort', () => { timer.cancel(); resolve(); }, { once: true });
      });
      if (signal.aborted) return;
      try {
        await this.deps.removeGone?.();
        await reconciler.round(signal);
      } catch (err) {
        if (signal.aborted) return;
        logger.warn('sync: a reconciliation round failed; the next one tries again', { error: (err as Error).message });
      }
    }
  }

  private async follow(feed: SyncFeed, signal: AbortSignal): Promise<void> {
    const { queue, associations, clock, logger } = this.deps;
    while (!signal.aborted) {
      try {
        let cursor = await queue.cursor();
        if (cursor === 0) {
          // Never followed: every association made so far queued its own sync, so history adds nothing.
          cursor = feed.applied();
          await queue.exclusive(async (t) => t.setCursor(cursor));
        }
        // Built after the cursor is read: it holds at least what the feed's changes from there leave.
        await associations.index.load();
        let stored = cursor;
        for await (const batch of feed.follow(cursor + 1, signal)) {
          const last = batch[batch.length - 1]?.index;
          if (last === undefined) continue;
          let ops: NewOperation[] = [];
          let foreign = false;
          let restored = false;
          let tables = false;
          for (const change of batch) {
            if ('restored' in change) {
              restored = true;
              continue;
            }
            for (const op of change.ops) {
              if (!op.key.startsWith('sys/sync/')) foreign = true;
              // Writes made elsewhere (another node before this one was active, replication), in commit order.
              else associations.index.noteCommitted(op);
              // The data of a mount no longer in the tables: it is being disabled.
              if ((op.area === 'system' && isTableKey(op.key)) || (op.area === 'logical' && !op.mount)) tables = true;
              // The engine's reading decrypts the value: only for a mount that may have associations.
              if (!op.mount || op.mount.type !== 'kv' || !(await associations.index.mayHave(op.mount.accessor))) continue;
              const event = kvEvent(op);
              if (!event) continue;
              const meta = event.metadata;
              const current = meta?.versions[String(meta.currentVersion)];
              const live = current !== undefined && !current.destroyed && current.deletionTime === null;
              for (const a of await associations.ofSecret(op.mount.accessor, event.path)) {
                ops.push(syncOperation(a, live ? 'kv-write' : 'kv-delete', meta?.currentVersion ?? 0));
              }
            }
          }
          if (restored) {
            // A restore replaced storage, this queue's state with it: start from what it holds now.
            queue.reset();
            await associations.index.load();
          }
          const gone = (tables || restored) && this.deps.removeGone ? await this.deps.removeGone() : 0;
          if (restored) ops = (await associations.all()).map((a) => syncOperation(a, 'reconcile'));
          // A sync in `ops` for an association just removed is dropped by queueOperations: its unsync is queued.
          if (ops.length > 0 || restored || gone > 0 || (foreign && last - stored >= CURSOR_EVERY)) {
            await queueOperations(queue, associations, ops, clock.now(), last);
            stored = last;
          }
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof StrongroomError && err.code === CHANGES_NOT_RETAINED) {
          // What changed since the cursor is no longer known: bring every association up to date.
          logger.warn('sync: the commit feed no longer holds the changes after the sync cursor; reconciling every association');
          const applied = feed.applied();
          await this.deps.removeGone?.();
          const all = await associations.all();
          await queueOperations(queue, associations, all.map((a) => syncOperation(a, 'reconcile')), clock.now(), applied);
          // Follow again at once, unless the cursor could not move: then wait, rather than spin.
          if ((await queue.cursor()) >= applied) continue;
        }
        logger.warn('sync: following the commit feed failed; following again', { error: (err as Error).message });
        await new Promise<void>((resolve) => {
          const timer = clock.setTimer(RETRY_MS, resolve);
          signal.addEventListener('abort', () => { timer.cancel(); resolve(); }, { once: true });
        });
      }
    }
  }
}
