export { classifyKey, CLUSTER_LOCAL_PREFIX, type KeyClass } from './key-space';
