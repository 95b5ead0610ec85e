import * as net from 'node:net';
import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';

describe('HTTP conventions a Vault client relies on', () => {
  let t: TestServer;
  let root: string;

  beforeAll(async () => {
    t = await startTestServer({ maxRequestSize: 4096 });
    root = await initAndUnseal(t);
  });
  afterAll(() => t.stop());

  it('takes the token from X-Vault-Token or Authorization: Bearer', async () => {
    expect((await call(t.url, 'GET', 'auth/token/lookup-self', { token: root })).status).toBe(200);
    const bearer = await call(t.url, 'GET', 'auth/token/lookup-self', { headers: { authorization: `Bearer ${root}` } });
    expect(bearer.status).toBe(200);
    expect(bearer.json.data.policies).toEqual(['root']);
    expect((await call(t.url, 'GET', 'auth/token/lookup-self', { headers: { authorization: `Basic ${root}` } })).status).toBe(403);
    expect((await call(t.url, 'GET', 'auth/token/lookup-self')).json).toEqual({ errors: ['permission denied'] });
  });

  it('answers with the full envelope, 204 for empty writes and 404 with an empty errors list', async () => {
    const put = await call(t.url, 'POST', 'sys/policies/acl/p1', { token: root, body: { policy: 'path "x/*" { capabilities = ["read"] }' } });
    expect(put.status).toBe(204);
    expect(put.text).toBe('');
    const read = await call(t.url, 'GET', 'sys/policies/acl/p1', { token: root });
    expect(Object.keys(read.json).sort()).toEqual(
      ['auth', 'data', 'lease_duration', 'lease_id', 'mount_type', 'renewable', 'request_id', 'warnings', 'wrap_info'],
    );
    expect(read.json).toMatchObject({ lease_id: '', renewable: false, lease_duration: 0, wrap_info: null, warnings: null, auth: null });
    expect(read.headers.get('content-type')).toBe('application/json');
    const missing = await call(t.url, 'GET', 'secret/data/nothing-here', { token: root });
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ errors: [] });
  });

  it('treats LIST and GET ?list=true as the same operation, and an empty list as 404', async () => {
    await call(t.url, 'POST', 'secret/data/dir/a', { token: root, body: { data: { x: 1 } } });
    const viaQuery = await call(t.url, 'GET', 'secret/metadata/dir?list=true', { token: root });
    const viaMethod = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(Number(new URL(t.url).port), '127.0.0.1', () => {
        sock.write(`LIST /v1/secret/metadata/dir HTTP/1.1\r\nHost: x\r\nX-Vault-Token: ${root}\r\nConnection: close\r\n\r\n`);
      });
      let out = '';
      sock.on('data', (d) => { out += d.toString(); });
      sock.on('end', () => resolve(out));
      sock.on('error', reject);
    });
    expect(viaQuery.json.data.keys).toEqual(['a']);
    expect(viaMethod).toMatch(/^HTTP\/1.1 200/);
    expect(viaMethod).toContain('"keys":["a"]');
    expect((await call(t.url, 'GET', 'secret/metadata/empty-dir?list=true', { token: root })).status).toBe(404);
    expect((await call(t.url, 'GET', 'secret/metadata/dir?list=maybe', { token: root })).status).toBe(400);
  });

  it('refuses a body over max_request_size with 413', async () => {
    const res = await call(t.url, 'POST', 'secret/data/big', { token: root, body: { data: { blob: 'x'.repeat(5000) } } });
    expect(res.status).toBe(413);
    expect(res.json.errors[0]).toMatch(/larger than the limit of 4096 bytes/);
  });

  it('answers bad input with 400 naming the field, and ignores unknown fields with a warning', async () => {
    const badJson = await call(t.url, 'POST', 'secret/data/x', { token: root, raw: '{"data": ' });
    expect(badJson.status).toBe(400);
    expect(badJson.json.errors[0]).toMatch(/failed to parse JSON/);
    const notObject = await call(t.url, 'POST', 'secret/data/x', { token: root, raw: '[1,2]' });
    expect(notObject.json.errors[0]).toBe('request body must be a JSON object');
    const badType = await call(t.url, 'POST', 'auth/token/create', { token: root, body: { num_uses: 'lots' } });
    expect(badType.status).toBe(400);
    expect(badType.json.errors[0]).toContain('"num_uses"');
    const unknown = await call(t.url, 'POST', 'auth/token/create', { token: root, body: { policies: 'default', flavour: 'mint' } });
    expect(unknown.status).toBe(200);
    expect(unknown.json.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [flavour]']);
  });

  it('accepts lists as arrays or comma strings and durations as strings or seconds', async () => {
    const a = await call(t.url, 'POST', 'auth/token/create', { token: root, body: { policies: 'p1, p2', ttl: '90m' } });
    const b = await call(t.url, 'POST', 'auth/token/create', { token: root, body: { policies: ['p1', 'p2'], ttl: 5400 } });
    expect(a.json.auth.policies).toEqual(['default', 'p1', 'p2']);
    expect(b.json.auth.policies).toEqual(a.json.auth.policies);
    expect(a.json.auth.lease_duration).toBe(5400);
    expect(b.json.auth.lease_duration).toBe(5400);
  });

  it('answers 405 for unsupported methods and operations, 415 for PATCH without merge-patch', async () => {
    for (const method of ['PATCHY', 'PROPFIND', 'TRACE', 'CONNECT']) {
      const answer = await new Promise<string>((resolve, reject) => {
        const sock = net.connect(Number(new URL(t.url).port), '127.0.0.1', () => {
          sock.write(`${method} /v1/sys/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
        });
        let out = '';
        sock.on('data', (d) => { out += d.toString(); });
        sock.on('close', () => resolve(out));
        sock.on('error', reject);
      });
      expect([method, answer.slice(0, 12)]).toEqual([method, 'HTTP/1.1 405']);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).errors).toHaveLength(1);
    }
    expect((await call(t.url, 'OPTIONS', 'sys/health')).status).toBe(405);
    expect((await call(t.url, 'DELETE', 'sys/health', { token: root })).status).toBe(405);
    const patch = await call(t.url, 'PATCH', 'secret/data/dir/a', { token: root, body: { data: { y: 2 } } });
    expect(patch.status).toBe(415);
    const ok = await call(t.url, 'PATCH', 'secret/data/dir/a', { token: root, body: { data: { y: 2 } }, headers: { 'content-type': 'application/merge-patch+json' } });
    expect(ok.status).toBe(200);
    expect((await call(t.url, 'GET', 'secret/data/dir/a', { token: root })).json.data.data).toEqual({ x: 1, y: 2 });
  });

  it('refuses writes to a path ending in a slash and unknown routes', async () => {
    const slash = await call(t.url, 'POST', 'secret/data/dir/', { token: root, body: { data: {} } });
    expect(slash.status).toBe(400);
    expect(slash.json.errors[0]).toBe("cannot write to a path ending in '/'");
    expect((await call(t.url, 'GET', 'nowhere/at/all', { token: root })).status).toBe(404);
    const outside = await fetch(`${t.url}/not-the-api`);
    expect(outside.status).toBe(404);
  });

  it('checks the token before saying that no mount serves a path, as Vault does', async () => {
    await call(t.url, 'POST', 'sys/policies/acl/nowhere-reader', { token: root, body: { policy: 'path "nowhere/*" { capabilities = ["read"] }' } });
    const limited = (await call(t.url, 'POST', 'auth/token/create', { token: root, body: { policies: ['default'] } })).json.auth.client_token as string;
    const reader = (await call(t.url, 'POST', 'auth/token/create', { token: root, body: { policies: ['nowhere-reader'] } })).json.auth.client_token as string;
    const probes: Array<[string, string, number]> = [
      ['GET', 'nowhere/at/all', 404], // no mount
      ['GET', 'secret/no-such-kind-of-path', 404], // a mount, but no path of it
      ['POST', 'secret/data/dir/', 400], // a write to a path ending in a slash
      ['DELETE', 'sys/mounts', 405], // a path that does not take the operation
    ];
    for (const [method, path, asRoot] of probes) {
      for (const token of [undefined, 'not-a-token', limited]) {
        const res = await call(t.url, method, path, { ...(token ? { token } : {}), ...(method === 'POST' ? { body: {} } : {}) });
        expect([path, res.status, res.json]).toEqual([path, 403, { errors: ['permission denied'] }]);
      }
      expect([path, (await call(t.url, method, path, { token: root, ...(method === 'POST' ? { body: {} } : {}) })).status]).toEqual([path, asRoot]);
    }
    // A token its policy lets read the path learns that nothing serves it.
    expect((await call(t.url, 'GET', 'nowhere/at/all', { token: reader })).status).toBe(404);
    // Paths that need no token still answer without one.
    expect((await call(t.url, 'GET', 'sys/health')).status).toBe(200);
    expect((await call(t.url, 'POST', 'sys/wrapping/unwrap', { token: 'nope' })).status).toBe(400);
  });

  it('wraps a reply when X-Vault-Wrap-TTL is set, and refuses a bad wrap header', async () => {
    await call(t.url, 'POST', 'secret/data/wrapme', { token: root, body: { data: { k: 'v' } } });
    const wrapped = await call(t.url, 'GET', 'secret/data/wrapme', { token: root, headers: { 'x-vault-wrap-ttl': '5m' } });
    expect(wrapped.status).toBe(200);
    expect(wrapped.json.data).toBeNull();
    expect(wrapped.json.wrap_info.ttl).toBe(300);
    const unwrapped = await call(t.url, 'POST', 'sys/wrapping/unwrap', { token: wrapped.json.wrap_info.token });
    expect(unwrapped.json.data.data).toEqual({ k: 'v' });
    const bad = await call(t.url, 'GET', 'secret/data/wrapme', { token: root, headers: { 'x-vault-wrap-ttl': 'soon' } });
    expect(bad.status).toBe(400);
    expect(bad.json.errors[0]).toContain('X-Vault-Wrap-TTL');
    const jwt = await call(t.url, 'GET', 'secret/data/wrapme', { token: root, headers: { 'x-vault-wrap-ttl': '60', 'x-vault-wrap-format': 'jwt' } });
    expect(jwt.status).toBe(400);
  });

  it('refuses a wrap TTL no duration can hold, and cuts a long one to the system maximum (32 days)', async () => {
    for (const ttl of ['99999999999999999999h', '9'.repeat(400), '9223372037', '2562048h']) {
      const res = await call(t.url, 'GET', 'secret/data/wrapme', { token: root, headers: { 'x-vault-wrap-ttl': ttl } });
      expect(res.status).toBe(400);
      expect(res.json.errors[0]).toMatch(/^invalid value for header "X-Vault-Wrap-TTL"/);
    }
    const maxTtl = 32 * 24 * 3600;
    for (const ttl of ['8760h', '9223372036', String(maxTtl + 1)]) {
      const wrapped = await call(t.url, 'GET', 'secret/data/wrapme', { token: root, headers: { 'x-vault-wrap-ttl': ttl } });
      expect(wrapped.status).toBe(200);
      expect(wrapped.json.wrap_info.ttl).toBe(maxTtl);
      const token = wrapped.json.wrap_info.token as string;
      expect((await call(t.url, 'POST', 'sys/wrapping/lookup', { token: root, body: { token } })).json.data.creation_ttl).toBe(maxTtl);
      expect((await call(t.url, 'POST', 'auth/token/lookup', { token: root, body: { token } })).json.data.ttl).toBeLessThanOrEqual(maxTtl);
      expect((await call(t.url, 'POST', 'sys/wrapping/unwrap', { token })).json.data.data).toEqual({ k: 'v' });
    }
    const data = await call(t.url, 'POST', 'sys/wrapping/wrap', { token: root, headers: { 'x-vault-wrap-ttl': '100000h' }, body: { a: 1 } });
    expect(data.json.wrap_info.ttl).toBe(maxTtl);
    expect((await call(t.url, 'GET', 'secret/data/wrapme', { token: root, headers: { 'x-vault-wrap-ttl': String(maxTtl) } })).json.wrap_info.ttl).toBe(maxTtl);
  });

  it('runs a request in the namespace named by X-Vault-Namespace or a path prefix', async () => {
    expect((await call(t.url, 'POST', 'sys/namespaces/web', { token: root })).status).toBe(200);
    await call(t.url, 'POST', 'sys/mounts/kv', { token: root, headers: { 'x-vault-namespace': 'web' }, body: { type: 'kv-v2' } });
    await call(t.url, 'POST', 'web/kv/data/site', { token: root, body: { data: { v: 1 } } });
    const viaHeader = await call(t.url, 'GET', 'kv/data/site', { token: root, headers: { 'x-vault-namespace': 'web/' } });
    expect(viaHeader.json.data.data).toEqual({ v: 1 });
    expect((await call(t.url, 'GET', 'kv/data/site', { token: root })).status).toBe(404);
    const restricted = await call(t.url, 'PUT', 'web/sys/seal', { token: root });
    expect(restricted.status).toBe(400);
    expect(restricted.json.errors[0]).toMatch(/only available in the root namespace/);
  });

  it('serves health with Vault status codes and query overrides, also for HEAD', async () => {
    const health = await call(t.url, 'GET', 'sys/health');
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ initialized: true, sealed: false, standby: false });
    expect((await call(t.url, 'GET', 'sys/health?activecode=299')).status).toBe(299);
    const head = await fetch(`${t.url}/v1/sys/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });
});

describe('while sealed', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.stop());

  it('answers 503 everywhere but the seal endpoints, before and after init', async () => {
    const uninit = await call(t.url, 'GET', 'secret/data/x', { token: 'x' });
    expect(uninit.status).toBe(503);
    expect(uninit.json.errors[0]).toMatch(/not initialized/);
    expect((await call(t.url, 'GET', 'sys/health')).status).toBe(501);
    await t.server.core.initialize(1, 1);
    const sealed = await call(t.url, 'GET', 'secret/data/x', { token: 'x' });
    expect(sealed.status).toBe(503);
    expect(sealed.json).toEqual({ errors: ['Vault is sealed'] });
    expect((await call(t.url, 'GET', 'sys/health')).status).toBe(503);
    expect((await call(t.url, 'GET', 'sys/health?sealedcode=200')).status).toBe(200);
    const status = await call(t.url, 'GET', 'sys/seal-status');
    expect(status.json).toMatchObject({ type: 'shamir', initialized: true, sealed: true, t: 1, n: 1, progress: 0 });
  });
});

describe('a client that names a namespace (VAULT_NAMESPACE)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.stop());

  it('still inits, unseals, reads seal status and health, and seals, as with Vault', async () => {
    const headers = { 'x-vault-namespace': 'team/' };
    expect((await call(t.url, 'GET', 'sys/init', { headers })).json).toEqual({ initialized: false });
    expect((await call(t.url, 'GET', 'sys/health', { headers })).status).toBe(501);
    const init = await call(t.url, 'PUT', 'sys/init', { headers, body: { secret_shares: 1, secret_threshold: 1 } });
    expect(init.status).toBe(200);
    const key = init.json.keys_base64[0] as string;
    const root = init.json.root_token as string;
    expect((await call(t.url, 'GET', 'sys/seal-status', { headers })).json).toMatchObject({ initialized: true, sealed: true });
    const unsealed = await call(t.url, 'PUT', 'sys/unseal', { headers, body: { key } });
    expect(unsealed.status).toBe(200);
    expect(unsealed.json).toMatchObject({ sealed: false });
    await t.server.waitActive();
    expect((await call(t.url, 'GET', 'sys/health', { headers })).status).toBe(200);
    expect((await call(t.url, 'GET', 'sys/leader', { headers })).status).toBe(200);
    // No such namespace exists: the header is not even looked at.
    expect((await call(t.url, 'GET', 'sys/seal-status', { headers })).json).toMatchObject({ sealed: false });
    expect((await call(t.url, 'PUT', 'sys/seal', { headers, token: root })).status).toBe(204);
    expect((await call(t.url, 'GET', 'sys/seal-status', { headers })).json).toMatchObject({ sealed: true });
  });
});
