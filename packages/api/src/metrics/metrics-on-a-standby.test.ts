import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@strongroom/core';
import type { ListenerConfig } from '../config';
import { startServer, type RunningServer } from '../server';
import { call, initAndUnseal, startTestServer, type TestServer } from '../test-support/servers';
import { parseExposition, valueOf } from './test-support/exposition';

const listener = (extra: Partial<ListenerConfig> = {}): ListenerConfig => ({
  type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 32 * 1024 * 1024,
  clusterAddress: { host: '127.0.0.1', port: 0 }, ...extra,
});

async function scrape(url: string, headers: Record<string, string> = {}) {
  const r = await fetch(`${url}/v1/sys/metrics?format=prometheus`, { headers });
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type'), text, samples: r.status === 200 ? parseExposition(text).samples : [] };
}

/**
 * Two servers in one process, the second a standby with two listeners: on the usual one a
 * caller with a token gets the active node's metrics (the request is handed over the cluster
 * connection and its text comes back as text); the one open to scrapers answers with its own.
 */
describe('metrics on a standby', () => {
  let leader: TestServer;
  let standby: RunningServer;
  let dir: string;
  let root: string;
  let closed: string;
  let open: string;

  beforeAll(async () => {
    leader = await startTestServer();
    root = await initAndUnseal(leader);
    dir = mkdtempSync(join(tmpdir(), 'metrics-standby-'));
    standby = await startServer({
      storage: { type: 'raft', path: join(dir, 'data'), nodeId: 'standby' },
      listeners: [listener(), listener({ unauthenticatedMetricsAccess: true })],
      ui: false, sourceFile: '(test)', warnings: [],
    }, { logger: silentLogger });
    [closed, open] = standby.addresses as [string, string];
    expect((await call(closed, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: leader.url } })).status).toBe(200);
    expect((await call(closed, 'PUT', 'sys/unseal', { body: { key: (leader.key as Buffer).toString('base64') } })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await standby?.close(1000);
    await leader?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers with its own metrics on its open listener', async () => {
    const deadline = Date.now() + 30_000;
    let own = await scrape(open);
    // Until the join has settled the standby may not count both members yet.
    while (valueOf(own.samples, 'vault_raft_peers') !== 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      own = await scrape(open);
    }
    expect(own.status).toBe(200);
    expect(valueOf(own.samples, 'vault_raft_peers')).toBe(2);
    expect(valueOf(own.samples, 'vault_core_unsealed')).toBe(1);
    expect(valueOf(own.samples, 'vault_core_active')).toBe(0);
    expect(valueOf(own.samples, 'strongroom_raft_leader')).toBe(0);
  });

  it('hands a caller with a token to the active node, whose text comes back as text', async () => {
    const refused = await scrape(closed);
    expect({ status: refused.status, body: JSON.parse(refused.text) }).toEqual({ status: 403, body: { errors: ['permission denied'] } });
    const relayed = await scrape(closed, { 'x-vault-token': root });
    expect(relayed.status).toBe(200);
    expect(relayed.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(valueOf(relayed.samples, 'vault_core_active')).toBe(1);
    expect(valueOf(relayed.samples, 'strongroom_raft_leader')).toBe(1);
  });
});
