export { CommitFeed, FeedSourceChangedError, followLogical } from './commit-feed';
export type { FeedSource, LogicalReader } from './commit-feed';
export { RaftStorage } from './raft-storage';
export type { RaftStorageOptions } from './raft-storage';
