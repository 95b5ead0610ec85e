import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { Core, createLogger, type EngineFactory, type Logger } from '@strongroom/core';
import { kvEngine } from '@strongroom/engine-kv';
import { transitEngine } from '@strongroom/engine-transit';
import { LevelStorage } from '@strongroom/raft';
import { createApp } from './app';
import type { ListenerConfig, ServerConfig } from './config';
import { attachHttpServer } from './http/list-method';

export interface RunningServer {
  core: Core;
  /** `http(s)://host:port` of each listener, in config order. */
  addresses: string[];
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), seals and closes storage. */
  close(graceMs?: number): Promise<void>;
}

export const ENGINES: EngineFactory[] = [kvEngine, transitEngine];

interface Listening {
  listener: net.Server;
  server: http.Server;
  inflight: Set<http.ServerResponse>;
}

function startListener(cfg: ListenerConfig, onRequest: http.RequestListener): Promise<Listening & { url: string }> {
  const inflight = new Set<http.ServerResponse>();
  const server = http.createServer({ keepAlive: true, noDelay: true }, (req, res) => {
    inflight.add(res);
    res.on('close', () => inflight.delete(res));
    onRequest(req, res);
  });
  server.keepAliveTimeout = 65_000;
  const useTls = !cfg.tlsDisable;
  const listener = useTls
    ? tls.createServer({ cert: readFileSync(cfg.tlsCertFile as string), key: readFileSync(cfg.tlsKeyFile as string), ALPNProtocols: ['http/1.1'] })
    : net.createServer({ allowHalfOpen: true });
  attachHttpServer(listener, server, { tls: useTls });
  return new Promise((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(cfg.port, cfg.host, () => {
      listener.off('error', reject);
      const addr = listener.address() as net.AddressInfo;
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      resolve({ listener, server, inflight, url: `${useTls ? 'https' : 'http'}://${host}:${addr.port}` });
    });
  });
}

/** Opens storage, builds the core and serves it on every configured listener. */
export async function startServer(config: ServerConfig, options: { logger?: Logger } = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger({ name: 'strongroom' });
  const storage = await LevelStorage.open(config.storage.path);
  const core = new Core({ storage, logger, engines: ENGINES });
  const listening: Listening[] = [];
  const addresses: string[] = [];
  try {
    for (const cfg of config.listeners) {
      const { listener } = createApp(core, { maxRequestSize: cfg.maxRequestSize, logger });
      const l = await startListener(cfg, listener);
      listening.push(l);
      addresses.push(l.url);
    }
  } catch (err) {
    for (const l of listening) l.listener.close();
    await core.close();
    throw err;
  }

  let closing: Promise<void> | null = null;
  const close = (graceMs = 30_000): Promise<void> => {
    closing ??= (async () => {
      for (const l of listening) {
        l.listener.close();
        l.server.closeIdleConnections();
      }
      const deadline = Date.now() + graceMs;
      while (listening.some((l) => l.inflight.size > 0) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      for (const l of listening) l.server.closeAllConnections();
      await core.close();
    })();
    return closing;
  };
  return { core, addresses, close };
}
