export {
  CompactedError, ConfChangeError, NotLeaderError, ProposalDroppedError, RaftCore, RaftError, TransferError, decodeConfChange,
  encodeConfChange,
} from './core';
export type {
  ConfChange, ConfState, Entry, EntryType, HardState, Message, MessageType, NodeId, Progress, RaftConfig, RaftInit, ReadState,
  Ready, Role, SnapshotMeta, SoftState, Status,
} from './core';
export { RaftNode } from './node/raft-node';
export type { NodeStats, NodeStatus, RaftNodeOptions, RaftObserver } from './node/raft-node';
export { encodeTxn } from './node/command';
export type { Check } from './node/command';
export { NodeClosedError, NodeRemovedError, OutcomeUnknownError, RaftTimeoutError, SnapshotRestoreError } from './node/errors';
export { snapshotValue } from './node/snapshot-value';
export { makeDir } from './node/make-dir';
export { ChangesNotRetainedError } from './node/change-log';
export type { ChangeLogLimits } from './node/change-log';
export type { AppliedChange, StateScan } from './node/state-machine';
export { MemoryNetwork, MemoryTransport } from './node/memory-transport';
export type { Transport, TransportHandlers } from './transport/transport';
export { GrpcTransport } from './transport/grpc-transport';
export type { ExtraService, GrpcTransportOptions } from './transport/grpc-transport';
export { isIssuedByAny, parseCertificates } from './transport/server-trust';
export type { TransportStats } from './transport/peer-sender';
export { SnapshotSendError } from './transport/errors';
export { MemberCallError } from './transport/member-calls';
export type { CallHandler } from './transport/member-calls';
export type { SnapshotSendFailure } from './transport/errors';
export { createClusterTls } from './tls/cluster-tls';
export type { ClusterTls } from './tls/cluster-tls';
export { CLUSTER_SERVER_NAME } from './tls/cluster-name';
export { loadService, repositoryProtoPath } from './transport/proto-files';
