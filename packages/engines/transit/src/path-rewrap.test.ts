import { b64, badRequest, batchResults, data, decrypt, encrypt, failure, transitRig } from './test-support/transit-rig';

describe('rewrap/:name', () => {
  it('moves old ciphertext to the latest version without returning plaintext', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const v1 = await encrypt(h, 'k', 'payload');
    await h.request('write', 'keys/k/rotate');
    await h.request('write', 'keys/k/rotate');
    const resp = data(await h.request('write', 'rewrap/k', { ciphertext: v1 }));
    expect(Object.keys(resp).sort()).toEqual(['ciphertext', 'key_version']);
    expect(resp['key_version']).toBe(3);
    expect(String(resp['ciphertext']).startsWith('vault:v3:')).toBe(true);
    expect(await decrypt(h, 'k', String(resp['ciphertext']))).toBe('payload');
    // Old versions can then be retired.
    await h.request('write', 'keys/k/config', { min_decryption_version: 3 });
    expect(await decrypt(h, 'k', String(resp['ciphertext']))).toBe('payload');
  });

  it('rewraps to a chosen version within min_encryption_version', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const v1 = await encrypt(h, 'k', 'x');
    await h.request('write', 'keys/k/rotate');
    await h.request('write', 'keys/k/rotate');
    expect(data(await h.request('write', 'rewrap/k', { ciphertext: v1, key_version: 2 }))['key_version']).toBe(2);
    await h.request('write', 'keys/k/config', { min_encryption_version: 3 });
    await badRequest(h.request('write', 'rewrap/k', { ciphertext: v1, key_version: 2 }), 'key_version');
  });

  it('keeps derived and convergent ciphertext under the same context', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/c', { derived: true, convergent_encryption: true });
    const ctx = { context: b64('ctx') };
    const v1 = await encrypt(h, 'c', 'same', ctx);
    await h.request('write', 'keys/c/rotate');
    const rewrapped = String(data(await h.request('write', 'rewrap/c', { ciphertext: v1, ...ctx }))['ciphertext']);
    expect(rewrapped).toBe(await encrypt(h, 'c', 'same', ctx));
    await badRequest(h.request('write', 'rewrap/c', { ciphertext: v1 }), 'context');
  });

  it('rewraps RSA ciphertext', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    const v1 = await encrypt(h, 'r', 'rsa');
    await h.request('write', 'keys/r/rotate');
    const rewrapped = String(data(await h.request('write', 'rewrap/r', { ciphertext: v1 }))['ciphertext']);
    expect(rewrapped.startsWith('vault:v2:')).toBe(true);
    expect(await decrypt(h, 'r', rewrapped)).toBe('rsa');
  });

  it('batches with order, references and per-item errors', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const a = await encrypt(h, 'k', 'a');
    await h.request('write', 'keys/k/rotate');
    const resp = await h.request('write', 'rewrap/k', {
      partial_failure_response_code: 207,
      batch_input: [{ ciphertext: a, reference: 'x' }, { ciphertext: 'vault:v9:AAAA', reference: 'y' }],
    });
    expect(resp?.status).toBe(207);
    const results = batchResults(resp);
    expect(results[0]).toMatchObject({ key_version: 2, reference: 'x' });
    expect(results[1]).toEqual({ error: 'invalid ciphertext: version is too new', reference: 'y' });
    expect(await decrypt(h, 'k', results[0]?.ciphertext as string)).toBe('a');
  });

  it('needs the ciphertext and an existing key', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await badRequest(h.request('write', 'rewrap/k', {}), 'ciphertext');
    await failure(h.request('write', 'rewrap/nope', { ciphertext: 'vault:v1:AAAA' }), 400);
  });
});
