import { call, initAndUnseal, startTestServer, type TestServer } from './test-support/servers';

describe('transit over HTTP', () => {
  let t: TestServer;
  let root: string;
  beforeAll(async () => {
    t = await startTestServer();
    root = await initAndUnseal(t);
    await call(t.url, 'POST', 'sys/mounts/transit', { token: root, body: { type: 'transit' } });
  });
  afterAll(() => t.stop());

  const tokenWith = async (name: string, policy: string) => {
    await call(t.url, 'PUT', `sys/policies/acl/${name}`, { token: root, body: { policy } });
    return (await call(t.url, 'POST', 'auth/token/create', { token: root, body: { policies: [name] } })).json.auth.client_token as string;
  };

  it('encrypts and decrypts with a named key, with Vault\'s ciphertext prefix', async () => {
    await call(t.url, 'POST', 'transit/keys/app', { token: root, body: {} });
    const plaintext = Buffer.from('hello transit').toString('base64');
    const enc = await call(t.url, 'POST', 'transit/encrypt/app', { token: root, body: { plaintext } });
    expect(enc.status).toBe(200);
    expect(enc.json.data.ciphertext).toMatch(/^vault:v1:/);
    const dec = await call(t.url, 'POST', 'transit/decrypt/app', { token: root, body: { ciphertext: enc.json.data.ciphertext } });
    expect(dec.json.data.plaintext).toBe(plaintext);
  });

  it('creates a missing key on encrypt only for callers with the create capability (upsert)', async () => {
    const updateOnly = await tokenWith('enc-update', 'path "transit/encrypt/*" { capabilities = ["update"] }');
    const canCreate = await tokenWith('enc-create', 'path "transit/encrypt/*" { capabilities = ["create", "update"] }');
    const body = { plaintext: Buffer.from('x').toString('base64') };
    expect((await call(t.url, 'POST', 'transit/encrypt/new-key', { token: updateOnly, body })).status).toBe(403);
    expect((await call(t.url, 'GET', 'transit/keys/new-key', { token: root })).status).toBe(404);
    expect((await call(t.url, 'POST', 'transit/encrypt/new-key', { token: canCreate, body })).status).toBe(200);
    expect((await call(t.url, 'GET', 'transit/keys/new-key', { token: root })).json.data.type).toBe('aes256-gcm96');
    // Once it exists, update suffices.
    expect((await call(t.url, 'POST', 'transit/encrypt/new-key', { token: updateOnly, body })).status).toBe(200);
  });
});
