import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Starts a cluster of `strongroom server` processes on 127.0.0.1, initializes the first,
 * joins the others to it and unseals them all. For people (scripts/cluster) and for tests that
 * need real processes: each node can be killed, restarted and unsealed on its own.
 */

export interface LaunchOptions {
  /** Where each node keeps its data, config and log (`<dir>/node<N>/`). */
  dir: string;
  nodes?: number;
  /** Node N listens for the API on basePort + 10*(N-1) and for the cluster on the port after. */
  basePort?: number;
  keyShares?: number;
  keyThreshold?: number;
  /** Extra environment for the server processes. */
  env?: NodeJS.ProcessEnv;
  /** Raft timing for the processes (milliseconds per tick); tests use short ones. */
  tickMs?: number;
  /** How the cluster port of each node is reached by the others (an https:// URL), when not directly (a proxy). */
  clusterAddrOf?: (index: number, listenPort: number) => string;
  /** More top-level configuration for every node (HCL), such as a `replication { ... }` block. */
  extraConfig?: string;
  /** Told when a node's process ends by itself (a crash, a refused start), not when this launcher stops it. */
  onNodeExit?: (node: NodeHandle, code: number | null, signal: NodeJS.Signals | null) => void;
}

export interface NodeHandle {
  id: string;
  index: number;
  apiAddr: string;
  clusterPort: number;
  dir: string;
  process: ChildProcess | null;
}

const BIN = resolve(__dirname, '../bin/strongroom.js');

function config(node: { id: string; dir: string; apiPort: number; clusterPort: number; clusterAddr: string }): string {
  return [
    `storage "raft" {`,
    `  path    = "${join(node.dir, 'data').replace(/\\/g, '/')}"`,
    `  node_id = "${node.id}"`,
    `}`,
    `listener "tcp" {`,
    `  address     = "127.0.0.1:${node.apiPort}"`,
    `  cluster_address = "127.0.0.1:${node.clusterPort}"`,
    `  tls_disable = true`,
    `}`,
    `api_addr     = "http://127.0.0.1:${node.apiPort}"`,
    `cluster_addr = "${node.clusterAddr}"`,
    '',
  ].join('\n');
}

async function call(addr: string, method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(`${addr}/v1/${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(token ? { 'x-vault-token': token } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}

/** Polls `probe` until it returns something other than undefined; errors count as "not yet". */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export class LocalCluster {
  readonly nodes: NodeHandle[];
  keys: string[] = [];
  rootToken = '';

  private constructor(private readonly options: Required<Omit<LaunchOptions, 'clusterAddrOf' | 'env' | 'tickMs' | 'onNodeExit' | 'extraConfig'>> & LaunchOptions) {
    this.nodes = Array.from({ length: options.nodes }, (_, i) => {
      const apiPort = options.basePort + 10 * i;
      return {
        id: `node${i + 1}`, index: i, apiAddr: `http://127.0.0.1:${apiPort}`, clusterPort: apiPort + 1,
        dir: join(options.dir, `node${i + 1}`), process: null,
      };
    });
  }

  /** Starts every node, initializes the first, joins and unseals the rest; resolves when all are voters. */
  static async launch(options: LaunchOptions): Promise<LocalCluster> {
    const cluster = new LocalCluster({ nodes: 3, basePort: 8210, keyShares: 1, keyThreshold: 1, ...options });
    try {
      for (const n of cluster.nodes) cluster.start(n);
      const first = cluster.nodes[0] as NodeHandle;
      await cluster.waitUp(first);
      const init = await call(first.apiAddr, 'PUT', 'sys/init', { secret_shares: cluster.options.keyShares, secret_threshold: cluster.options.keyThreshold });
      if (init.status !== 200) throw new Error(`init failed: ${JSON.stringify(init.body)}`);
      cluster.keys = init.body.keys_base64 as string[];
      cluster.rootToken = init.body.root_token as string;
      await cluster.unseal(first);
      await cluster.waitActive();
      for (const n of cluster.nodes.slice(1)) {
        await cluster.waitUp(n);
        const joined = await call(n.apiAddr, 'POST', 'sys/storage/raft/join', { leader_api_addr: first.apiAddr });
        if (joined.status !== 200) throw new Error(`${n.id} could not join: ${JSON.stringify(joined.body)}`);
        await cluster.unseal(n);
      }
      await cluster.waitVoters(cluster.nodes.length);
      return cluster;
    } catch (err) {
      cluster.killAll();
      throw err;
    }
  }

  /** Starts (or restarts) a node's process; its output goes to `<dir>/server.log`. */
  start(n: NodeHandle): void {
    mkdirSync(n.dir, { recursive: true });
    const clusterAddr = this.options.clusterAddrOf?.(n.index, n.clusterPort) ?? `https://127.0.0.1:${n.clusterPort}`;
    const file = join(n.dir, 'server.hcl');
    writeFileSync(file, config({ id: n.id, dir: n.dir, apiPort: Number(new URL(n.apiAddr).port), clusterPort: n.clusterPort, clusterAddr }) + (this.options.extraConfig ?? ''));
    const log = openSync(join(n.dir, 'server.log'), 'a');
    n.process = spawn(process.execPath, [BIN, 'server', '--config', file], {
      stdio: ['ignore', log, log],
      env: {
        ...process.env, ...this.options.env,
        ...(this.options.tickMs ? { STRONGROOM_RAFT_TICK_MS: String(this.options.tickMs) } : {}),
      },
    });
    closeSync(log);
    const child = n.process;
    child.on('exit', (code, signal) => {
      if (n.process !== child) return; // stopped by kill(), which let go of it first
      n.process = null;
      this.options.onNodeExit?.(n, code, signal);
    });
  }

  /** SIGKILLs a node: no shutdown, exactly like a crash. */
  kill(n: NodeHandle, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = n.process;
    if (!child) return Promise.resolve();
    n.process = null;
    return new Promise((r) => {
      child.once('exit', () => r());
      child.kill(signal);
    });
  }

  killAll(): void {
    for (const n of this.nodes) {
      const child = n.process;
      n.process = null;
      child?.kill('SIGKILL');
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.kill(n, 'SIGTERM')));
  }

  async waitUp(n: NodeHandle, timeoutMs = 30_000): Promise<void> {
    await until(`${n.id} to answer`, timeoutMs, async () => ((await call(n.apiAddr, 'GET', 'sys/seal-status')).status === 200 ? true : undefined));
  }

  async unseal(n: NodeHandle): Promise<void> {
    for (const key of this.keys.slice(0, this.options.keyThreshold)) {
      const r = await call(n.apiAddr, 'PUT', 'sys/unseal', { key });
      if (r.status !== 200) throw new Error(`unseal of ${n.id} failed: ${JSON.stringify(r.body)}`);
    }
  }

  /** Restarts a killed node and unseals it. */
  async restart(n: NodeHandle): Promise<void> {
    await this.kill(n);
    this.start(n);
    await this.waitUp(n);
    await this.unseal(n);
  }

  /** The node that is active now, once one is. */
  async waitActive(timeoutMs = 30_000): Promise<NodeHandle> {
    return until('an active node', timeoutMs, async () => {
      for (const n of this.nodes) {
        if (!n.process) continue;
        const h = await call(n.apiAddr, 'GET', 'sys/health').catch(() => null);
        if (h?.status === 200) return n;
      }
      return undefined;
    });
  }

  async waitVoters(count: number, timeoutMs = 60_000): Promise<void> {
    await until(`${count} voters`, timeoutMs, async () => {
      const active = await this.waitActive();
      const r = await call(active.apiAddr, 'GET', 'sys/storage/raft/configuration', undefined, this.rootToken);
      const servers = (r.body?.data?.config?.servers ?? []) as { voter: boolean }[];
      return servers.filter((s) => s.voter).length >= count ? true : undefined;
    });
  }
}

/** For scripts: `node scripts/cluster [--dir DIR] [--nodes N] [--base-port P]`. */
export async function runClusterScript(argv: string[], out: NodeJS.WritableStream): Promise<void> {
  const flag = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    return i === -1 ? undefined : argv[i + 1];
  };
  const dir = resolve(flag('dir') ?? join(process.cwd(), '.cluster'));
  const cluster = await LocalCluster.launch({
    dir, nodes: Number(flag('nodes') ?? 3), basePort: Number(flag('base-port') ?? 8210),
    onNodeExit: (n, code, signal) => {
      out.write(`${n.id} (${n.apiAddr}) exited ${signal ? `on ${signal}` : `with code ${code}`}; see ${join(n.dir, 'server.log')}\n`);
    },
  });
  out.write(`A ${cluster.nodes.length}-node cluster is running (data in ${dir}).\n\n`);
  for (const n of cluster.nodes) out.write(`  ${n.id}  ${n.apiAddr}  (cluster port ${n.clusterPort}, log ${join(n.dir, 'server.log')})\n`);
  out.write(`\nUnseal Key: ${cluster.keys.join(' ')}\nRoot Token: ${cluster.rootToken}\n\n`);
  out.write(`    $ export VAULT_ADDR='${cluster.nodes[0]?.apiAddr}' VAULT_TOKEN='${cluster.rootToken}'\n\nPress Ctrl-C to stop the cluster.\n`);
  await new Promise<void>((r) => {
    process.once('SIGINT', r);
    process.once('SIGTERM', r);
  });
  await cluster.stop();
}
