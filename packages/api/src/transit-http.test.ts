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

  it('answers a large batch with exactly the bytes JSON.stringify gives for its results, failures and references included', async () => {
    await call(t.url, 'POST', 'transit/keys/bulk', { token: root, body: {} });
    const plaintext = Buffer.from('x'.repeat(1024)).toString('base64');
    const batch_input = Array.from({ length: 200 }, (_, i) => (
      i % 50 === 7 ? { plaintext: 'not base64!', reference: `bad "${i}"` }
        : i % 50 === 9 ? { plaintext, reference: `caf\u00e9 \\ ${i}\n` }
          : i % 50 === 11 ? { plaintext, reference: i }
            : { plaintext }
    ));
    const got = await call(t.url, 'POST', 'transit/encrypt/bulk', { token: root, body: { batch_input, partial_failure_response_code: 207 } });
    expect(got.status).toBe(207);
    expect(got.text).toBe(JSON.stringify(got.json));
    expect(Number(got.headers.get('content-length'))).toBe(Buffer.byteLength(got.text));
    expect(got.headers.get('content-type')).toBe('application/json');
    expect(got.headers.get('cache-control')).toBe('no-store');
    const results = got.json.data.batch_results as Array<Record<string, unknown>>;
    expect(results).toHaveLength(200);
    expect(results[7]).toEqual({ error: 'invalid value for "plaintext": expected standard base64', reference: 'bad "7"' });
    expect(results[9]).toEqual({ ciphertext: expect.stringMatching(/^vault:v1:/), key_version: 1, reference: 'caf\u00e9 \\ 9\n' });
    expect(results[11]).toEqual({ ciphertext: expect.stringMatching(/^vault:v1:/), key_version: 1, reference: '11' });
    expect(results[0]).toEqual({ ciphertext: expect.stringMatching(/^vault:v1:/), key_version: 1, reference: '' });
    const dec = await call(t.url, 'POST', 'transit/decrypt/bulk', { token: root, body: { ciphertext: results[0]?.['ciphertext'] } });
    expect(dec.json.data.plaintext).toBe(plaintext);
  });

  it.each([
    ['only ASCII', 'ref-ascii'],
    ['a character outside the BMP', 'key \u{1F511}'],
  ])('answers a large batch whose references hold %s with the bytes JSON.stringify gives', async (_what, reference) => {
    await call(t.url, 'POST', 'transit/keys/bulk-refs', { token: root, body: {} });
    const plaintext = Buffer.from('y'.repeat(1024)).toString('base64');
    const batch_input = Array.from({ length: 300 }, (_, i) => ({ plaintext, reference: i === 299 ? reference : `r${i}` }));
    const got = await call(t.url, 'POST', 'transit/encrypt/bulk-refs', { token: root, body: { batch_input } });
    expect(got.status).toBe(200);
    expect(got.text).toBe(JSON.stringify(got.json));
    expect(Number(got.headers.get('content-length'))).toBe(Buffer.byteLength(got.text));
    expect(got.json.data.batch_results[299].reference).toBe(reference);
  });

  it('wraps a large batch as any reply, its results whole after unwrapping', async () => {
    const plaintext = Buffer.from('y').toString('base64');
    const body = { batch_input: Array.from({ length: 100 }, () => ({ plaintext })) };
    const wrapped = await call(t.url, 'POST', 'transit/encrypt/bulk', { token: root, body, headers: { 'x-vault-wrap-ttl': '60' } });
    expect(wrapped.status).toBe(200);
    expect(wrapped.json.data).toBeNull();
    const unwrapped = await call(t.url, 'POST', 'sys/wrapping/unwrap', { token: wrapped.json.wrap_info.token as string });
    expect(unwrapped.json.data.batch_results).toHaveLength(100);
    expect(unwrapped.text).toBe(JSON.stringify(unwrapped.json));
  });
});

