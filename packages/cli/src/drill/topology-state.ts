import { join } from 'node:path';
import { poll } from '../node-api';
import { startNode } from '../topology/local-topology';
import { isAlive, runsCommand } from '../topology/process-control';
import { STATE_FILE, type StartSpec } from '../topology/state-file';
import { readJson, readOperatorCredentials, TargetError } from './operator-credentials';
import type { DrillCluster, DrillNode, DrillTarget } from './target';

/**
 * The drill's target read from a topology directory: `topology-state.json` (nodes, their pids
 * and how each was started) and `operator/credentials.json` (what each cluster's init returned).
 */

export interface NodeState {
  name: string;
  api_addr: string;
  cluster_addr?: string;
  pid?: number;
  dir?: string;
  start: StartSpec;
}

interface StateFile {
  clusters: Record<string, { nodes: NodeState[] } | undefined>;
}

function checkNode(n: unknown, where: string): NodeState {
  const node = n as Partial<NodeState> | null;
  if (!node || typeof node.name !== 'string' || typeof node.api_addr !== 'string') throw new TargetError(`${where}: a node needs "name" and "api_addr"`);
  const start = node.start;
  if (!start || !Array.isArray(start.argv) || start.argv.length === 0 || typeof start.log !== 'string') {
    throw new TargetError(`${where}: node "${node.name}" needs "start" with "argv" and "log"`);
  }
  return node as NodeState;
}

/**
 * A node run from the state file in `dir`, read again before each action, since another tool
 * (or a start here) may have changed its pid since.
 */
function stateNode(dir: string, cluster: string, initial: NodeState): DrillNode {
  const current = (): NodeState => {
    const state = readJson(join(dir, STATE_FILE), 'topology state') as StateFile;
    return state.clusters[cluster]?.nodes.find((n) => n.name === initial.name) ?? initial;
  };
  return {
    name: initial.name,
    apiAddr: initial.api_addr,
    async kill(signal) {
      const { pid, start } = current();
      if (!pid || !isAlive(pid)) return;
      if (!runsCommand(pid, start.argv)) throw new TargetError(`${initial.name}: pid ${pid} runs another command than the state's start argv; not signalling it`);
      process.kill(pid, signal);
      await poll(`${initial.name} (pid ${pid}) to exit`, 30_000, async () => (isAlive(pid) ? undefined : true), 50);
    },
    async start() {
      // Left as it is while it runs (a node the failure spared): a second process would only fail on its ports.
      startNode(dir, initial.name);
    },
  };
}

/** Reads DIR/topology-state.json and DIR/operator/credentials.json into a drill target. */
export function readTopologyTarget(dir: string): DrillTarget {
  const stateFile = join(dir, STATE_FILE);
  const state = readJson(stateFile, 'topology state') as Partial<StateFile> | null;
  if (!state || typeof state.clusters !== 'object' || state.clusters === null) throw new TargetError(`${stateFile}: missing "clusters"`);
  const cluster = (name: string, required: boolean): DrillCluster | null => {
    const c = state.clusters?.[name];
    if (!c) {
      if (required) throw new TargetError(`${stateFile}: missing cluster "${name}"`);
      return null;
    }
    if (!Array.isArray(c.nodes) || c.nodes.length === 0) throw new TargetError(`${stateFile}: cluster "${name}" has no nodes`);
    return { name, nodes: c.nodes.map((n) => stateNode(dir, name, checkNode(n, `${stateFile} cluster "${name}"`))) };
  };
  const pair: [DrillCluster, DrillCluster] = [cluster('primary', true) as DrillCluster, cluster('dr', true) as DrillCluster];
  const performance = cluster('perf', false);
  return { pair, performance, credentials: readOperatorCredentials(join(dir, 'operator', 'credentials.json')) };
}
