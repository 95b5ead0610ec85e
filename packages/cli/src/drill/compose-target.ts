import { call, poll } from '../node-api';
import { loadTopology, TopologyError, type ClusterName } from '../topology/description';
import { publishedAddress, readComposeServices, type ComposeServices } from './compose-file';
import { dockerCompose, type ComposeProject } from './docker-compose';
import { readOperatorCredentials, TargetError } from './operator-credentials';
import type { DrillCluster, DrillNode, DrillTarget } from './target';

/**
 * The drill's target on a compose deployment: the clusters of the topology description (a node
 * is the compose service of the same name), each node reached at its published API port, killed
 * and started through `docker compose`, and the credentials file the operator copied out of the
 * bootstrap container.
 */

export interface ComposeTargetOptions extends ComposeProject {
  /** The credentials.json bootstrap wrote. */
  credentials: string;
  /** The topology description the deployment was bootstrapped from. */
  topology: string;
}

function composeNode(project: ComposeProject, name: string, apiAddr: string): DrillNode {
  return {
    name,
    apiAddr,
    async kill(signal) {
      await dockerCompose(project, ['kill', '-s', signal, name]);
      // The engine waits for a SIGKILLed container to stop, not for one given another signal; and a
      // killed container stays down (a kill is a manual stop to its restart policy) until `start`.
      await poll(`${name} to stop answering at ${apiAddr}`, 60_000, async () => {
        try {
          await call(apiAddr, 'GET', 'sys/health', { timeoutMs: 2_000 });
          return undefined;
        } catch {
          return true;
        }
      }, 100);
    },
    async start() {
      // Its entrypoint unseals it through transit, as at any start: nothing more to do here.
      await dockerCompose(project, ['start', name]);
    },
  };
}

function loadDescription(file: string) {
  try {
    return loadTopology(file);
  } catch (err) {
    if (err instanceof TopologyError) throw new TargetError(err.message);
    throw err;
  }
}

export function readComposeTarget(o: ComposeTargetOptions): DrillTarget {
  const topology = loadDescription(o.topology);
  const services: ComposeServices = readComposeServices(o.file);
  const project: ComposeProject = { file: o.file, ...(o.projectName ? { projectName: o.projectName } : {}) };
  const cluster = (name: ClusterName): DrillCluster => ({
    name,
    nodes: topology.clusters[name].nodes.map((n) => {
      // The description's address is the one inside the compose network: its port is the container's.
      const containerPort = Number(new URL(n.api_addr).port);
      return composeNode(project, n.name, publishedAddress(services, n.name, containerPort, o.file));
    }),
  });
  return { pair: [cluster('primary'), cluster('dr')], performance: cluster('perf'), credentials: readOperatorCredentials(o.credentials) };
}
