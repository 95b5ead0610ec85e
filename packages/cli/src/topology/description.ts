import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * The description of a multi-cluster deployment: which nodes make each cluster, where each is
 * reached, which role config each runs, and where the automated snapshots go. The compose file's
 * is `deploy/topology.json`; the local launcher writes a copy with loopback addresses.
 */

export const CLUSTER_NAMES = ['unseal', 'primary', 'dr', 'perf'] as const;
export type ClusterName = (typeof CLUSTER_NAMES)[number];

export const EMULATOR_NAMES = ['s3', 'azure', 'gcs'] as const;
export type EmulatorName = (typeof EMULATOR_NAMES)[number];

export interface NodeDescription {
  name: string;
  api_addr: string;
  cluster_addr: string;
}

export interface ClusterDescription {
  /** The role's HCL file, relative to the description file. */
  config: string;
  /** The transit key of the `unseal` node that seals this cluster; absent for `unseal` itself. */
  seal_key?: string;
  nodes: NodeDescription[];
}

export interface SnapshotDescription {
  name: string;
  interval: string;
  retain: number;
  path_prefix: string;
  bucket: string;
  region: string;
  /** Must be one of the emulators'. */
  endpoint: string;
  access_key_id: string;
  secret_access_key: string;
}

export interface TopologyDescription {
  clusters: Record<ClusterName, ClusterDescription>;
  emulators: Record<EmulatorName, { endpoint: string }>;
  snapshot: SnapshotDescription;
}

export class TopologyError extends Error {
  override readonly name = 'TopologyError';
}

function fail(where: string, rule: string): never {
  throw new TopologyError(`${where}: ${rule}`);
}

function object(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(where, 'expected an object');
  return value as Record<string, unknown>;
}

function text(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') fail(where, 'expected a non-empty string');
  return value;
}

function url(value: unknown, where: string, schemes: string[]): string {
  const s = text(value, where);
  let parsed: URL;
  try {
    parsed = new URL(s);
  } catch {
    fail(where, `expected a URL, got "${s}"`);
  }
  if (!schemes.includes(parsed.protocol) || parsed.port === '') fail(where, `expected a ${schemes.join(' or ')}//host:port URL, got "${s}"`);
  return s;
}

/** Checks the shape; addresses must be URLs with explicit ports (the launcher remaps them). */
export function parseTopology(value: unknown): TopologyDescription {
  const root = object(value, 'topology');
  const clustersIn = object(root['clusters'], 'clusters');
  const clusters = {} as Record<ClusterName, ClusterDescription>;
  const seen = new Set<string>();
  for (const name of CLUSTER_NAMES) {
    const c = object(clustersIn[name], `clusters.${name}`);
    const nodesIn = c['nodes'];
    if (!Array.isArray(nodesIn) || nodesIn.length === 0) fail(`clusters.${name}.nodes`, 'expected a non-empty array');
    const nodes = nodesIn.map((n, i) => {
      const o = object(n, `clusters.${name}.nodes[${i}]`);
      const node = {
        name: text(o['name'], `clusters.${name}.nodes[${i}].name`),
        api_addr: url(o['api_addr'], `clusters.${name}.nodes[${i}].api_addr`, ['http:', 'https:']),
        cluster_addr: url(o['cluster_addr'], `clusters.${name}.nodes[${i}].cluster_addr`, ['https:']),
      };
      if (seen.has(node.name)) fail(`clusters.${name}.nodes[${i}].name`, `"${node.name}" is used twice`);
      seen.add(node.name);
      return node;
    });
    const cluster: ClusterDescription = { config: text(c['config'], `clusters.${name}.config`), nodes };
    if (name !== 'unseal') cluster.seal_key = text(c['seal_key'], `clusters.${name}.seal_key`);
    clusters[name] = cluster;
  }
  const emulatorsIn = object(root['emulators'], 'emulators');
  const emulators = {} as Record<EmulatorName, { endpoint: string }>;
  for (const name of EMULATOR_NAMES) {
    emulators[name] = { endpoint: url(object(emulatorsIn[name], `emulators.${name}`)['endpoint'], `emulators.${name}.endpoint`, ['http:']) };
  }
  const s = object(root['snapshot'], 'snapshot');
  const retain = s['retain'];
  if (typeof retain !== 'number' || !Number.isInteger(retain) || retain < 1) fail('snapshot.retain', 'expected a whole number of at least 1');
  const snapshot: SnapshotDescription = {
    name: text(s['name'], 'snapshot.name'),
    interval: text(s['interval'], 'snapshot.interval'),
    retain,
    path_prefix: text(s['path_prefix'], 'snapshot.path_prefix'),
    bucket: text(s['bucket'], 'snapshot.bucket'),
    region: text(s['region'], 'snapshot.region'),
    endpoint: url(s['endpoint'], 'snapshot.endpoint', ['http:']),
    access_key_id: text(s['access_key_id'], 'snapshot.access_key_id'),
    secret_access_key: text(s['secret_access_key'], 'snapshot.secret_access_key'),
  };
  if (!EMULATOR_NAMES.some((e) => emulators[e].endpoint === snapshot.endpoint)) {
    fail('snapshot.endpoint', 'must be the endpoint of one of the emulators');
  }
  return { clusters, emulators, snapshot };
}

/** Reads and checks a description; config paths come back absolute. */
export function loadTopology(file: string): TopologyDescription {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new TopologyError(`cannot read the topology description ${file}: ${(err as Error).message}`);
  }
  const topology = parseTopology(raw);
  for (const name of CLUSTER_NAMES) topology.clusters[name].config = resolve(dirname(file), topology.clusters[name].config);
  return topology;
}

/** Every node in a fixed order: unseal, primary, dr, perf. */
export function allNodes(topology: TopologyDescription): { cluster: ClusterName; node: NodeDescription }[] {
  return CLUSTER_NAMES.flatMap((cluster) => topology.clusters[cluster].nodes.map((node) => ({ cluster, node })));
}
