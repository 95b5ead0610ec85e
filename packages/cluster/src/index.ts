export { ClusterNode } from './cluster-node';
export type { ClusterNodeOptions } from './cluster-node';
export type { ClusterRouting } from './routing';
export type { Advert } from './advert';
export { FORWARDED_HEADER, ForwardingAuth } from './forwarding-auth';
export {
  decodeForwardedRequest, decodeForwardedResponse, encodeForwardedRequest, encodeForwardedResponse, NOT_ACTIVE,
} from './forwarded-call';
export type { ForwardedRequest, ForwardedResponse } from './forwarded-call';
export { CommitFeed, FeedSourceChangedError, followLogical } from './commit-feed';
export type { FeedSource, LogicalReader } from './commit-feed';
export { RaftStorage } from './raft-storage';
export type { RaftStorageOptions } from './raft-storage';
