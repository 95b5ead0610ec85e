import { StrongroomError } from '@strongroom/base';

/** The node was closed while the operation waited; it did not (and will not) complete here. */
export class NodeClosedError extends StrongroomError {
  constructor(message = 'raft node is closed') {
    super('raft_node_closed', 503, message);
  }
}

/** The node applied its own removal from the cluster and has stopped. */
export class NodeRemovedError extends StrongroomError {
  constructor(readonly node: string) {
    super('raft_node_removed', 503, `raft node ${node} has been removed from the cluster`);
  }
}

/**
 * A proposal may or may not have been applied: it timed out waiting, or a snapshot from the
 * leader overtook its index. Retrying a non-idempotent write is the caller's decision.
 */
export class OutcomeUnknownError extends StrongroomError {
  constructor(message: string) {
    super('raft_outcome_unknown', 503, message);
  }
}

/** A read barrier or a leadership transfer did not complete in time (no quorum, or no leader). */
export class RaftTimeoutError extends StrongroomError {
  constructor(message: string) {
    super('raft_timeout', 503, message);
  }
}

/** An operator's snapshot restore was refused: the data is not a valid snapshot, or it failed to apply. */
export class SnapshotRestoreError extends StrongroomError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('raft_snapshot_invalid', 400, message, options);
  }
}
