import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@strongroom/core';
import type { ServerConfig } from '../config';
import { startServer, type RunningServer } from '../server';
import { call } from '../test-support/servers';

/** Joins that cannot succeed: each fails with a clear 4xx and leaves the node a new node, able to join again. */

function config(data: string, nodeId: string, clusterAddr?: string): ServerConfig {
  return {
    storage: { type: 'raft', path: data, nodeId },
    listeners: [{ type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 1024 * 1024, clusterAddress: { host: '127.0.0.1', port: 0 } }],
    ...(clusterAddr ? { clusterAddr } : {}),
    ui: false, sourceFile: '(test)', warnings: [],
  };
}

const dirs: string[] = [];
const servers: RunningServer[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-join-failures-'));
  dirs.push(dir);
  return dir;
}

async function start(cfg: ServerConfig): Promise<RunningServer> {
  const server = await startServer(cfg, { logger: silentLogger });
  servers.push(server);
  return server;
}

afterAll(async () => {
  for (const s of servers) await s.close(1000);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('a join to a leader whose cluster_addr this node cannot reach is refused at once, naming it, and the node stays new', async () => {
  // Nothing listens on port 1 of the loopback address.
  const leader = await start(config(join(tempDir(), 'data'), 'leader', 'https://127.0.0.1:1'));
  const { keys } = await leader.core.initialize(1, 1);
  await leader.core.unseal(keys[0] as Buffer);
  await leader.waitActive();
  const joiner = await start(config(join(tempDir(), 'data'), 'joiner'));
  const url = joiner.addresses[0] as string;
  const refused = await call(url, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: leader.addresses[0] } });
  expect(refused.status).toBe(400);
  expect(refused.json.errors[0]).toMatch(/cluster_addr https:\/\/127\.0\.0\.1:1\b/);
  expect((await call(url, 'GET', 'sys/seal-status')).json).toMatchObject({ initialized: false, sealed: true });
  const again = await call(url, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: leader.addresses[0] } });
  expect(again.json.errors[0]).not.toMatch(/already belongs/);
});

/**
 * A join stores the cluster's TLS identity only once the cluster's data has arrived. A node
 * killed before that has Raft data and no identity: it starts as a new node, the half-joined
 * data gone, so that it can join again (rather than answer "already belongs to a cluster").
 */
test('a server that finds Raft data without the cluster identity starts as a new node, able to join', async () => {
  const data = join(tempDir(), 'data');
  mkdirSync(join(data, 'raft', 'state'), { recursive: true });
  writeFileSync(join(data, 'raft', 'state', 'leftover'), 'from a join that did not finish');
  const server = await start(config(data, 'joiner'));
  expect(existsSync(join(data, 'raft'))).toBe(false);
  expect(await server.core.seal.status()).toMatchObject({ initialized: false, sealed: true });
});
