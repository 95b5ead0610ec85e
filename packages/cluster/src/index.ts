export { RaftStorage } from './raft-storage';
export type { RaftStorageOptions } from './raft-storage';
