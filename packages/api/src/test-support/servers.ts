import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@strongroom/core';
import type { ListenerConfig } from '../config';
import { startServer, type RunningServer } from '../server';

export interface TestServer {
  server: RunningServer;
  url: string;
  dir: string;
  /** The unseal key, once `initAndUnseal` made one. */
  key?: Buffer;
  stop(): Promise<void>;
}

/** A real server (a cluster of one) on ephemeral loopback ports, with its data in a temporary directory. */
export async function startTestServer(listener: Partial<ListenerConfig> = {}, nodeId = 'test'): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-test-'));
  const server = await startServer({
    storage: { type: 'raft', path: join(dir, 'data'), nodeId },
    listeners: [{ type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 32 * 1024 * 1024, clusterAddress: { host: '127.0.0.1', port: 0 }, ...listener }],
    ui: false, sourceFile: '(test)', warnings: [],
  }, { logger: silentLogger });
  return {
    server, url: server.addresses[0] as string, dir,
    stop: async () => {
      await server.close(1000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Initializes with one share, unseals, and mounts KV v2 at `secret/`; returns the root token. */
export async function initAndUnseal(t: TestServer): Promise<string> {
  const core = t.server.core;
  const { keys, rootToken } = await core.initialize(1, 1);
  t.key = keys[0] as Buffer;
  await core.unseal(t.key);
  await t.server.waitActive();
  await core.handle({ operation: 'update', path: 'sys/mounts/secret', token: rootToken, data: { type: 'kv', options: { version: '2' } } });
  return rootToken;
}

export async function call(url: string, method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string>; raw?: string } = {}) {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers['x-vault-token'] = options.token;
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const res = await fetch(`${url}/v1/${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? (JSON.parse(text) as any) : null };
}

/**
 * The requests a spy on GrpcTransport's `call` saw standbys forward, leaving out the membership
 * control calls (a follower's periodic seal report, join probes), which begin with four 0xff bytes.
 */
export function forwardedCalls(spy: { mock: { calls: unknown[][] } }): unknown[][] {
  return spy.mock.calls.filter(([, payload]) => !(Buffer.isBuffer(payload) && payload.readUInt32BE(0) === 0xffffffff));
}
