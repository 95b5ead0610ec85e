import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { until } from '../cluster-launcher';
import { runBootstrap } from './bootstrap';
import { rewriteConfig } from './config-rewrite';
import { allNodes, CLUSTER_NAMES, EMULATOR_NAMES, TopologyError, type ClusterName, type EmulatorName, type TopologyDescription } from './description';
import { isRunning, spawnDetached, terminate } from './process-control';
import { readState, stateNodes, writeState, type EmulatorState, type NodeState, type StartSpec, type TopologyState } from './state-file';
import { call } from '../node-api';

/**
 * The compose topology as local processes on loopback: the same role configs with remapped
 * addresses, the same bootstrap, and a state file from which any tool can stop and start a node.
 */

export const DEFAULT_BASE_PORT = 28200;

const REPO = resolve(__dirname, '..', '..', '..', '..');
const TOPOLOGY_BIN = join(REPO, 'scripts', 'topology');
const EMULATOR_BIN = join(dirname(require.resolve('@strongroom/emulators/package.json')), 'bin', 'strongroom-emulator.js');

/** Kept out of every process: no SDK may go looking for a cloud metadata service from a laptop. */
const NO_METADATA = { AWS_EC2_METADATA_DISABLED: 'true', METADATA_SERVER_DETECTION: 'none' };

export interface PortMap {
  nodes: Map<string, { api: number; cluster: number }>;
  emulators: Record<EmulatorName, number>;
}

/** Node i of the description (in cluster order) gets base+2i and base+2i+1; the emulators follow. */
export function portMap(topology: TopologyDescription, basePort: number): PortMap {
  const nodes = new Map<string, { api: number; cluster: number }>();
  allNodes(topology).forEach(({ node }, i) => nodes.set(node.name, { api: basePort + 2 * i, cluster: basePort + 2 * i + 1 }));
  const after = basePort + 2 * nodes.size;
  const emulators = Object.fromEntries(EMULATOR_NAMES.map((e, j) => [e, after + j])) as Record<EmulatorName, number>;
  return { nodes, emulators };
}

function hostPort(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port}`;
}

/** Every `host:port` of the description -> its loopback `127.0.0.1:port`. */
export function addressMap(topology: TopologyDescription, ports: PortMap): Map<string, string> {
  const map = new Map<string, string>();
  for (const { node } of allNodes(topology)) {
    const p = ports.nodes.get(node.name) as { api: number; cluster: number };
    map.set(hostPort(node.api_addr), `127.0.0.1:${p.api}`);
    map.set(hostPort(node.cluster_addr), `127.0.0.1:${p.cluster}`);
  }
  for (const e of EMULATOR_NAMES) map.set(hostPort(topology.emulators[e].endpoint), `127.0.0.1:${ports.emulators[e]}`);
  return map;
}

/** The description as seen from loopback: what bootstrap is given locally. */
export function localDescription(topology: TopologyDescription, addresses: Map<string, string>): TopologyDescription {
  const remap = (url: string): string => {
    const to = addresses.get(hostPort(url));
    if (to === undefined) throw new TopologyError(`no loopback address for ${url}`);
    return `${new URL(url).protocol}//${to}`;
  };
  const clusters = Object.fromEntries(CLUSTER_NAMES.map((c) => {
    const cluster = topology.clusters[c];
    return [c, { ...cluster, nodes: cluster.nodes.map((n) => ({ name: n.name, api_addr: remap(n.api_addr), cluster_addr: remap(n.cluster_addr) })) }];
  })) as TopologyDescription['clusters'];
  const emulators = Object.fromEntries(EMULATOR_NAMES.map((e) => [e, { endpoint: remap(topology.emulators[e].endpoint) }])) as TopologyDescription['emulators'];
  return { clusters, emulators, snapshot: { ...topology.snapshot, endpoint: remap(topology.snapshot.endpoint) } };
}

function emulatorStart(name: EmulatorName, port: number, dir: string): StartSpec {
  const log = join(dir, 'emulators', `${name}.log`);
  const listen = `127.0.0.1:${port}`;
  const argv = name === 'azure'
    ? [process.execPath, require.resolve('azurite/dist/src/blob/main.js'), '--blobHost', '127.0.0.1', '--blobPort', String(port),
      '--inMemoryPersistence', '--skipApiVersionCheck', '--disableTelemetry']
    : [process.execPath, EMULATOR_BIN, name === 's3' ? 's3' : 'cloud3', '--listen', listen];
  return { argv, env: { ...NO_METADATA }, cwd: REPO, log };
}

/** Plans every process of a fresh topology in DIR and writes each node's config. */
function plan(topology: TopologyDescription, dir: string, basePort: number): { state: TopologyState; local: TopologyDescription } {
  const ports = portMap(topology, basePort);
  const addresses = addressMap(topology, ports);
  const local = localDescription(topology, addresses);
  const clusters = {} as TopologyState['clusters'];
  for (const c of CLUSTER_NAMES) {
    const role = topology.clusters[c];
    const source = readFileSync(role.config, 'utf8');
    clusters[c] = {
      nodes: local.clusters[c].nodes.map((n): NodeState => {
        const nodeDir = join(dir, n.name);
        const p = ports.nodes.get(n.name) as { api: number; cluster: number };
        mkdirSync(nodeDir, { recursive: true });
        const configFile = join(nodeDir, 'server.hcl');
        writeFileSync(configFile, rewriteConfig(source, {
          apiListen: `127.0.0.1:${p.api}`, clusterListen: `127.0.0.1:${p.cluster}`, addresses, dataPath: join(nodeDir, 'data'),
        }));
        const env: Record<string, string> = {
          ...NO_METADATA, VAULT_RAFT_NODE_ID: n.name, VAULT_API_ADDR: n.api_addr, VAULT_CLUSTER_ADDR: n.cluster_addr,
        };
        if (role.seal_key) env['STRONGROOM_SEAL_TOKEN_FILE'] = join(dir, 'seal', `${role.seal_key}.token`);
        return {
          name: n.name, api_addr: n.api_addr, cluster_addr: n.cluster_addr, pid: 0, dir: nodeDir,
          start: { argv: [process.execPath, TOPOLOGY_BIN, 'serve-node', '--config', configFile], env, cwd: REPO, log: join(nodeDir, 'server.log') },
        };
      }),
    };
  }
  const emulators = Object.fromEntries(EMULATOR_NAMES.map((e) => [e, {
    endpoint: local.emulators[e].endpoint, pid: 0, start: emulatorStart(e, ports.emulators[e], dir),
  }])) as Record<EmulatorName, EmulatorState>;
  return { state: { base_port: basePort, clusters, emulators }, local };
}

async function waitReachable(endpoint: string, what: string): Promise<void> {
  await until(`${what} at ${endpoint} to answer`, 60_000, async () => {
    const r = await fetch(endpoint, { signal: AbortSignal.timeout(5_000) });
    await r.arrayBuffer();
    return true;
  }, 100);
}

/** Starts one node of DIR's state again, exactly as `up` did, and records its new pid. */
export function startNode(dir: string, name: string): NodeState {
  const state = readState(dir);
  if (!state) throw new TopologyError(`no topology in ${dir}`);
  const node = stateNodes(state).find((n) => n.name === name);
  if (!node) throw new TopologyError(`no node named "${name}" in ${dir}`);
  if (!isRunning(node.pid, node.start)) {
    node.pid = spawnDetached(node.start);
    writeState(dir, state);
  }
  return node;
}

export interface UpOptions {
  dir: string;
  basePort?: number;
  /** The compose description; its role configs are the ones written, remapped, for each node. */
  topology: TopologyDescription;
  out: (line: string) => void;
  timeoutMs?: number;
}

/** Starts whatever of the topology is not running (all of it, the first time), then runs bootstrap. */
export async function up(o: UpOptions): Promise<TopologyState> {
  const dir = resolve(o.dir);
  mkdirSync(dir, { recursive: true });
  let state = readState(dir);
  const localFile = join(dir, 'topology.json');
  let local: TopologyDescription;
  if (state) {
    if (o.basePort !== undefined && o.basePort !== state.base_port) {
      throw new TopologyError(`--base-port: ${dir} holds a topology on base port ${state.base_port}; run down and remove the directory to change it`);
    }
    local = JSON.parse(readFileSync(localFile, 'utf8')) as TopologyDescription;
  } else {
    const planned = plan(o.topology, dir, o.basePort ?? DEFAULT_BASE_PORT);
    state = planned.state;
    local = planned.local;
    writeFileSync(localFile, `${JSON.stringify(local, null, 2)}\n`);
    writeState(dir, state);
  }
  let started = 0;
  for (const e of EMULATOR_NAMES) {
    const emulator = state.emulators[e];
    if (isRunning(emulator.pid, emulator.start)) continue;
    emulator.pid = spawnDetached(emulator.start);
    started++;
    writeState(dir, state);
  }
  for (const e of EMULATOR_NAMES) await waitReachable(state.emulators[e].endpoint, `the ${e} emulator`);
  for (const node of stateNodes(state)) {
    if (isRunning(node.pid, node.start)) continue;
    node.pid = spawnDetached(node.start);
    started++;
    writeState(dir, state);
  }
  o.out(started === 0 ? `topology in ${dir} is already running; checking it` : `started ${started} processes (logs in ${dir})`);
  const current = state;
  await runBootstrap({
    topology: local, operatorDir: join(dir, 'operator'), sealTokenDir: join(dir, 'seal'), log: o.out,
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
    onSealTokenReplaced: async (key) => {
      for (const c of CLUSTER_NAMES) {
        if (local.clusters[c].seal_key !== key) continue;
        o.out(`restarting the ${c} nodes to read their new seal token`);
        const nodes = current.clusters[c].nodes;
        await terminate(nodes.map((n) => ({ pid: n.pid, spec: n.start })));
        for (const n of nodes) n.pid = spawnDetached(n.start);
        writeState(dir, current);
      }
    },
  });
  o.out('');
  for (const c of CLUSTER_NAMES) {
    for (const n of state.clusters[c].nodes) o.out(`  ${c.padEnd(9)}${n.name.padEnd(11)}${n.api_addr}  (pid ${n.pid}, log ${n.start.log})`);
  }
  for (const e of EMULATOR_NAMES) o.out(`  emulator ${e.padEnd(11)}${state.emulators[e].endpoint}  (pid ${state.emulators[e].pid})`);
  o.out(`\nCredentials (keys and root tokens): ${join(dir, 'operator', 'credentials.json')} (mode 0600)`);
  return state;
}

/** SIGTERM to every process of the state, SIGKILL after a bounded wait; the data stays. */
export async function down(dir: string, out: (line: string) => void): Promise<void> {
  const state = readState(resolve(dir));
  if (!state) {
    out(`no topology in ${dir}`);
    return;
  }
  const procs = [
    ...stateNodes(state).map((n) => ({ pid: n.pid, spec: n.start })),
    ...EMULATOR_NAMES.map((e) => ({ pid: state.emulators[e].pid, spec: state.emulators[e].start })),
  ];
  await terminate(procs);
  out(`stopped the topology in ${dir} (its data stays there)`);
}

const HEALTH = 'sys/health?standbyok=true&perfstandbyok=true&drsecondarycode=200&performancestandbycode=200';

/** Each node's health and each secondary's replication state; true when all is up and streaming. */
export async function status(dir: string, out: (line: string) => void): Promise<boolean> {
  const state = readState(resolve(dir));
  if (!state) {
    out(`no topology in ${dir}`);
    return false;
  }
  let ok = true;
  for (const c of CLUSTER_NAMES) {
    for (const n of state.clusters[c].nodes) {
      const running = isRunning(n.pid, n.start);
      const health = running ? await call(n.api_addr, 'GET', HEALTH, { timeoutMs: 5_000 }).catch(() => null) : null;
      const sealed = health?.json?.sealed;
      const line = !running ? 'not running' : !health ? 'not answering' : `health ${health.status}${sealed ? ' (sealed)' : ''}${health.json?.standby ? ' standby' : ''}`;
      if (!health || health.status !== 200) ok = false;
      out(`${c.padEnd(9)}${n.name.padEnd(11)}${n.api_addr.padEnd(24)}${line}`);
    }
  }
  for (const e of EMULATOR_NAMES) {
    const running = isRunning(state.emulators[e].pid, state.emulators[e].start);
    if (!running) ok = false;
    out(`emulator ${e.padEnd(11)}${state.emulators[e].endpoint.padEnd(24)}${running ? 'running' : 'not running'}`);
  }
  for (const [c, kind] of [['primary', 'dr'], ['primary', 'performance'], ['dr', 'dr'], ['perf', 'performance']] as [ClusterName, string][]) {
    const replies = await Promise.all(state.clusters[c].nodes.map((n) => call(n.api_addr, 'GET', `sys/replication/${kind}/status`, { timeoutMs: 5_000 }).catch(() => null)));
    const data = replies.map((r) => r?.json?.data).find((d) => d && (d.mode !== 'secondary' || d.state === 'stream-wals')) ?? replies.find((r) => r)?.json?.data;
    if (!data) {
      ok = false;
      out(`${c} ${kind} replication: no node answers`);
      continue;
    }
    const detail = data.mode === 'secondary' ? `state ${data.state}, last_remote_wal ${data.last_remote_wal}` : `last_wal ${data.last_wal}`;
    if (c !== 'primary' && (data.mode !== 'secondary' || data.state !== 'stream-wals')) ok = false;
    out(`${c} ${kind} replication: ${data.mode}${data.mode === 'disabled' ? '' : `, ${detail}`}`);
  }
  return ok;
}
