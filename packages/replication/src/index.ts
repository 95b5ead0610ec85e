export { classifyKey, CLUSTER_LOCAL_PREFIX, type KeyClass } from './key-space';
export {
  answerDiff, checkStoredTree, DEFAULT_HISTORY_LENGTH, differingNodes, FANOUT, isCorrupt, LEAF_LEVEL, leafOf, LEAVES, MerkleCorruptionError,
  MerkleIndexer, MerkleReindexRunningError, MerkleTree, planSync, summarize,
} from './merkle';
export type {
  CorruptionReport, DiffAnswer, LeafDiff, LeafEntry, MerkleFeed, MerkleIndexerOptions, MerkleStatus, MerkleSummary, ReindexDiff, ReindexProgress,
  ReindexRequest, ReindexStatus, StorageScan,
} from './merkle';
