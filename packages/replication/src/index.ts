export { classifyKey, CLUSTER_LOCAL_PREFIX, type KeyClass } from './key-space';
export { createActivationSigningKey, parseActivationJwt, signActivationJwt, verifyActivationJwt } from './activation/activation-jwt';
export type { ActivationClaims, ActivationSigningKey } from './activation/activation-jwt';
export { decryptForSecondary, encryptToSecondary, generateSecondaryKeyPair } from './activation/secondary-key';
export type { SecondaryKeyPair } from './activation/secondary-key';
export { certificateFingerprint, createReplicationCa, issueSecondaryCertificate, secondaryIdOf } from './tls/replication-ca';
export type { ReplicationCa, SecondaryCertificate } from './tls/replication-ca';
export { readPeerIdentity } from './tls/peer-identity';
export type { AuthenticatedCall, PeerIdentity } from './tls/peer-identity';
export {
  CredentialRefusedError, NotActiveError, NotPrimaryError, ReplicationCallError, ReplicationUnavailableError, ReplicationWireError, WrongClusterError,
} from './wire/errors';
export type { CredentialRefusal } from './wire/errors';
export { ReplicationServer } from './wire/replication-server';
export type { ReplicationHandler, ReplicationHost, ReplicationServerOptions } from './wire/replication-server';
export { ReplicationClient } from './wire/replication-client';
export type { ReplicationClientOptions, ReplicationClientTls } from './wire/replication-client';
export type {
  ActivateRequest, ActivateResult, KeyValue, MerkleDiffRequest, MerkleDiffResult, PingReply, PingResult, StreamWalsRequest, WalEntry, WalStreamItem,
  WalStreamMessage,
} from './wire/types';
export {
  answerDiff, checkStoredTree, DEFAULT_HISTORY_LENGTH, differingNodes, FANOUT, isCorrupt, LEAF_LEVEL, leafOf, LEAVES, MerkleCorruptionError,
  MerkleIndexer, MerkleReindexRunningError, MerkleTree, planSync, summarize,
} from './merkle';
export type {
  CorruptionReport, DiffAnswer, LeafDiff, LeafEntry, MerkleFeed, MerkleIndexerOptions, MerkleStatus, MerkleSummary, ReindexDiff, ReindexProgress,
  ReindexRequest, ReindexStatus, StorageScan,
} from './merkle';
export { ClusterReplication } from './extension';
export type { ClusterReplicationOptions } from './extension';
export { ReplicationRole } from './replication-role';
