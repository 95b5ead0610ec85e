export { main } from './main';
export { LocalCluster, runClusterScript } from './cluster-launcher';
export type { LaunchOptions, NodeHandle } from './cluster-launcher';
