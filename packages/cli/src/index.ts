export { main } from './main';
export { LocalCluster, runClusterScript } from './cluster-launcher';
export type { LaunchOptions, NodeHandle } from './cluster-launcher';
export { runDrillScript, parseDrillArgs, DRILL_USAGE } from './drill/drill-command';
export { runDrill } from './drill/drill';
export { readTopologyTarget } from './drill/topology-state';
export type { DrillReport, DrillOptions } from './drill/drill';
export type { DrillTarget, DrillCluster, DrillNode, DrillCredentials } from './drill/target';
