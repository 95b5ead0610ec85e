import { getJson, jsonOp, KeyedMutex, type LogicalStorage, type TxnOp } from '@strongroom/core';
import type { Destination } from './destination';
import type { DestinationType } from './destination-types';
import { loadSyncConfig } from './sync-config';

/**
 * One unit of queued work on one association. `sync` makes the destination match the secret's
 * state when it runs (last write wins: upsert of the current version, or delete when there is
 * none); `unsync` deletes what an association that is gone had written; `purge` (on the
 * destination, with empty accessor and secret) deletes the destination once the unsyncs queued
 * before it are done.
 */
export interface SyncOperation {
  seq: number;
  kind: 'sync' | 'unsync' | 'purge';
  namespace_id: string;
  type: DestinationType;
  name: string;
  accessor: string;
  secret_name: string;
  /** What caused it: a KV change (with the version current after it), an association made or removed, a reconciliation, a purge. */
  cause: 'kv-write' | 'kv-delete' | 'associated' | 'removed' | 'reconcile' | 'purged';
  version: number;
  /** For `unsync`: the external names to delete and the destination as it was, since both may be gone by then. */
  names?: string[];
  destination?: Destination;
  enqueued_at: number;
  attempts: number;
  next_attempt_at: number;
  last_error?: string;
}

export type NewOperation = Omit<SyncOperation, 'seq' | 'enqueued_at' | 'attempts' | 'next_attempt_at'>;

interface QueueState {
  /** The last commit feed index whose KV changes are queued: the follower resumes after it. */
  cursor: number;
  next_seq: number;
}

export const QUEUE_PREFIX = 'sys/sync/queue/';
const STATE_KEY = 'sys/sync/queue-state';

function opKey(seq: number): string {
  return QUEUE_PREFIX + String(seq).padStart(16, '0');
}

/** The writes of one `exclusive` section, committed together. */
export interface QueueTxn {
  readonly cursor: number;
  /** Queues `ops` if the queue has room for all of them; false (nothing queued) past `queue_capacity`. */
  enqueue(ops: NewOperation[]): boolean;
  setCursor(index: number): void;
  /** Removes a finished operation. */
  complete(op: SyncOperation): void;
  /** Keeps an operation for a later attempt. */
  update(op: SyncOperation): void;
  write(ops: TxnOp[]): void;
  readonly capacity: number;
}

/**
 * The durable sync queue: operations in order, and the feed cursor. Every change to the queue,
 * the cursor and the associations it touches is one storage transaction, made inside
 * `exclusive`, so an operation is queued exactly when the change that caused it counts as
 * handled, and finishes exactly when its association records the result.
 */
export class SyncQueue {
  private readonly lock = new KeyedMutex();
  private state: (QueueState & { size: number }) | null = null;
  private readonly listeners = new Set<() => void>();

  /** `observe` sees every transaction's writes just before they commit and just after. */
  constructor(
    private readonly storage: LogicalStorage,
    private readonly now: () => number,
    private readonly observe?: (ops: readonly TxnOp[], phase: 'before' | 'after') => void,
  ) {}

  /** Forgets what it read: another node may have changed the queue while this one was not active. */
  reset(): void {
    this.state = null;
  }

  /** Called after every commit that queued something. */
  onEnqueue(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async load(): Promise<QueueState & { size: number }> {
    if (!this.state) {
      const stored = await getJson<QueueState>(this.storage, STATE_KEY);
      const size = (await this.storage.list(QUEUE_PREFIX)).length;
      this.state = { cursor: stored?.cursor ?? 0, next_seq: stored?.next_seq ?? 1, size };
    }
    return this.state;
  }

  exclusive<T>(fn: (txn: QueueTxn) => Promise<T>): Promise<T> {
    return this.lock.run('queue', async () => {
      const state = await this.load();
      const { queue_capacity } = await loadSyncConfig(this.storage);
      const writes: TxnOp[] = [];
      let { cursor, next_seq: nextSeq, size } = state;
      let queued = false;
      const now = this.now();
      const txn: QueueTxn = {
        get cursor() {
          return cursor;
        },
        capacity: queue_capacity,
        enqueue(ops) {
          if (size + ops.length > queue_capacity) return false;
          for (const op of ops) {
            const full: SyncOperation = { ...op, seq: nextSeq++, enqueued_at: now, attempts: 0, next_attempt_at: now };
            writes.push(jsonOp(opKey(full.seq), full));
          }
          size += ops.length;
          queued ||= ops.length > 0;
          return true;
        },
        setCursor(index) {
          cursor = Math.max(cursor, index);
        },
        complete(op) {
          writes.push({ type: 'delete', key: opKey(op.seq) });
          size--;
        },
        update(op) {
          writes.push(jsonOp(opKey(op.seq), op));
        },
        write(ops) {
          writes.push(...ops);
        },
      };
      const result = await fn(txn);
      const stateChanged = cursor !== state.cursor || nextSeq !== state.next_seq;
      if (stateChanged) writes.push(jsonOp(STATE_KEY, { cursor, next_seq: nextSeq } satisfies QueueState));
      if (writes.length > 0) {
        this.observe?.(writes, 'before');
        await this.storage.txn(writes);
        this.observe?.(writes, 'after');
      }
      this.state = { cursor, next_seq: nextSeq, size };
      if (queued) for (const l of this.listeners) l();
      return result;
    });
  }

  async cursor(): Promise<number> {
    return this.lock.run('queue', async () => (await this.load()).cursor);
  }

  async size(): Promise<number> {
    return this.lock.run('queue', async () => (await this.load()).size);
  }

  /** The queued operations, oldest first. */
  async operations(): Promise<SyncOperation[]> {
    const out: SyncOperation[] = [];
    for (const key of (await this.storage.list(QUEUE_PREFIX)).sort()) {
      const op = await getJson<SyncOperation>(this.storage, QUEUE_PREFIX + key);
      if (op) out.push(op);
    }
    return out;
  }
}

/** Retries wait 1 s, doubling up to 30 s, so a destination that comes back is caught up within half a minute. */
export function backoffMs(attempts: number): number {
  return Math.min(1000 * 2 ** Math.max(0, attempts - 1), 30_000);
}
