export { checkStoredTree, isCorrupt } from './check';
export type { CorruptionReport } from './check';
export { answerDiff, differingNodes, planSync, summarize } from './diff';
export type { DiffAnswer, LeafDiff, LeafEntry, MerkleSummary } from './diff';
export { MerkleIndexer, MerkleReindexRunningError } from './indexer';
export type { MerkleFeed, MerkleIndexerOptions, MerkleStatus, ReindexRequest, ReindexStatus } from './indexer';
export { FANOUT, LEAF_LEVEL, LEAVES, leafOf } from './layout';
export { DEFAULT_HISTORY_LENGTH, MerkleCorruptionError, MerkleTree } from './merkle-tree';
export type { ReindexDiff, ReindexProgress, StorageScan } from './rebuild';
