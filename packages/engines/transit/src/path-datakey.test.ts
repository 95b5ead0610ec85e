import { b64, badRequest, data, decrypt, failure, transitRig } from './test-support/transit-rig';

describe('datakey/:type/:name', () => {
  it('plaintext/ returns the key and its ciphertext; decrypt gives the same key back', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const resp = data(await h.request('write', 'datakey/plaintext/k'));
    expect(Object.keys(resp).sort()).toEqual(['ciphertext', 'key_version', 'plaintext']);
    expect(Buffer.from(String(resp['plaintext']), 'base64')).toHaveLength(32);
    const decrypted = data(await h.request('write', 'decrypt/k', { ciphertext: resp['ciphertext'] }))['plaintext'];
    expect(decrypted).toBe(resp['plaintext']);
  });

  it('wrapped/ returns only the ciphertext', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const resp = data(await h.request('write', 'datakey/wrapped/k', { bits: 512 }));
    expect(Object.keys(resp).sort()).toEqual(['ciphertext', 'key_version']);
    const key = Buffer.from(String(data(await h.request('write', 'decrypt/k', { ciphertext: resp['ciphertext'] }))['plaintext']), 'base64');
    expect(key).toHaveLength(64);
  });

  it.each([[128, 16], [256, 32], [512, 64]])('makes %i-bit keys', async (bits, bytes) => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const resp = data(await h.request('write', 'datakey/plaintext/k', { bits }));
    expect(Buffer.from(String(resp['plaintext']), 'base64')).toHaveLength(bytes);
  });

  it('refuses other sizes and other path types', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    await badRequest(h.request('write', 'datakey/plaintext/k', { bits: 192 }), 'bits');
    await badRequest(h.request('write', 'datakey/plaintext/k', { bits: 'many' }), 'bits');
    await badRequest(h.request('write', 'datakey/secret/k'), 'type');
  });

  it('uses the derived key of the given context', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/d', { derived: true });
    await badRequest(h.request('write', 'datakey/wrapped/d'), 'context');
    const resp = data(await h.request('write', 'datakey/plaintext/d', { context: b64('svc') }));
    const plain = await decrypt(h, 'd', String(resp['ciphertext']), { context: b64('svc') });
    expect(Buffer.from(plain, 'utf8')).toBeDefined();
    await failure(decrypt(h, 'd', String(resp['ciphertext']), { context: b64('other') }), 400);
  });

  it('needs an existing key that can encrypt', async () => {
    const { h } = transitRig();
    await failure(h.request('write', 'datakey/plaintext/nope'), 400);
    await h.request('write', 'keys/e', { type: 'ed25519' });
    await failure(h.request('write', 'datakey/plaintext/e'), 400);
  });

  it('works with RSA keys', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/r', { type: 'rsa-2048' });
    const resp = data(await h.request('write', 'datakey/plaintext/r'));
    expect(data(await h.request('write', 'decrypt/r', { ciphertext: resp['ciphertext'] }))['plaintext']).toBe(resp['plaintext']);
  });
});
