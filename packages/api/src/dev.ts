import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '@strongroom/core';
import { DEFAULT_MAX_REQUEST_SIZE } from './config';
import { startServer, type RunningServer } from './server';

export interface DevOptions {
  listen?: string;
  rootTokenId?: string;
  dataDir?: string;
  logger?: Logger;
}

export interface DevServer {
  server: RunningServer;
  address: string;
  unsealKey: string;
  rootToken: string;
  dataDir: string;
  close(): Promise<void>;
}

/** Dev mode keeps its one key and root token beside the data so a kept data dir restarts. */
const DEV_CREDENTIALS = 'dev-credentials.json';

export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) throw new Error(`--listen: "${listen}" is not HOST:PORT`);
  return { host: (m[1] ?? m[2]) as string, port };
}

/**
 * A single node for trying things out: initialized with one key share, unsealed, KV v2 at
 * `secret/`. Insecure by design: the key and root token are printed and kept in the data dir.
 */
export async function startDevServer(options: DevOptions = {}): Promise<DevServer> {
  // A dev server never asks a cloud's link-local metadata address for credentials: engines that
  // talk to a provider get an emulator's endpoint and explicit keys in their config.
  process.env['AWS_EC2_METADATA_DISABLED'] ??= 'true';
  process.env['METADATA_SERVER_DETECTION'] ??= 'none';
  const { host, port } = parseListen(options.listen ?? '127.0.0.1:8200');
  const temporary = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'strongroom-dev-'));
  const credsFile = join(dataDir, DEV_CREDENTIALS);
  let unsealKey = '';
  let rootToken = '';
  // Everything below runs before the first request is served: a client that sees the port
  // answer finds the server unsealed, active and with `secret/` mounted.
  const prepare = async (server: RunningServer): Promise<void> => {
    const core = server.core;
    if (!(await core.seal.initialized())) {
      const init = await core.initialize(1, 1, options.rootTokenId);
      unsealKey = (init.keys[0] as Buffer).toString('base64');
      rootToken = init.rootToken;
      await core.unseal(init.keys[0] as Buffer);
      await server.waitActive();
      await core.handle({ operation: 'update', path: 'sys/mounts/secret', token: rootToken, data: { type: 'kv', options: { version: '2' }, description: 'key/value secret storage' } });
      writeFileSync(credsFile, JSON.stringify({ unseal_key: unsealKey, root_token: rootToken }), { mode: 0o600 });
    } else {
      if (!existsSync(credsFile)) throw new Error(`${dataDir} holds a server that was not created in dev mode; start it with --config`);
      ({ unseal_key: unsealKey, root_token: rootToken } = JSON.parse(readFileSync(credsFile, 'utf8')) as { unseal_key: string; root_token: string });
      await core.unseal(Buffer.from(unsealKey, 'base64'));
      await server.waitActive();
    }
  };
  let server: RunningServer;
  try {
    server = await startServer({
      storage: { type: 'raft', path: join(dataDir, 'storage'), nodeId: 'dev' },
      listeners: [{
        type: 'tcp', address: `${host}:${port}`, host, port, tlsDisable: true, maxRequestSize: DEFAULT_MAX_REQUEST_SIZE,
        // A dev server is a cluster of one; its cluster port takes whatever port is free.
        clusterAddress: { host, port: 0 },
      }],
      ui: false,
      sourceFile: '(dev)',
      warnings: [],
    }, { ...(options.logger ? { logger: options.logger } : {}), prepare });
  } catch (err) {
    if (temporary) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    server, address: server.addresses[0] as string, unsealKey, rootToken, dataDir,
    close: async () => {
      await server.close();
      if (temporary) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
