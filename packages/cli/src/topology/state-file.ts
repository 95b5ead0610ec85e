import { chmodSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterName, EmulatorName } from './description';

/**
 * DIR/topology-state.json: what a local topology runs and how to start each process again, so
 * that any tool (a drill, an operator) can kill a node by pid and restart it exactly as `up` did.
 */

export interface StartSpec {
  argv: string[];
  /** Merged over the starter's environment; never holds a secret (the seal token is read from a file). */
  env: Record<string, string>;
  cwd: string;
  log: string;
}

export interface NodeState {
  name: string;
  api_addr: string;
  cluster_addr: string;
  pid: number;
  dir: string;
  start: StartSpec;
}

export interface EmulatorState {
  endpoint: string;
  pid: number;
  start: StartSpec;
}

export interface TopologyState {
  base_port: number;
  clusters: Record<ClusterName, { nodes: NodeState[] }>;
  emulators: Record<EmulatorName, EmulatorState>;
}

export const STATE_FILE = 'topology-state.json';

export function statePath(dir: string): string {
  return join(dir, STATE_FILE);
}

export function readState(dir: string): TopologyState | null {
  let text: string;
  try {
    text = readFileSync(statePath(dir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  return JSON.parse(text) as TopologyState;
}

/** Written whole to a temporary file and renamed, so a reader never sees half a state. */
export function writeState(dir: string, state: TopologyState): void {
  const tmp = `${statePath(dir)}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, statePath(dir));
}

/** Every node of the state, cluster by cluster; a state naming only some clusters (a drill's own) gives theirs. */
export function stateNodes(state: TopologyState): NodeState[] {
  const clusters: Partial<TopologyState['clusters']> = state.clusters;
  return [clusters.unseal, clusters.primary, clusters.dr, clusters.perf].flatMap((c) => c?.nodes ?? []);
}
