import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Core, Logger } from '@strongroom/core';
import { Cloud1EmulatorFixture } from '@strongroom/emulators';
import { startServer, type RunningServer } from '../../server';
import { call } from '../servers';
import { targetsOf, type FuzzTarget } from './request-builder';

/** A server's error log lines, kept to explain a 500 by its request ID. */
export interface CapturedErrors {
  lines: Array<{ msg: string; fields: Record<string, unknown> }>;
}

function capturingLogger(captured: CapturedErrors): Logger {
  return {
    debug() {}, info() {}, warn() {},
    error: (msg, fields) => {
      if (captured.lines.length < 1000) captured.lines.push({ msg, fields: fields ?? {} });
    },
  };
}

/** The mounts the fuzzer walks, besides the built-in `sys/`, `auth/token/` and `identity/`. */
export const FUZZ_MOUNTS = [
  { table: 'mounts', path: 'kv-fz', body: { type: 'kv', options: { version: '2' } } },
  { table: 'mounts', path: 'kv1-fz', body: { type: 'kv', options: { version: '1' } } },
  { table: 'mounts', path: 'transit-fz', body: { type: 'transit' } },
  { table: 'mounts', path: 'cloud1-fz', body: { type: 'cloud1' } },
  { table: 'auth', path: 'cloud1-fz', body: { type: 'cloud1' } },
] as const;

export interface FuzzServer {
  url: string;
  root: string;
  core: Core;
  errors: CapturedErrors;
  /** Base URLs the cloud1 engines may be pointed at: the emulator's. */
  endpoints: string[];
  /** A directory the server may write into (snapshot targets). */
  scratchDir: string;
  targets: FuzzTarget[];
  stop(): Promise<void>;
}

/**
 * One server with every engine mounted, the cloud1 engines configured against a local emulator,
 * and the path tables of all its backends as fuzz targets.
 */
export async function startFuzzServer(): Promise<FuzzServer> {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-fuzz-'));
  const scratchDir = join(dir, 'scratch');
  mkdirSync(scratchDir);
  const errors: CapturedErrors = { lines: [] };
  const emulator = await new Cloud1EmulatorFixture().start();
  let server: RunningServer | undefined;
  try {
    server = await startServer({
      storage: { type: 'raft', path: join(dir, 'data'), nodeId: 'fuzz' },
      listeners: [{
        type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 32 * 1024 * 1024,
        clusterAddress: { host: '127.0.0.1', port: 0 },
      }],
      ui: false, sourceFile: '(test)', warnings: [],
    }, { logger: capturingLogger(errors) });
    const core = server.core;
    const { keys, rootToken } = await core.initialize(1, 1);
    await core.unseal(keys[0] as Buffer);
    await server.waitActive();
    const url = server.addresses[0] as string;
    for (const m of FUZZ_MOUNTS) {
      const res = await call(url, 'POST', `sys/${m.table}/${m.path}`, { token: rootToken, body: m.body });
      if (res.status !== 204) throw new Error(`mounting ${m.path}: ${res.status} ${res.text}`);
    }
    const api = emulator.endpoints.api;
    const { root: keysOfAccount } = emulator.newAccount();
    const creds = { access_key: keysOfAccount.accessKeyId, secret_key: keysOfAccount.secretAccessKey };
    for (const [path, body] of [
      ['auth/cloud1-fz/config/client', { ...creds, endpoint: api, iam_endpoint: api, sts_endpoint: api, sts_region: 'us-east-1' }],
      ['cloud1-fz/config/root', { ...creds, iam_endpoint: api, sts_endpoint: api, region: 'us-east-1' }],
    ] as const) {
      const res = await call(url, 'POST', path, { token: rootToken, body });
      if (res.status >= 300) throw new Error(`configuring ${path}: ${res.status} ${res.text}`);
    }
    // Transit makes its 4096-bit wrapping key on first use, seconds of work that is no fault.
    const wrapping = await call(url, 'GET', 'transit-fz/wrapping_key', { token: rootToken });
    if (wrapping.status !== 200) throw new Error(`transit wrapping key: ${wrapping.status} ${wrapping.text}`);
    const targets: FuzzTarget[] = [];
    const add = (mount: string, entry: { uuid: string } | undefined) => {
      const backend = entry ? core.backendOf(entry.uuid) : undefined;
      if (!backend) throw new Error(`no backend serves ${mount}`);
      targets.push(...targetsOf(mount, backend.definitions));
    };
    add('sys/', core.mounts.get('sys/'));
    add('identity/', core.mounts.get('identity/'));
    add('auth/token/', core.auths.get('token/'));
    for (const m of FUZZ_MOUNTS) add(m.table === 'auth' ? `auth/${m.path}/` : `${m.path}/`, (m.table === 'auth' ? core.auths : core.mounts).get(`${m.path}/`));
    const running = server;
    return {
      url, root: rootToken, core, errors, scratchDir, targets,
      endpoints: [api],
      stop: async () => {
        await running.close(1000);
        await emulator.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await server?.close(1000);
    await emulator.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
