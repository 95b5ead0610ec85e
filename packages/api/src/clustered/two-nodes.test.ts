import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrpcTransport } from '@strongroom/raft';
import { call, forwardedCalls, initAndUnseal, startTestServer, type TestServer } from '../test-support/servers';
import { makeSelfSignedCert } from '../test-support/tls';

/**
 * Two servers in one process: a leader serving its API over TLS with a private CA, and a node
 * that joins it. Covers the join handshake, the unseal that completes it, and forwarding from
 * the standby (over HTTPS, trusting leader_ca_cert).
 */
describe('a node joining a leader', () => {
  let certDir: string;
  let leader: TestServer;
  let joiner: TestServer;
  let root: string;
  let ca: string;

  beforeAll(async () => {
    certDir = mkdtempSync(join(tmpdir(), 'strongroom-join-'));
    const { cert, key } = makeSelfSignedCert(certDir);
    ca = readFileSync(cert, 'utf8');
    leader = await startTestServer({ tlsDisable: false, tlsCertFile: cert, tlsKeyFile: key });
    root = await initAndUnseal(leader);
    joiner = await startTestServer({}, 'joiner');
  });
  afterAll(async () => {
    await joiner.stop();
    await leader.stop();
    rmSync(certDir, { recursive: true, force: true });
  });

  it('refuses a join to a leader it cannot trust, then joins with leader_ca_cert', async () => {
    const untrusted = await call(joiner.url, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: leader.url } });
    expect(untrusted.status).toBe(400);
    expect(untrusted.json.errors[0]).toMatch(/could not reach the leader/);

    const joined = await call(joiner.url, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: leader.url, leader_ca_cert: ca } });
    expect(joined.status).toBe(200);
    expect(joined.json).toEqual({ joined: true });
    // It now knows the cluster's seal configuration, and waits for its keys.
    expect((await call(joiner.url, 'GET', 'sys/seal-status')).json).toMatchObject({ initialized: true, sealed: true, t: 1, n: 1 });
  });

  it('refuses keys of another cluster at unseal, and a second join', async () => {
    const wrong = await call(joiner.url, 'PUT', 'sys/unseal', { body: { key: Buffer.alloc(32, 9).toString('base64') } });
    expect(wrong.status).toBe(400);
    expect(wrong.json.errors[0]).toMatch(/not the keys of the cluster this node is joining/);
    const again = await call(joiner.url, 'POST', 'sys/storage/raft/join', { body: { leader_api_addr: leader.url, leader_ca_cert: ca } });
    expect(again.status).toBe(400);
    expect(again.json.errors[0]).toMatch(/already belongs to a cluster/);
  });

  it('completes the join at unseal and serves through the active node', async () => {
    const key = (leader.key as Buffer).toString('base64');
    const unsealed = await call(joiner.url, 'PUT', 'sys/unseal', { body: { key } });
    expect(unsealed.status).toBe(200);
    expect(unsealed.json).toMatchObject({ sealed: false });

    // Asked of the standby, answered by the leader.
    const config = await call(joiner.url, 'GET', 'sys/storage/raft/configuration', { token: root });
    expect(config.json.data.config.servers.map((s: { node_id: string }) => s.node_id).sort()).toEqual(['joiner', 'test']);

    // A write through the standby lands on the leader and reads back from both.
    const written = await call(joiner.url, 'POST', 'secret/data/via-standby', { token: root, body: { data: { v: 1 } } });
    expect(written.status).toBe(200);
    const onLeader = await leader.server.core.handle({ operation: 'read', path: 'secret/data/via-standby', token: root, data: {} });
    expect((onLeader.body as { data: { data: unknown } }).data.data).toEqual({ v: 1 });
    expect((await call(joiner.url, 'GET', 'secret/data/via-standby', { token: root })).json.data.data).toEqual({ v: 1 });
    expect((await call(joiner.url, 'GET', 'sys/leader')).json).toMatchObject({ ha_enabled: true, is_self: false, leader_address: leader.url });
    expect((await call(joiner.url, 'GET', 'sys/health')).status).toBe(429);

    // Asked not to forward, the standby points at the active node instead.
    const redirect = await fetch(`${joiner.url}/v1/secret/data/via-standby`, { headers: { 'x-vault-token': root, 'x-vault-no-request-forwarding': 'true' }, redirect: 'manual' });
    expect(redirect.status).toBe(307);
    expect(redirect.headers.get('location')).toBe(`${leader.url}/v1/secret/data/via-standby`);
  });

  it('hands requests to the active node over the cluster connection, with the client address and LIST intact', async () => {
    const calls = jest.spyOn(GrpcTransport.prototype, 'call');
    try {
      await call(joiner.url, 'POST', 'secret/data/listed/a', { token: root, body: { data: { v: 1 } } });
      const listed = await call(joiner.url, 'LIST', 'secret/metadata/listed', { token: root });
      expect(listed.status).toBe(200);
      expect(listed.json.data.keys).toEqual(['a']);
      expect(forwardedCalls(calls).length).toBeGreaterThan(0);

      // A token bound to the client's address works through the standby, so the address arrived;
      // a client's own claim to be forwarded is dropped, not believed.
      const bound = await call(joiner.url, 'POST', 'auth/token/create', { token: root, body: { policies: ['default'], bound_cidrs: ['127.0.0.1/32'] } });
      const token = bound.json.auth.client_token as string;
      expect((await call(joiner.url, 'GET', 'auth/token/lookup-self', { token })).status).toBe(200);
      const elsewhere = await call(joiner.url, 'POST', 'auth/token/create', { token: root, body: { policies: ['default'], bound_cidrs: ['10.0.0.0/8'] } });
      const spoofed = await call(joiner.url, 'GET', 'auth/token/lookup-self', {
        token: elsewhere.json.auth.client_token, headers: { 'x-strongroom-forwarded-for': '10.1.2.3;0;AAAA' },
      });
      expect(spoofed.status).toBe(403);

      // Errors come back as the active node gave them, and a HEAD has no body.
      const missing = await call(joiner.url, 'GET', 'secret/data/none-here', { token: root });
      expect(missing.status).toBe(404);
      const head = await fetch(`${joiner.url}/v1/secret/data/via-standby`, { method: 'HEAD', headers: { 'x-vault-token': root } });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe('');
      const bad = await call(joiner.url, 'POST', 'secret/data/bad', { token: root, raw: '{not json' });
      expect(bad.status).toBe(400);
      expect(bad.json.errors[0]).toMatch(/failed to parse JSON/);
    } finally {
      calls.mockRestore();
    }
  });

  it('still streams a snapshot download through the standby over HTTP', async () => {
    const calls = jest.spyOn(GrpcTransport.prototype, 'call');
    try {
      const res = await fetch(`${joiner.url}/v1/sys/storage/raft/snapshot`, { headers: { 'x-vault-token': root } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/octet-stream');
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
      expect(forwardedCalls(calls)).toEqual([]);
    } finally {
      calls.mockRestore();
    }
  });
});
