import { b64, badRequest, batchResults, data, decrypt, encrypt, failure, transitRig } from './test-support/transit-rig';

async function keyed() {
  const r = transitRig();
  await r.h.request('write', 'keys/k');
  return r;
}

describe('decrypt/:name: ciphertext format errors (Vault\'s wording)', () => {
  it.each([
    ['no prefix', 'v1:abcd', 'invalid ciphertext: no prefix'],
    ['another prefix', 'other:v1:abcd', 'invalid ciphertext: no prefix'],
    ['missing version field', 'vault:abcd', 'invalid ciphertext: wrong number of fields'],
    ['bad version', 'vault:vx:abcd', 'invalid ciphertext: version number could not be decoded'],
    ['bad base64', 'vault:v1:!!!!', 'invalid ciphertext: could not decode base64'],
    ['version too new', 'vault:v2:AAAA', 'invalid ciphertext: version is too new'],
  ])('%s', async (_label, ciphertext, message) => {
    const { h } = await keyed();
    const err = await failure(h.request('write', 'decrypt/k', { ciphertext }), 400);
    expect(err.message).toBe(message);
  });

  it('refuses versions below min_decryption_version as too old', async () => {
    const { h } = await keyed();
    const v1 = await encrypt(h, 'k', 'x');
    await h.request('write', 'keys/k/rotate');
    await h.request('write', 'keys/k/config', { min_decryption_version: 2 });
    const err = await failure(decrypt(h, 'k', v1), 400);
    expect(err.message).toBe('ciphertext or signature version is disallowed by policy (too old)');
  });

  it('reads v0 as version 1, as old ciphertext says', async () => {
    const { h } = await keyed();
    const v1 = await encrypt(h, 'k', 'legacy');
    expect(await decrypt(h, 'k', v1.replace('vault:v1:', 'vault:v0:'))).toBe('legacy');
  });

  it('fails authentication on tampered or truncated ciphertext', async () => {
    const { h } = await keyed();
    const ct = await encrypt(h, 'k', 'integrity');
    const raw = Buffer.from(ct.slice('vault:v1:'.length), 'base64');
    raw[raw.length - 1]! ^= 1;
    const err = await failure(decrypt(h, 'k', `vault:v1:${raw.toString('base64')}`), 400);
    expect(err.message).toMatch(/message authentication failed/);
    await failure(decrypt(h, 'k', 'vault:v1:AAAA'), 400);
  });

  it('needs the ciphertext and an existing key', async () => {
    const { h } = await keyed();
    await badRequest(h.request('write', 'decrypt/k', {}), 'ciphertext');
    const ct = await encrypt(h, 'k', 'x');
    const err = await failure(h.request('write', 'decrypt/missing', { ciphertext: ct }), 400);
    expect(err.message).toContain('encryption key not found');
    await badRequest(h.request('write', 'decrypt/k', { ciphertext: ct, context: '%%' }), 'context');
  });

  it('never creates a key, whatever the operation', async () => {
    const { h } = transitRig();
    await failure(h.request('write', 'decrypt/missing', { ciphertext: 'vault:v1:AAAA' }), 400);
    expect(h.lastOperation).toBe('update');
    expect(await h.request('read', 'keys/missing')).toBeNull();
  });

  it('refuses keys that cannot decrypt', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/e', { type: 'ecdsa-p256' });
    await failure(h.request('write', 'decrypt/e', { ciphertext: 'vault:v1:AAAA' }), 400);
  });
});

describe('decrypt/:name: batch', () => {
  it('keeps order, echoes references and marks failed items', async () => {
    const { h } = await keyed();
    const a = await encrypt(h, 'k', 'a');
    const b = await encrypt(h, 'k', 'b');
    const resp = await h.request('write', 'decrypt/k', {
      ciphertext: 'ignored',
      batch_input: [{ ciphertext: b, reference: 'second' }, { ciphertext: 'junk', reference: 'bad' }, { ciphertext: a }],
    });
    expect(resp?.status).toBe(400);
    const results = batchResults(resp);
    expect(results[0]).toEqual({ plaintext: b64('b'), reference: 'second' });
    expect(results[1]).toEqual({ error: 'invalid ciphertext: no prefix', reference: 'bad' });
    expect(results[2]).toEqual({ plaintext: b64('a'), reference: '' });
  });

  it('uses partial_failure_response_code only when something succeeded', async () => {
    const { h } = await keyed();
    const a = await encrypt(h, 'k', 'a');
    expect((await h.request('write', 'decrypt/k', {
      partial_failure_response_code: 299, batch_input: [{ ciphertext: a }, { ciphertext: 'x' }],
    }))?.status).toBe(299);
    expect((await h.request('write', 'decrypt/k', {
      partial_failure_response_code: 299, batch_input: [{ ciphertext: 'x' }, { ciphertext: '' }],
    }))?.status).toBe(400);
    expect((await h.request('write', 'decrypt/k', { batch_input: [{ ciphertext: a }] }))?.status).toBeUndefined();
  });

  it('decrypts derived items each with its own context', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/d', { derived: true });
    const a = await encrypt(h, 'd', 'a', { context: b64('one') });
    const b = await encrypt(h, 'd', 'b', { context: b64('two') });
    const results = batchResults(await h.request('write', 'decrypt/d', {
      batch_input: [{ ciphertext: a, context: b64('one') }, { ciphertext: b, context: b64('two') }, { ciphertext: b, context: b64('one') }],
    }));
    expect(results.map((r) => r.plaintext)).toEqual([b64('a'), b64('b'), undefined]);
    expect(results[2]?.error).toMatch(/authentication failed/);
  });

  it('returns plaintext as base64 of the exact bytes', async () => {
    const { h } = await keyed();
    const bytes = Buffer.from([0, 255, 1, 254, 128]);
    const ct = String(data(await h.request('write', 'encrypt/k', { plaintext: bytes.toString('base64') }))['ciphertext']);
    expect(Buffer.from(String(data(await h.request('write', 'decrypt/k', { ciphertext: ct }))['plaintext']), 'base64')).toEqual(bytes);
  });
});
