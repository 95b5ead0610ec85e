import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { LocalCluster, until, type LaunchOptions, type NodeHandle } from '../../cluster-launcher';

/**
 * Helpers for tests that run a cluster of real `strongroom server` processes. They run the
 * BUILT command (packages/cli/bin → dist), so `tsc -b` must have run (`npm test` does).
 *
 * KEEP_CLUSTER_DIRS=1 keeps each cluster's directory (data, config, server.log) after the test.
 *
 * Ports: each test file takes its own fixed range below the kernel's ephemeral range (32768+),
 * so that ports other tests bind with port 0 never collide with a cluster's.
 */

const BIN = resolve(__dirname, '../../../bin/strongroom.js');

export interface ApiReply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  text: string;
}

/** One HTTP API call; a network error or timeout rejects. */
export async function api(
  addr: string, method: string, path: string,
  options: { token?: string; body?: unknown; raw?: Buffer; timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<ApiReply> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers['x-vault-token'] = options.token;
  let body: string | Uint8Array<ArrayBuffer> | undefined;
  if (options.raw !== undefined) {
    headers['content-type'] = 'application/octet-stream';
    body = Uint8Array.from(options.raw);
  } else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const res = await fetch(`${addr}/v1/${path}`, {
    method, headers, ...(body !== undefined ? { body } : {}), signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text === '' ? null : JSON.parse(text);
  } catch {
    // Not JSON (a snapshot stream, say): the caller has `text`.
  }
  return { status: res.status, json, text };
}

export { until };

export interface TestCluster {
  cluster: LocalCluster;
  dir: string;
  /** Kills every node (SIGKILL) and waits for the processes to exit; removes the data unless KEEP_CLUSTER_DIRS is set. */
  destroy(): Promise<void>;
  /** The last lines of each node's server.log, for failure messages. */
  logs(lines?: number): string;
}

/**
 * Launches a cluster in a fresh temporary directory. Whatever happens, `destroy` must run in
 * afterAll; if the launch itself fails, the launcher has killed what it started.
 */
export async function launchTestCluster(name: string, options: Omit<LaunchOptions, 'dir'>): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), `strongroom-${name}-`));
  let cluster: LocalCluster;
  try {
    cluster = await LocalCluster.launch({ tickMs: 50, ...options, dir });
  } catch (err) {
    const tail = logsOf(dir, options.nodes ?? 3, 40);
    if (!process.env['KEEP_CLUSTER_DIRS']) rmSync(dir, { recursive: true, force: true });
    throw new Error(`the ${name} cluster did not start: ${(err as Error).message}\n${tail}`, { cause: err });
  }
  // Should the test process end without afterAll (--forceExit, a crash, SIGTERM or Ctrl-C),
  // the servers go with it rather than hold the ports for the next run.
  const killOnExit = () => cluster.killAll();
  const killOnSignal = (signal: NodeJS.Signals) => {
    cluster.killAll();
    process.kill(process.pid, signal);
  };
  process.on('exit', killOnExit);
  process.once('SIGTERM', killOnSignal);
  process.once('SIGINT', killOnSignal);
  return {
    cluster, dir,
    destroy: async () => {
      process.off('exit', killOnExit);
      process.off('SIGTERM', killOnSignal);
      process.off('SIGINT', killOnSignal);
      await Promise.all(cluster.nodes.map((n) => cluster.kill(n, 'SIGKILL')));
      if (!process.env['KEEP_CLUSTER_DIRS']) rmSync(dir, { recursive: true, force: true });
    },
    logs: (lines = 30) => logsOf(dir, cluster.nodes.length, lines),
  };
}

function logsOf(dir: string, nodes: number, lines: number): string {
  const parts: string[] = [];
  for (let i = 1; i <= nodes; i++) {
    const file = join(dir, `node${i}`, 'server.log');
    if (!existsSync(file)) continue;
    const tail = readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    parts.push(`--- node${i} (${file}) ---\n${tail}`);
  }
  return parts.join('\n');
}

/** Unseals a node that may still be starting up. */
export async function startAndUnseal(cluster: LocalCluster, n: NodeHandle): Promise<void> {
  cluster.start(n);
  await cluster.waitUp(n);
  await cluster.unseal(n);
}

export interface CliResult {
  code: number | null;
  out: string;
  err: string;
}

/**
 * Runs the `strongroom` command against a server, as a user would. Asynchronous, so the test's
 * own event loop (timers, other requests) keeps running meanwhile.
 */
export function runCli(args: string[], env: { addr: string; token?: string }, timeoutMs = 30_000): Promise<CliResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, STRONGROOM_ADDR: env.addr };
  delete childEnv['VAULT_ADDR'];
  delete childEnv['VAULT_TOKEN'];
  delete childEnv['STRONGROOM_TOKEN'];
  if (env.token) childEnv['STRONGROOM_TOKEN'] = env.token;
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`strongroom ${args.join(' ')} did not finish in ${timeoutMs} ms: ${out}${err}`));
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      fail(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      ok({ code, out, err });
    });
  });
}
