import { StrongroomError, type Storage, type TxnOp } from '@strongroom/base';
import { StandbyError } from '@strongroom/core';
import { encodeTxn, type Check, type RaftNode } from '@strongroom/raft';

export interface RaftStorageOptions {
  /** `close()` also closes the node (a server that hands the node over entirely). */
  ownsNode?: boolean;
  /**
   * The Raft term in which this node serves as the cluster's active node, or null while it does
   * not. Given, only the active node's reads pass the barrier, and only while it still leads in
   * that term; a standby's or a sealed node's reads are of the local state, which is all they
   * need (seal status, the keyring at unseal). Not given, every read passes the barrier.
   */
  activeTerm?: () => number | null;
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
  private readonly activeTerm: (() => number | null) | undefined;

  constructor(node: RaftNode | null, options: RaftStorageOptions = {}) {
    this.current = node;
    this.ownsNode = options.ownsNode ?? false;
    this.activeTerm = options.activeTerm;
  }

  get node(): RaftNode | null {
    return this.current;
  }

  attach(node: RaftNode | null): void {
    this.current = node;
  }

  /**
   * Resolves once a read may answer as the cluster's latest state; null when it may at once.
   * On the active node: at once while its lease holds (no other leader can have committed
   * anything), else after a read-index round, which every read waiting when it starts shares.
   * It rejects once this node no longer leads, or leads again in a later term: in between,
   * another leader may have changed anything, so what the active node holds is stale until it
   * is activated anew.
   */
  readBarrier(): Promise<void> | null {
    const node = this.current;
    if (!node) return null;
    if (!this.activeTerm) return node.readBarrier().catch(rethrow);
    const term = this.activeTerm();
    if (term === null) return null;
    if (!node.isLeader) return Promise.reject(new StandbyError(NO_LONGER_LEADS));
    if (node.term !== term) return Promise.reject(new StandbyError('the leadership changed while the request arrived; retry'));
    return node.leaderReadBarrier()?.catch(rethrow) ?? null;
  }

  async get(key: string): Promise<Buffer | null> {
    const node = this.current;
    if (!node) return null;
    const barrier = this.readBarrier();
    if (barrier) await barrier.catch(midRequest);
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
    const barrier = this.readBarrier();
    if (barrier) await barrier.catch(midRequest);
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

/**
 * Clients may take this refusal to mean that nothing of the request took effect, so it is given
 * only by the barrier a request passes before it runs (see `Storage.readBarrier`).
 */
const NO_LONGER_LEADS = 'this node no longer leads the cluster; retry';
const LOST_LEAD = 'this node is not (or no longer) the leader of its cluster; retry';

/** A read inside a request may follow its writes: whether those took effect is not known. */
function midRequest(err: unknown): never {
  // Any refusal by the barrier (not leading, or leading in another term): the outcome is unknown.
  if (err instanceof StandbyError) throw new StandbyError(LOST_LEAD, { cause: err });
  throw err;
}

function rethrow(err: unknown): never {
  if (err instanceof StrongroomError) throw err;
  const name = (err as { name?: unknown } | null)?.name;
  if (name === 'NotLeaderError' || name === 'ProposalDroppedError') {
    throw new StandbyError(LOST_LEAD, { cause: err });
  }
  throw err;
}
