import { randomBytes } from 'node:crypto';
import { unwrapImport } from './crypto';
import { keyPairs, seedWrappingKey, spkiPem, wrapped } from './test-support/import-support';
import { badRequest, data, decrypt, encrypt, failure, transitRig, type TransitRig } from './test-support/transit-rig';

/** Two mounts; `to`'s wrapping key is imported into `from` as the key "to-wrap" (public only). */
async function mounts(): Promise<{ from: TransitRig; to: TransitRig }> {
  const from = transitRig();
  const to = transitRig();
  await seedWrappingKey(to.storage);
  const wrapPem = String(data(await to.h.request('read', 'wrapping_key'))['public_key']);
  await from.h.request('write', 'keys/to-wrap/import', { type: 'rsa-4096', public_key: wrapPem });
  return { from, to };
}

async function byok(r: TransitRig, path: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  return data(await r.h.request('read', path, extra));
}

describe('byok-export/:destination/:source(/:version)', () => {
  it('moves every version of a key to another mount, which then decrypts what the source encrypted', async () => {
    const { from, to } = await mounts();
    await from.h.request('write', 'keys/app', { exportable: true });
    const v1 = await encrypt(from.h, 'app', 'first');
    await from.h.request('write', 'keys/app/rotate');
    const v2 = await encrypt(from.h, 'app', 'second');

    const resp = await byok(from, 'byok-export/to-wrap/app');
    expect(resp).toMatchObject({ name: 'app', type: 'aes256-gcm96' });
    const keys = resp['keys'] as Record<string, string>;
    expect(Object.keys(keys)).toEqual(['1', '2']);
    await to.h.request('write', 'keys/app/import', { type: 'aes256-gcm96', ciphertext: keys['1'] });
    await to.h.request('write', 'keys/app/import_version', { ciphertext: keys['2'] });
    expect(await decrypt(to.h, 'app', v1)).toBe('first');
    expect(await decrypt(to.h, 'app', v2)).toBe('second');
  });

  it('wraps one version, latest or vN, with the hash asked for', async () => {
    const { from, to } = await mounts();
    await from.h.request('write', 'keys/app', { exportable: true });
    await from.h.request('write', 'keys/app/rotate');
    expect(Object.keys((await byok(from, 'byok-export/to-wrap/app/latest'))['keys'] as object)).toEqual(['2']);
    expect(Object.keys((await byok(from, 'byok-export/to-wrap/app/v1'))['keys'] as object)).toEqual(['1']);
    const blob = ((await byok(from, 'byok-export/to-wrap/app/1', { hash: 'SHA512' }))['keys'] as Record<string, string>)['1'] ?? '';
    const ct = await encrypt(from.h, 'app', 'old', { key_version: 1 });
    await badRequest(to.h.request('write', 'keys/app/import', { type: 'aes256-gcm96', ciphertext: blob }), 'ciphertext');
    await to.h.request('write', 'keys/app/import', { type: 'aes256-gcm96', ciphertext: blob, hash_function: 'SHA512' });
    expect(await decrypt(to.h, 'app', ct)).toBe('old');
    await badRequest(from.h.request('read', 'byok-export/to-wrap/app', { hash: 'MD5' }), 'hash');
  });

  it('moves asymmetric keys as PKCS#8 and hmac keys as raw bytes', async () => {
    const { from, to } = await mounts();
    await from.h.request('write', 'keys/ec', { type: 'ecdsa-p521', exportable: true });
    await from.h.request('write', 'keys/mac', { type: 'hmac', key_size: 40, exportable: true });
    const ecBlob = ((await byok(from, 'byok-export/to-wrap/ec'))['keys'] as Record<string, string>)['1'];
    const imported = data(await to.h.request('write', 'keys/ec/import', { type: 'ecdsa-p521', ciphertext: ecBlob }));
    const original = data(await from.h.request('read', 'keys/ec'));
    expect(imported['keys']).toEqual(original['keys']);
    const macBlob = ((await byok(from, 'byok-export/to-wrap/mac'))['keys'] as Record<string, string>)['1'];
    expect(data(await to.h.request('write', 'keys/mac/import', { type: 'hmac', ciphertext: macBlob }))['key_size']).toBe(40);
  });

  it('can be unwrapped with the destination\'s private key alone', async () => {
    const { from, to } = await mounts();
    const key = randomBytes(32);
    await seedWrappingKey(from.storage);
    await from.h.request('write', 'keys/k/import', { type: 'aes256-gcm96', ciphertext: await wrapped(from.h, key), exportable: true });
    const blob = ((await byok(from, 'byok-export/to-wrap/k'))['keys'] as Record<string, string>)['1'] ?? '';
    const destPrivate = await seedWrappingKey(to.storage);
    expect(unwrapImport(destPrivate, Buffer.from(blob, 'base64')).equals(key)).toBe(true);
  });

  it('gives "" for a version that has no private key to move', async () => {
    const { from } = await mounts();
    const pair = keyPairs['ecdsa-p256']();
    await from.h.request('write', 'keys/pub/import', { type: 'ecdsa-p256', public_key: spkiPem(pair.publicKey), exportable: true });
    expect((await byok(from, 'byok-export/to-wrap/pub'))['keys']).toEqual({ 1: '' });
  });

  it('refuses a source that is not exportable, a missing or non-RSA destination, a missing source', async () => {
    const { from } = await mounts();
    await from.h.request('write', 'keys/secret');
    await from.h.request('write', 'keys/ec', { type: 'ecdsa-p256', exportable: true });
    const err = await failure(from.h.request('read', 'byok-export/to-wrap/secret'), 400);
    expect(err.message).toContain('not exportable');
    await badRequest(from.h.request('read', 'byok-export/nope/ec'), 'destination');
    await badRequest(from.h.request('read', 'byok-export/ec/ec'), 'destination');
    await badRequest(from.h.request('read', 'byok-export/to-wrap/nope'), 'source');
    await badRequest(from.h.request('read', 'byok-export/to-wrap/ec/9'), 'version');
  });
});
