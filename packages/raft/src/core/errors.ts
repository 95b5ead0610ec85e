import type { NodeId } from './types';

/**
 * Base of the consensus core's errors. Each subclass has a stable `code` (what callers and logs
 * match on), the HTTP `status` an API layer should answer with, typed fields, and an optional
 * `cause`. The core imports nothing from other packages, so this mirrors the shape of
 * `StrongroomError` without extending it; the node runtime wraps or maps these.
 */
export class RaftError extends Error {
  readonly code: string;
  readonly status: number;

  constructor(code: string, status: number, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}

/** Only the leader accepts proposals, reads, conf changes and transfers. `leader` is the hint, null when unknown. */
export class NotLeaderError extends RaftError {
  readonly leader: NodeId | null;

  constructor(leader: NodeId | null, options?: { cause?: unknown }) {
    super('not_leader', 503, leader === null ? 'not the leader, and no leader is known' : `not the leader; the leader is ${leader}`, options);
    this.leader = leader;
  }
}

/** The leader refused a proposal it would otherwise take (a leadership transfer is in progress). Safe to retry. */
export class ProposalDroppedError extends RaftError {
  constructor(reason: string, options?: { cause?: unknown }) {
    super('proposal_dropped', 503, `proposal dropped: ${reason}`, options);
  }
}

/** A membership change was refused; `reason` says why (pending change, not yet allowed, or invalid). */
export class ConfChangeError extends RaftError {
  readonly reason: string;

  constructor(reason: string, options?: { cause?: unknown }) {
    super('conf_change_refused', 400, `membership change refused: ${reason}`, options);
    this.reason = reason;
  }
}

/** A leadership transfer was refused: the target is not a voter of the current membership. */
export class TransferError extends RaftError {
  readonly target: NodeId;

  constructor(target: NodeId, reason: string, options?: { cause?: unknown }) {
    super('transfer_refused', 400, `leadership transfer to ${target} refused: ${reason}`, options);
    this.target = target;
  }
}

/** The requested index lies below the current snapshot: those entries are gone. */
export class CompactedError extends RaftError {
  readonly index: number;
  readonly snapshotIndex: number;

  constructor(index: number, snapshotIndex: number, options?: { cause?: unknown }) {
    super('compacted', 500, `index ${index} is compacted (snapshot index ${snapshotIndex})`, options);
    this.index = index;
    this.snapshotIndex = snapshotIndex;
  }
}
