export { RaftCore, type RaftInit } from './raft-core';
export { decodeConfChange, encodeConfChange } from './conf-change';
export { CompactedError, ConfChangeError, NotLeaderError, ProposalDroppedError, RaftError, TransferError } from './errors';
export type {
  ConfChange,
  ConfState,
  Entry,
  EntryType,
  HardState,
  Message,
  MessageType,
  NodeId,
  Progress,
  RaftConfig,
  ReadState,
  Ready,
  Role,
  SnapshotMeta,
  SoftState,
  Status,
} from './types';
