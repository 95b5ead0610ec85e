import { mkdtempSync, rmSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '@strongroom/core';
import { parseConfig, type ListenerConfig } from '../config';
import { startServer, type RunningServer } from '../server';
import { initAndUnseal, startTestServer, type TestServer } from './servers';

/** A server with a transit mount and key, as the unsealer of the servers under test. */
export async function startUnsealer(listener: Partial<ListenerConfig> = {}, keyName = 'autounseal'): Promise<TestServer & { token: string }> {
  const t = await startTestServer(listener, 'unsealer');
  const token = await initAndUnseal(t);
  const core = t.server.core;
  await core.handle({ operation: 'update', path: 'sys/mounts/transit', token, data: { type: 'transit' } });
  await core.handle({ operation: 'update', path: `transit/keys/${keyName}`, token, data: {} });
  return { ...t, token };
}

/** A log that keeps its lines, to check what a server said (and that no secret is in it). */
export function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => {
    lines.push(`${level} ${msg} ${fields ? JSON.stringify(fields) : ''}`);
  };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export interface SealedServer {
  dir: string;
  server: RunningServer | null;
  url: string;
  logger: ReturnType<typeof recordingLogger>;
  /** (Re)starts on the same data with these seal blocks (JSON, as in a config file). */
  start(seal?: unknown): Promise<RunningServer>;
  stop(): Promise<void>;
  remove(): Promise<void>;
}

/** A cluster of one whose config carries `seal` blocks; restartable on the same data and port. */
export function sealedServer(): SealedServer {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-autounseal-'));
  // Fixed across restarts, so the node's stored address stays its own.
  let ports: [number, number] | undefined;
  const s: SealedServer = {
    dir, server: null, url: '', logger: recordingLogger(),
    async start(seal?: unknown) {
      ports ??= [await freePort(), await freePort()];
      const [port, clusterPort] = ports;
      const config = await parseConfig(JSON.stringify({
        storage: { raft: { path: join(dir, 'data'), node_id: 'sealed' } },
        listener: { tcp: { address: `127.0.0.1:${port}`, cluster_address: `127.0.0.1:${clusterPort}`, tls_disable: true } },
        ...(seal === undefined ? {} : { seal }),
      }), 'test.json', 'json', {});
      s.server = await startServer(config, { logger: s.logger });
      s.url = s.server.addresses[0] as string;
      return s.server;
    },
    async stop() {
      await s.server?.close(1000);
      s.server = null;
    },
    async remove() {
      await s.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return s;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

export function transitStanza(unsealer: { url: string; token: string }, extra: Record<string, unknown> = {}): unknown {
  return { transit: { address: unsealer.url, token: unsealer.token, key_name: 'autounseal', mount_path: 'transit/', ...extra } };
}

/** Polls until `check` gives a value; bounded by `timeoutMs`. */
export async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A TCP relay to `target` that can be shut (connections refused) and opened again on the same port. */
export async function relay(target: string): Promise<{ url: string; shut(): Promise<void>; open(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  let server: net.Server | null = null;
  const sockets = new Set<net.Socket>();
  let listenPort = 0;
  const open = () => new Promise<void>((resolve, reject) => {
    server = net.createServer((client) => {
      const upstream = net.connect(Number(port), hostname);
      sockets.add(client);
      sockets.add(upstream);
      client.pipe(upstream).pipe(client);
      const end = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream); };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
    server.once('error', reject);
    server.listen(listenPort, '127.0.0.1', () => {
      listenPort = (server?.address() as net.AddressInfo).port;
      resolve();
    });
  });
  await open();
  return {
    url: `http://127.0.0.1:${listenPort}`,
    open,
    shut: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      if (!server) return resolve();
      server.close(() => resolve());
      server = null;
    }),
  };
}
