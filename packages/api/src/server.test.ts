import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@strongroom/core';
import { startServer } from './server';
import { call, initAndUnseal, startTestServer } from './test-support/servers';
import { makeSelfSignedCert } from './test-support/tls';

describe('the server', () => {
  it('serves TLS when the listener has a certificate', async () => {
    const certDir = mkdtempSync(join(tmpdir(), 'strongroom-tls-'));
    const { cert, key } = makeSelfSignedCert(certDir);
    const t = await startTestServer({ tlsDisable: false, tlsCertFile: cert, tlsKeyFile: key });
    try {
      expect(t.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const body = await new Promise<string>((resolve, reject) => {
        https.get(`${t.url}/v1/sys/seal-status`, { ca: readFileSync(cert) }, (res) => {
          let out = '';
          res.on('data', (d) => { out += d; });
          res.on('end', () => resolve(out));
        }).on('error', reject);
      });
      expect(JSON.parse(body)).toMatchObject({ initialized: false, sealed: true });
      await expect(fetch(`${t.url.replace('https', 'http')}/v1/sys/health`)).rejects.toThrow();
    } finally {
      await t.stop();
      rmSync(certDir, { recursive: true, force: true });
    }
  });

  it('finishes a request in flight when asked to stop, then refuses new connections', async () => {
    const t = await startTestServer();
    const root = await initAndUnseal(t);
    const port = Number(new URL(t.url).port);
    // A request whose body is still arriving when the shutdown starts.
    const inflight = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/secret/data/late', headers: { 'x-vault-token': root, 'content-type': 'application/json' } }, (res) => {
        let out = '';
        res.on('data', (d) => { out += d; });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: out }));
      });
      req.on('error', reject);
      req.write('{"data": {"written":');
      setTimeout(() => req.end(' "during shutdown"}}'), 150);
    });
    await new Promise((r) => setTimeout(r, 50));
    const stopping = t.server.close(5000);
    const result = await inflight;
    await stopping;
    expect(result.status).toBe(200);
    expect(JSON.parse(result.body).data.version).toBe(1);
    await expect(fetch(`${t.url}/v1/sys/health`)).rejects.toThrow();
    rmSync(t.dir, { recursive: true, force: true });
  });

  it('takes Raft snapshots on the schedule the storage block sets', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strongroom-test-'));
    const server = await startServer({
      storage: { type: 'raft', path: join(dir, 'data'), nodeId: 'test', snapshotThreshold: 20, snapshotIntervalMs: 1000 },
      listeners: [{ type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 1 << 20, clusterAddress: { host: '127.0.0.1', port: 0 } }],
      ui: false, sourceFile: '(test)', warnings: [],
    }, { logger: silentLogger });
    try {
      const core = server.core;
      const { keys, rootToken } = await core.initialize(1, 1);
      await core.unseal(keys[0] as Buffer);
      await server.waitActive();
      await core.handle({ operation: 'update', path: 'sys/mounts/kv', token: rootToken, data: { type: 'kv-v2' } });
      for (let i = 0; i < 40; i++) {
        await core.handle({ operation: 'update', path: `kv/data/s${i}`, token: rootToken, data: { data: { i } } });
      }
      const snapshots = join(dir, 'data', 'raft', 'snapshots');
      const deadline = Date.now() + 10_000;
      while (!readdirSync(snapshots).some((f) => f.endsWith('.snap')) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(readdirSync(snapshots).filter((f) => f.endsWith('.snap')).length).toBeGreaterThan(0);
    } finally {
      await server.close(1000);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps data across a restart and comes back sealed', async () => {
    const t = await startTestServer();
    const core = t.server.core;
    const { keys, rootToken } = await core.initialize(1, 1);
    await core.unseal(keys[0] as Buffer);
    await t.server.waitActive();
    await core.handle({ operation: 'update', path: 'sys/mounts/kv', token: rootToken, data: { type: 'kv-v2' } });
    await core.handle({ operation: 'update', path: 'kv/data/a', token: rootToken, data: { data: { v: 'kept' } } });
    await t.server.close(1000);

    const again = await startServer({
      storage: { type: 'raft', path: join(t.dir, 'data'), nodeId: 'test' },
      listeners: [{ type: 'tcp', address: '127.0.0.1:0', host: '127.0.0.1', port: 0, tlsDisable: true, maxRequestSize: 1 << 20, clusterAddress: { host: '127.0.0.1', port: 0 } }],
      ui: false, sourceFile: '(test)', warnings: [],
    }, { logger: silentLogger });
    try {
      const url = again.addresses[0] as string;
      expect((await call(url, 'GET', 'kv/data/a', { token: rootToken })).status).toBe(503);
      await again.core.unseal(keys[0] as Buffer);
      expect((await call(url, 'GET', 'kv/data/a', { token: rootToken })).json.data.data).toEqual({ v: 'kept' });
    } finally {
      await again.close(1000);
      rmSync(t.dir, { recursive: true, force: true });
    }
  });
});
