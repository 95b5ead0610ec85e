import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';

/** A list of numbers: the costliest shape per byte for the HCL parser. */
function numbersPolicy(bytes: number): string {
  const items: number[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    items.push(i);
    length += String(i).length + 1;
  }
  return `path "a" {\n  x = [${items.join(',')}]\n}\n`;
}

describe('hostile policies and names over HTTP', () => {
  let t: TestServer;
  let root: string;
  beforeAll(async () => {
    t = await startTestServer();
    root = await initAndUnseal(t);
  });
  afterAll(async () => {
    await t.stop();
  });

  it('answers a 2 MiB policy with a 400 naming policy, and keeps serving policies and tokens', async () => {
    const huge = `path "secret/*" {\n  capabilities = ["read"]\n  comment = "${'x'.repeat(2 * 1024 * 1024)}"\n}\n`;
    const refused = await call(t.url, 'PUT', 'sys/policies/acl/huge', { token: root, body: { policy: huge } });
    expect(refused.status).toBe(400);
    expect(refused.json.errors[0]).toMatch(/^policy: /);
    expect((await call(t.url, 'GET', 'sys/health')).status).toBe(200);
    const ok = await call(t.url, 'PUT', 'sys/policies/acl/small', { token: root, body: { policy: 'path "secret/*" { capabilities = ["read"] }' } });
    expect(ok.status).toBe(204);
    const created = await call(t.url, 'POST', 'auth/token/create', { token: root, body: { policies: ['default'] } });
    const token = created.json.auth.client_token as string;
    expect((await call(t.url, 'GET', 'auth/token/lookup-self', { token })).status).toBe(200);
  });

  it('answers health while a large policy is being parsed', async () => {
    const writing = call(t.url, 'PUT', 'sys/policies/acl/large', { token: root, body: { policy: numbersPolicy(31 * 1024) } });
    expect((await call(t.url, 'GET', 'sys/health')).status).toBe(200);
    // Parsed, then refused for its unknown key "x".
    expect((await writing).status).toBe(400);
  });

  it('refuses a NUL byte or a lone surrogate in a mount path with a 400 naming the field', async () => {
    const nul = await call(t.url, 'POST', 'sys/mounts/a%00b', { token: root, body: { type: 'kv' } });
    expect(nul.status).toBe(400);
    expect(nul.json.errors[0]).toMatch(/"path"/);
    const surrogate = await call(t.url, 'POST', 'sys/remount', { token: root, raw: '{"from": "secret", "to": "a\\ud800"}' });
    expect(surrogate.status).toBe(400);
    expect(surrogate.json.errors[0]).toMatch(/"to"/);
    const mounts = await call(t.url, 'GET', 'sys/mounts', { token: root });
    expect(Object.keys(mounts.json.data)).toContain('secret/');
  });
});
