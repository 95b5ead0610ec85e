import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as net from 'node:net';
import { totalmem } from 'node:os';
import * as tls from 'node:tls';
import { ClusterNode } from '@strongroom/cluster';
import { Core, createLogger, systemClock, TransitSeal, type EngineFactory, type Logger, type SealSetup } from '@strongroom/core';
import { kvEngine } from '@strongroom/engine-kv';
import { transitEngine } from '@strongroom/engine-transit';
import { cloud1AuthEngine } from '@strongroom/engine-cloud1-auth';
import { cloud1SecretsEngine } from '@strongroom/engine-cloud1-secrets';
import { makeDir } from '@strongroom/raft';
import { automatedSnapshots } from '@strongroom/snapshots';
import { ClusterReplication } from '@strongroom/replication';
import { createApp } from './app';
import { ConfigError, type ListenerConfig, type ServerConfig, type TransitSealConfig } from './config';
import { attachHttpServer } from './http/list-server';
import { InFlight } from './http/in-flight';
import { batchRequests } from './http/request-batch';
import { metricsExtension } from './metrics/metrics-path';
import { renderMetrics } from './metrics/render';
import { ServerMetrics } from './metrics/server-metrics';
import { serverSecretSync } from './sync-wiring';

export interface RunningServer {
  core: Core;
  cluster: ClusterNode;
  /** This server's metrics (its own registry), as `sys/metrics` serves them. */
  metrics: ServerMetrics;
  /** `http(s)://host:port` of each listener, in config order. */
  addresses: string[];
  /** Resolves once this node is unsealed and active (it leads its cluster). */
  waitActive(timeoutMs?: number): Promise<void>;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), seals and closes storage. */
  close(graceMs?: number): Promise<void>;
}

export const ENGINES: EngineFactory[] = [kvEngine, transitEngine, cloud1AuthEngine, cloud1SecretsEngine];

interface Listening {
  listener: net.Server;
  server: http.Server;
  inflight: InFlight;
}

function startListener(cfg: ListenerConfig, onRequest: http.RequestListener): Promise<Listening & { url: string }> {
  const inflight = new InFlight();
  const run = batchRequests(onRequest);
  const server = http.createServer({ keepAlive: true, noDelay: true }, (req, res) => {
    inflight.track(res);
    run(req, res);
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

export interface StartOptions {
  logger?: Logger;
  /**
   * Runs once storage and the cluster are up, before any request is served: requests that
   * arrive meanwhile wait, so nothing sees a half-prepared server (dev mode mounts `secret/`
   * here). A failure closes the server and rejects the start.
   */
  prepare?: (server: RunningServer) => Promise<void>;
}

/** Builds the core on its cluster membership and serves it on every configured listener. */
export async function startServer(config: ServerConfig, options: StartOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? createLogger({ name: 'strongroom' });
  const first = config.listeners[0] as ListenerConfig;
  const tickMs = Number(process.env['STRONGROOM_RAFT_TICK_MS'] ?? '') || undefined;
  const metrics = new ServerMetrics();
  const cluster = new ClusterNode({
    raftObserver: metrics.raft,
    dir: config.storage.path, nodeId: config.storage.nodeId, listen: first.clusterAddress, logger,
    ...(config.clusterAddr ? { clusterAddr: config.clusterAddr } : {}),
    ...(config.apiAddr ? { apiAddr: config.apiAddr } : {}),
    ...(tickMs ? { tickMs } : {}),
    ...(config.storage.retryJoin ? { retryJoin: config.storage.retryJoin } : {}),
    changeLog: walWindow(config),
    snapshots: {
      ...(config.storage.snapshotThreshold !== undefined ? { snapshotThreshold: config.storage.snapshotThreshold } : {}),
      ...(config.storage.snapshotIntervalMs !== undefined ? { snapshotIntervalMs: config.storage.snapshotIntervalMs } : {}),
      ...(config.storage.trailingLogs !== undefined ? { snapshotTrailing: config.storage.trailingLogs } : {}),
    },
  });
  const replication = new ClusterReplication({ cluster, dir: config.storage.path, logger });
  const core = new Core({
    storage: cluster.storage, commits: cluster.feed, logger, engines: ENGINES, ha: cluster.hooks(), seals: await sealsOf(config, logger),
    extensions: [
      cluster.extension(),
      (c) => automatedSnapshots({ storage: c.barrier, clock: c.clock, logger, source: () => cluster.snapshot(), observer: metrics.snapshots }),
      (c) => serverSecretSync(c, cluster.feed, logger, metrics.sync),
      replication.extension(),
      () => metricsExtension(metrics.registry),
    ],
  });
  cluster.attach(core);
  metrics.bind({ core, cluster, replication });
  const listening: Listening[] = [];
  const addresses: string[] = [];
  // The cluster starts once the API's address is known (a port may be chosen at bind time);
  // requests that arrive before then wait, rather than see a node with no storage yet.
  let started = false;
  let markStarted: () => void = () => {};
  const starting = new Promise<void>((resolve) => { markStarted = resolve; });
  try {
    for (const cfg of config.listeners) {
      const { listener } = createApp(core, {
        maxRequestSize: cfg.maxRequestSize, ...(cfg.jsonLimits ? { jsonLimits: cfg.jsonLimits } : {}), logger, cluster: cluster.routing(),
        metrics: {
          observeRequest: (mountType, operation, ms, failed) => metrics.observeRequest(mountType, operation, ms, failed),
          ...(cfg.unauthenticatedMetricsAccess ? { unauthenticated: (format: string) => renderMetrics(metrics.registry, format) } : {}),
        },
      });
      const l = await startListener(cfg, (req, res) => {
        if (started) listener(req, res);
        else void starting.then(() => listener(req, res));
      });
      listening.push(l);
      addresses.push(l.url);
    }
    await requireFreeClusterPort(config, first);
    await createStorageDir(config);
    await cluster.start(addresses[0] as string);
    await replication.start();
    core.startAutoUnseal();
  } catch (err) {
    for (const l of listening) l.listener.close();
    await replication.close();
    await cluster.close();
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
      await replication.close();
      await core.close();
      await cluster.close();
    })();
    return closing;
  };
  const waitActive = async (timeoutMs = 30_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!core.active) {
      if (Date.now() > deadline) throw new Error('timed out waiting for this node to become active');
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const running: RunningServer = { core, cluster, metrics, addresses, close, waitActive };
  if (options.prepare) {
    try {
      await options.prepare(running);
    } catch (err) {
      await close(0);
      throw err;
    }
  }
  started = true;
  markStarted();
  return running;
}

/** The configured seals as the core uses them; their TLS files are read here, once. */
async function sealsOf(config: ServerConfig, logger: Logger): Promise<SealSetup> {
  const setup: SealSetup = {};
  for (const seal of config.seals ?? []) {
    const built = await transitSeal(config, seal, logger);
    if (seal.disabled) setup.disabledSeal = built;
    else setup.autoSeal = built;
  }
  return setup;
}

async function transitSeal(config: ServerConfig, seal: TransitSealConfig, logger: Logger): Promise<TransitSeal> {
  const read = async (file: string | undefined, field: string): Promise<string | undefined> => {
    if (file === undefined) return undefined;
    try {
      return await readFile(file, 'utf8');
    } catch (err) {
      throw new ConfigError(config.sourceFile, `seal.transit.${field}`, `file "${file}" cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const ca = await read(seal.tlsCaCert, 'tls_ca_cert');
  const cert = await read(seal.tlsClientCert, 'tls_client_cert');
  const key = await read(seal.tlsClientKey, 'tls_client_key');
  return new TransitSeal({
    address: seal.address, token: seal.token, keyName: seal.keyName, mountPath: seal.mountPath, clock: systemClock, logger,
    tlsSkipVerify: seal.tlsSkipVerify, disableRenewal: seal.disableRenewal,
    ...(seal.namespace ? { namespace: seal.namespace } : {}),
    ...(ca ? { tlsCaCert: ca } : {}), ...(cert ? { tlsClientCert: cert } : {}), ...(key ? { tlsClientKey: key } : {}),
    ...(seal.tlsServerName ? { tlsServerName: seal.tlsServerName } : {}),
  });
}

/**
 * The WAL a primary keeps for its secondaries, with Vault's defaults: 16384 entries, and a
 * tenth of the machine's memory (1 GB where that cannot be read).
 */
function walWindow(config: ServerConfig): { maxEntries: number; maxBytes: number } {
  const memory = totalmem();
  return {
    maxEntries: config.replication?.logshipperBufferLength ?? 16384,
    maxBytes: config.replication?.logshipperBufferSize ?? (memory > 0 ? Math.floor(memory / 10) : 1024 ** 3),
  };
}

/**
 * Creates the storage directory up front, so that a path that cannot be made is a configuration
 * error naming the field, not a failure deep inside the Raft node.
 */
async function createStorageDir(config: ServerConfig): Promise<void> {
  const dir = config.storage.path;
  try {
    await makeDir(dir, 0o700);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const why = e.code === 'ENOTDIR' ? 'a part of it is not a directory'
      : e.code === 'EACCES' || e.code === 'EPERM' ? 'permission denied'
        : e.code === 'EROFS' ? 'the file system is read-only'
          : e.code === 'ENOENT' ? 'its parent directory does not allow new entries'
            : e.code ?? e.message;
    throw new ConfigError(config.sourceFile, 'storage.raft.path', `"${dir}" cannot be created: ${why}`);
  }
}

/**
 * A new node binds its cluster port only at init or join, so a port already taken (by default
 * it is the API port plus one) would surface then as a failed request. Checked at start instead,
 * where it is a configuration error the operator can act on.
 */
async function requireFreeClusterPort(config: ServerConfig, listener: ListenerConfig): Promise<void> {
  const { host, port } = listener.clusterAddress;
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => {
      const rule = err.code === 'EADDRINUSE'
        ? `${host}:${port} is in use by another process; free it or set cluster_address to another port`
        : `${host}:${port} cannot be listened on: ${err.message}`;
      reject(new ConfigError(config.sourceFile, 'listener.tcp[0].cluster_address', rule));
    });
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}
