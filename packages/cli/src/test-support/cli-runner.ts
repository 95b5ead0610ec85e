import { spawn, type ChildProcess } from 'node:child_process';
import * as net from 'node:net';
import { resolve } from 'node:path';

/** The built command, run as a user runs it (`npm test` builds first). */
export const BIN = resolve(__dirname, '../../bin/strongroom.js');

export interface RunResult {
  code: number | null;
  out: string;
  err: string;
}

export interface RunOptions {
  env?: Record<string, string | undefined>;
  input?: string;
  /** Extra arguments for node itself, before the script (like -r PRELOAD). */
  nodeArgs?: string[];
}

/**
 * Runs the command to its end without blocking this process, so that servers the test runs in
 * this process (a TLS stand-in) can answer it.
 */
/** This process's environment without its VAULT_/STRONGROOM_ settings: none may leak a server or token into the command under test. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (/^(VAULT|STRONGROOM)_/.test(k)) delete env[k];
  return env;
}

export function run(args: string[], options: RunOptions = {}): Promise<RunResult> {
  const env = cleanEnv();
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const proc = spawn(process.execPath, [...(options.nodeArgs ?? []), BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  proc.stdin.on('error', () => {});
  proc.stdin.end(options.input ?? '');
  return new Promise((ok) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    proc.on('close', (code) => {
      clearTimeout(timer);
      ok({ code, out, err });
    });
  });
}

export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => ok(port));
    });
    s.on('error', fail);
  });
}

export interface DevServer {
  proc: ChildProcess;
  address: string;
  rootToken: string;
  unsealKey: string;
  stop(): Promise<void>;
}

/** A dev server from the same command, ready once it prints its root token; `nodeArgs` go to node itself. */
export async function startDevServer(nodeArgs: string[] = []): Promise<DevServer> {
  const port = await freePort();
  const proc = spawn(process.execPath, [...nodeArgs, BIN, 'server', '--dev', '--listen', `127.0.0.1:${port}`, '--dev-root-token', 'root'], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((ok) => proc.once('exit', () => ok()));
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`dev server not ready: ${output}`)), 60_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (/Root Token: \S+/.test(output)) {
        clearTimeout(timer);
        ok();
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`dev server exited ${code}: ${output}`));
    });
  });
  return {
    proc, address: `http://127.0.0.1:${port}`, rootToken: 'root', unsealKey: /Unseal Key: (\S+)/.exec(output)?.[1] as string,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGINT');
      await exited;
    },
  };
}
