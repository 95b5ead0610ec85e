import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@strongroom/core';
import type { ListenerConfig } from '../config';
import { startServer, type RunningServer } from '../server';
import { call } from '../test-support/servers';
import { parseExposition, valueOf } from './test-support/exposition';
import { useUnsealedServer } from './test-support/unsealed-server';

const listener = (extra: Partial<ListenerConfig> = {}): ListenerConfig => ({
  type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 32 * 1024 * 1024,
  clusterAddress: { host: '127.0.0.1', port: 0 }, ...extra,
});

async function metrics(url: string, headers: Record<string, string> = {}, query = '?format=prometheus') {
  const r = await fetch(`${url}/v1/sys/metrics${query}`, { headers });
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type'), text };
}

/** Who may read `sys/metrics`: a token allowed to read it, or anyone on a listener opened to scrapers. */
describe('metrics access', () => {
  const t = useUnsealedServer();

  it('refuses a caller without a token, or whose policies do not allow reading sys/metrics', async () => {
    const none = await metrics(t.url);
    expect(none.status).toBe(403);
    expect(JSON.parse(none.text)).toEqual({ errors: ['permission denied'] });
    const plain = (await call(t.url, 'POST', 'auth/token/create', { token: t.root, body: { policies: ['default'] } })).json.auth.client_token as string;
    expect((await metrics(t.url, { 'x-vault-token': plain })).status).toBe(403);
    expect((await metrics(t.url, { 'x-vault-token': plain }, '')).status).toBe(403);
  });

  it('serves a token whose policy grants read on sys/metrics, in both formats', async () => {
    expect((await call(t.url, 'POST', 'sys/policies/acl/scraper', { token: t.root, body: { policy: 'path "sys/metrics" { capabilities = ["read"] }' } })).status).toBe(204);
    const scraper = (await call(t.url, 'POST', 'auth/token/create', { token: t.root, body: { policies: ['scraper'] } })).json.auth.client_token as string;
    const text = await metrics(t.url, { 'x-vault-token': scraper });
    expect(text.status).toBe(200);
    expect(valueOf(parseExposition(text.text).samples, 'vault_core_unsealed')).toBe(1);
    const json = await metrics(t.url, { 'x-vault-token': scraper }, '');
    expect(json.status).toBe(200);
    expect(JSON.parse(json.text).Gauges.length).toBeGreaterThan(0);
  });

  it('answers in the root namespace only', async () => {
    expect((await call(t.url, 'POST', 'sys/namespaces/team', { token: t.root, body: {} })).status).toBeLessThan(300);
    const inTeam = await metrics(t.url, { 'x-vault-token': t.root, 'x-vault-namespace': 'team' });
    expect(inTeam.status).toBe(400);
    expect(JSON.parse(inTeam.text).errors[0]).toMatch(/root namespace/);
    expect((await fetch(`${t.url}/v1/team/sys/metrics`, { headers: { 'x-vault-token': t.root } })).status).toBe(400);
  });
});

describe('a listener with unauthenticated_metrics_access', () => {
  let server: RunningServer;
  let dir: string;
  let open: string;
  let closed: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'metrics-listeners-'));
    server = await startServer({
      storage: { type: 'raft', path: join(dir, 'data'), nodeId: 'm' },
      listeners: [listener({ unauthenticatedMetricsAccess: true }), listener({ clusterAddress: { host: '127.0.0.1', port: 0 } })],
      ui: false, sourceFile: '(test)', warnings: [],
    }, { logger: silentLogger });
    [open, closed] = server.addresses as [string, string];
  }, 60_000);
  afterAll(async () => {
    await server?.close(1000);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers without a token on that listener only, even while sealed', async () => {
    const sealed = await metrics(open);
    expect(sealed.status).toBe(200);
    expect(sealed.type).toMatch(/^text\/plain/);
    expect(valueOf(parseExposition(sealed.text).samples, 'vault_core_unsealed')).toBe(0);
    expect((await metrics(closed)).status).toBe(503);

    const { keys } = await server.core.initialize(1, 1);
    await server.core.unseal(keys[0] as Buffer);
    await server.waitActive();
    const unsealed = await metrics(open);
    expect(valueOf(parseExposition(unsealed.text).samples, 'vault_core_unsealed')).toBe(1);
    const json = await metrics(open, {}, '');
    expect(json.status).toBe(200);
    expect(json.type).toBe('application/json');
    expect(JSON.parse(json.text).Gauges).toContainEqual({ Name: 'vault_core_unsealed', Value: 1, Labels: {} });
    expect((await metrics(closed)).status).toBe(403);
  });

  it('still refuses an unknown format and a child namespace', async () => {
    const bad = await metrics(open, {}, '?format=yaml');
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toEqual({ errors: [expect.stringContaining('"format"')] });
    expect((await metrics(open, { 'x-vault-namespace': 'team' })).status).toBe(400);
  });
});
