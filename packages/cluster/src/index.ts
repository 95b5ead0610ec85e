export { CommitFeed, FeedSourceChangedError } from './commit-feed';
export type { FeedSource } from './commit-feed';
export { RaftStorage } from './raft-storage';
export type { RaftStorageOptions } from './raft-storage';
