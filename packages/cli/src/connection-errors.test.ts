import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { freePort, run } from './test-support/cli-runner';
import { selfSignedCert } from './test-support/tls';

const SEAL_STATUS = { type: 'shamir', initialized: true, sealed: false, t: 1, n: 1, progress: 0, version: 'stand-in', storage_type: 'raft' };

interface Seen {
  path: string;
  namespace?: string;
  token?: string;
  clientCn?: string;
}

/** A TLS listener with a self-signed certificate that answers seal-status and notes what it was sent. */
async function tlsStandIn(cert: { cert: string; key: string }, clientCa?: string): Promise<{ server: https.Server; address: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = https.createServer({
    cert: readFileSync(cert.cert), key: readFileSync(cert.key),
    ...(clientCa ? { ca: readFileSync(clientCa), requestCert: true, rejectUnauthorized: false } : {}),
  }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    seen.push({
      path: req.url ?? '',
      ...(typeof req.headers['x-vault-namespace'] === 'string' ? { namespace: req.headers['x-vault-namespace'] } : {}),
      ...(typeof req.headers['x-vault-token'] === 'string' ? { token: req.headers['x-vault-token'] } : {}),
      ...(peer && typeof peer.subject?.CN === 'string' ? { clientCn: peer.subject.CN } : {}),
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(SEAL_STATUS));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { server, address: `https://127.0.0.1:${(server.address() as net.AddressInfo).port}`, seen };
}

describe('the strongroom command on connection and TLS trouble', () => {
  let dir: string;
  const servers: Array<{ close(cb: () => void): unknown }> = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-tls-'));
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((ok) => s.close(() => ok()))));
    rmSync(dir, { recursive: true, force: true });
  });

  it('names the address and "connection refused" when nothing listens', async () => {
    const address = `http://127.0.0.1:${await freePort()}`;
    const r = await run(['kv', 'get', 'secret/x'], { env: { VAULT_ADDR: address } });
    expect(r.code).toBe(2);
    expect(r.err).toContain(address);
    expect(r.err).toContain('connection refused');
    expect(r.err).not.toContain('fetch failed');
  });

  it('names the address and a time-out when the server never answers (VAULT_CLIENT_TIMEOUT)', async () => {
    const sockets: net.Socket[] = [];
    const mute = net.createServer((socket) => { sockets.push(socket); });
    await new Promise<void>((ok) => mute.listen(0, '127.0.0.1', ok));
    // Closing waits for open connections: the held ones go first.
    servers.push({ close: (cb: () => void) => { for (const s of sockets) s.destroy(); return mute.close(cb); } });
    const address = `http://127.0.0.1:${(mute.address() as net.AddressInfo).port}`;
    const r = await run(['read', 'secret/x'], { env: { VAULT_ADDR: address, VAULT_CLIENT_TIMEOUT: '1' } });
    expect(r.code).toBe(2);
    expect(r.err).toContain(address);
    expect(r.err).toContain('timed out after 1s');
  });

  it('refuses a self-signed certificate as "not trusted", and trusts it through VAULT_CACERT, -ca-cert, VAULT_CAPATH or VAULT_SKIP_VERIFY', async () => {
    const cert = selfSignedCert(dir, 'server', ['127.0.0.1', 'localhost']);
    const tls = await tlsStandIn(cert);
    servers.push(tls.server);
    // status exits 1 on an error: its 2 means sealed.
    const untrusted = await run(['status'], { env: { VAULT_ADDR: tls.address } });
    expect(untrusted.code).toBe(1);
    expect(untrusted.err).toContain(tls.address);
    expect(untrusted.err).toContain('certificate not trusted');
    expect(untrusted.err).toContain('VAULT_CACERT');
    expect(tls.seen).toEqual([]);

    const caDir = join(dir, 'cas');
    mkdirSync(caDir);
    copyFileSync(cert.cert, join(caDir, 'server.pem'));
    for (const [how, args, env] of [
      ['VAULT_CACERT', [], { VAULT_CACERT: cert.cert }],
      ['-ca-cert', [`-ca-cert=${cert.cert}`], {}],
      ['VAULT_CAPATH', [], { VAULT_CAPATH: caDir }],
      ['VAULT_SKIP_VERIFY', [], { VAULT_SKIP_VERIFY: 'true' }],
    ] as const) {
      const r = await run(['status', ...args], { env: { VAULT_ADDR: tls.address, ...env } });
      expect({ how, code: r.code, err: r.err }).toEqual({ how, code: 0, err: '' });
      expect(r.out).toMatch(/^Sealed\s+false$/m);
    }
  });

  it('says "hostname mismatch" when the trusted certificate is for another name', async () => {
    const cert = selfSignedCert(dir, 'elsewhere', ['elsewhere.test']);
    const tls = await tlsStandIn(cert);
    servers.push(tls.server);
    const r = await run(['list', 'secret/'], { env: { VAULT_ADDR: tls.address, VAULT_CACERT: cert.cert } });
    expect(r.code).toBe(2);
    expect(r.err).toContain(tls.address);
    expect(r.err).toContain('hostname mismatch');
    // The name the certificate carries, asked for explicitly, is accepted.
    const named = await run(['status', '-tls-server-name=elsewhere.test'], { env: { VAULT_ADDR: tls.address, VAULT_CACERT: cert.cert } });
    expect(named.code).toBe(0);
  });

  it('sends the client certificate (VAULT_CLIENT_CERT/KEY), the namespace (VAULT_NAMESPACE) and the token', async () => {
    const cert = selfSignedCert(dir, 'server', ['127.0.0.1']);
    const client = selfSignedCert(dir, 'operator-client', ['client.test']);
    const tls = await tlsStandIn(cert, client.cert);
    servers.push(tls.server);
    const r = await run(['status'], {
      env: {
        STRONGROOM_ADDR: tls.address, VAULT_CACERT: cert.cert, VAULT_CLIENT_CERT: client.cert, VAULT_CLIENT_KEY: client.key,
        VAULT_NAMESPACE: 'team-a', VAULT_TOKEN: 't0ken',
      },
    });
    expect(r.code).toBe(0);
    expect(tls.seen).toEqual([{ path: '/v1/sys/seal-status', namespace: 'team-a', token: 't0ken', clientCn: 'operator-client' }]);
  });

  it('follows a standby\'s 307 to the active node, keeping the method, body and token', async () => {
    const seen: string[] = [];
    const active = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => { body += d.toString(); });
      req.on('end', () => {
        seen.push(`${req.method} ${req.url} ${req.headers['x-vault-token']} ${body}`);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((ok) => active.listen(0, '127.0.0.1', ok));
    servers.push(active);
    const activeAddr = `http://127.0.0.1:${(active.address() as net.AddressInfo).port}`;
    const standby = http.createServer((req, res) => {
      req.resume();
      res.writeHead(307, { location: `${activeAddr}${req.url}` }).end();
    });
    await new Promise<void>((ok) => standby.listen(0, '127.0.0.1', ok));
    servers.push(standby);
    const r = await run(['write', 'plain/x', 'a=b'], { env: { VAULT_ADDR: `http://127.0.0.1:${(standby.address() as net.AddressInfo).port}`, VAULT_TOKEN: 'tok' } });
    expect(r).toMatchObject({ code: 0, out: 'Success! Data written to: plain/x\n' });
    expect(seen).toEqual(['PUT /v1/plain/x tok {"a":"b"}']);
  });
});
