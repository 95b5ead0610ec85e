import { StrongroomError, type Storage, type TxnOp } from '@strongroom/base';
import { StandbyError } from '@strongroom/core';
import { encodeTxn, type Check, type RaftNode } from '@strongroom/raft';

export interface RaftStorageOptions {
  /** `close()` also closes the node (a server that hands the node over entirely). */
  ownsNode?: boolean;
  /**
   * Reads pass a linearizable read barrier first (the default). A server that already holds
   * each request until this node is sure it leads (and reads only on the leader) turns it off
   * and reads the local state machine directly.
   */
  readBarrier?: boolean;
}

/**
 * Physical storage replicated by Raft. Writes are proposals that resolve once applied on this
 * node (so a write is visible to this node's next read). Before a node is attached (a server
 * that has not yet created or joined a cluster) it holds nothing and refuses writes.
 *
 * Losing the leadership mid-write is the caller's to retry: it surfaces as a 503 StandbyError,
 * and whether the write took effect is then unknown, as with any timed-out request.
 */
export class RaftStorage implements Storage {
  private current: RaftNode | null;
  private readonly ownsNode: boolean;
  private readonly barrier: boolean;

  constructor(node: RaftNode | null, options: RaftStorageOptions = {}) {
    this.current = node;
    this.ownsNode = options.ownsNode ?? false;
    this.barrier = options.readBarrier ?? true;
  }

  get node(): RaftNode | null {
    return this.current;
  }

  attach(node: RaftNode | null): void {
    this.current = node;
  }

  async get(key: string): Promise<Buffer | null> {
    const node = this.current;
    if (!node) return null;
    if (this.barrier) await node.readBarrier().catch(rethrow);
    return node.get(key);
  }

  put(key: string, value: Buffer): Promise<void> {
    return this.txn([{ type: 'put', key, value }]);
  }

  delete(key: string): Promise<void> {
    return this.txn([{ type: 'delete', key }]);
  }

  async list(prefix: string): Promise<string[]> {
    const node = this.current;
    if (!node) return [];
    if (this.barrier) await node.readBarrier().catch(rethrow);
    return node.list(prefix);
  }

  async txn(ops: TxnOp[]): Promise<void> {
    if (ops.length === 0) return;
    await this.checkAndSet([], ops);
  }

  /**
   * Applies `ops` atomically if every check holds when the entry applies (a key equals its
   * value, or is absent for a null value); resolves with whether it did.
   */
  async checkAndSet(checks: readonly Check[], ops: readonly TxnOp[]): Promise<boolean> {
    const node = this.current;
    if (!node) throw new StandbyError('this node does not belong to a cluster yet: initialize it or join it to one');
    return node.propose(encodeTxn(ops, checks)).catch(rethrow);
  }

  async close(): Promise<void> {
    if (this.ownsNode) await this.current?.close();
  }
}

function rethrow(err: unknown): never {
  if (err instanceof StrongroomError) throw err;
  const name = (err as { name?: unknown } | null)?.name;
  if (name === 'NotLeaderError' || name === 'ProposalDroppedError') {
    throw new StandbyError('this node is not (or no longer) the leader of its cluster; retry', { cause: err });
  }
  throw err;
}
