import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { getJson } from '@strongroom/core';
import type { StoredKeyPolicy } from './key-policy';
import { keyPairs, pkcs8, seedWrappingKey, spkiPem, wrapped } from './test-support/import-support';
import { badRequest, data, failure, transitRig } from './test-support/transit-rig';

async function exported(h: ReturnType<typeof transitRig>['h'], path: string): Promise<Record<string, string>> {
  const resp = data(await h.request('read', path));
  return resp['keys'] as Record<string, string>;
}

describe('export/:type/:name(/:version)', () => {
  it('refuses private material of a key that is not exportable, with Vault\'s message, but gives public keys', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/aes');
    await h.request('write', 'keys/ec', { type: 'ecdsa-p256' });
    for (const path of ['export/encryption-key/aes', 'export/hmac-key/aes', 'export/signing-key/ec', 'export/hmac-key/ec/1']) {
      const err = await failure(h.request('read', path), 400);
      expect(err.message).toBe('private key material is not exportable');
    }
    const keys = await exported(h, 'export/public-key/ec');
    expect(keys['1']).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+-----END PUBLIC KEY-----$/);
  });

  it('answers nothing (404) for a missing key and 400 for an unknown export type', async () => {
    const { h } = transitRig();
    expect(await h.request('read', 'export/encryption-key/nope')).toBeNull();
    await h.request('write', 'keys/aes', { exportable: true });
    const err = await failure(h.request('read', 'export/private-key/aes'), 400);
    expect(err.message).toContain('invalid export type');
  });

  it('exports every version, one version, latest, or vN of a symmetric key as base64', async () => {
    const r = transitRig();
    await r.h.request('write', 'keys/aes', { exportable: true });
    await r.h.request('write', 'keys/aes/rotate');
    await r.h.request('write', 'keys/aes/rotate');
    const stored = await getJson<StoredKeyPolicy>(r.storage, 'policy/aes');
    const raw = (n: number) => stored?.versions[String(n)]?.key;
    const all = data(await r.h.request('read', 'export/encryption-key/aes'));
    expect(all).toEqual({ name: 'aes', type: 'aes256-gcm96', keys: { 1: raw(1), 2: raw(2), 3: raw(3) } });
    expect(await exported(r.h, 'export/encryption-key/aes/2')).toEqual({ 2: raw(2) });
    expect(await exported(r.h, 'export/encryption-key/aes/v2')).toEqual({ 2: raw(2) });
    expect(await exported(r.h, 'export/encryption-key/aes/latest')).toEqual({ 3: raw(3) });
    expect(Buffer.from(raw(1) ?? '', 'base64')).toHaveLength(32);
    const hmac = await exported(r.h, 'export/hmac-key/aes');
    expect(hmac['1']).toBe(stored?.versions['1']?.hmac_key);
    expect(Buffer.from(hmac['3'] ?? '', 'base64')).toHaveLength(32);
  });

  it('leaves out versions below min_decryption_version and refuses to export them or versions that do not exist', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/aes', { exportable: true });
    await h.request('write', 'keys/aes/rotate');
    await h.request('write', 'keys/aes/rotate');
    await h.request('write', 'keys/aes/config', { min_decryption_version: 2 });
    expect(Object.keys(await exported(h, 'export/encryption-key/aes'))).toEqual(['2', '3']);
    await badRequest(h.request('read', 'export/encryption-key/aes/1'), 'version');
    await badRequest(h.request('read', 'export/encryption-key/aes/4'), 'version');
    await badRequest(h.request('read', 'export/encryption-key/aes/first'), 'version');
  });

  it('refuses an export type the key type cannot answer', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/aes', { exportable: true });
    await h.request('write', 'keys/ec', { type: 'ecdsa-p256', exportable: true });
    await h.request('write', 'keys/mac', { type: 'hmac', exportable: true });
    await badRequest(h.request('read', 'export/encryption-key/ec'), 'type');
    await badRequest(h.request('read', 'export/signing-key/aes'), 'type');
    await badRequest(h.request('read', 'export/public-key/aes'), 'type');
    await badRequest(h.request('read', 'export/certificate-chain/aes'), 'type');
    await badRequest(h.request('read', 'export/encryption-key/mac'), 'type');
  });

  it('exports asymmetric keys in Vault\'s formats: SEC1 EC, PKCS#1 RSA, raw ed25519', async () => {
    const { h } = transitRig();
    for (const type of ['ecdsa-p384', 'rsa-2048', 'ed25519']) await h.request('write', `keys/${type}`, { type, exportable: true });

    const ec = (await exported(h, 'export/signing-key/ecdsa-p384'))['1'] ?? '';
    expect(ec).toMatch(/^-----BEGIN EC PRIVATE KEY-----\n[\s\S]+-----END EC PRIVATE KEY-----$/);
    const ecPub = (await exported(h, 'export/public-key/ecdsa-p384'))['1'] ?? '';
    expect(spkiPem(createPrivateKey(ec)).trim()).toBe(ecPub);

    const rsa = (await exported(h, 'export/encryption-key/rsa-2048'))['1'] ?? '';
    expect(rsa).toMatch(/^-----BEGIN RSA PRIVATE KEY-----\n[\s\S]+-----END RSA PRIVATE KEY-----\n$/);
    expect((await exported(h, 'export/signing-key/rsa-2048'))['1']).toBe(rsa);
    const rsaPub = (await exported(h, 'export/public-key/rsa-2048'))['1'] ?? '';
    expect(rsaPub).toBe(spkiPem(createPrivateKey(rsa)));

    const ed = Buffer.from((await exported(h, 'export/signing-key/ed25519'))['1'] ?? '', 'base64');
    expect(ed).toHaveLength(64);
    const edPub = (await exported(h, 'export/public-key/ed25519'))['1'] ?? '';
    expect(Buffer.from(edPub, 'base64').equals(ed.subarray(32))).toBe(true);
  });

  it('exports "" as the private key of a version imported as a public key alone', async () => {
    const r = transitRig();
    await seedWrappingKey(r.storage);
    const one = keyPairs['ecdsa-p256']();
    const two = keyPairs['ecdsa-p256']();
    await r.h.request('write', 'keys/ec/import', { type: 'ecdsa-p256', public_key: spkiPem(one.publicKey), exportable: true });
    await r.h.request('write', 'keys/ec/import_version', { ciphertext: await wrapped(r.h, pkcs8(two.privateKey)) });
    const keys = await exported(r.h, 'export/signing-key/ec');
    expect(keys['1']).toBe('');
    expect(createPublicKey(createPrivateKey(keys['2'] ?? '')).export({ format: 'der', type: 'spki' })
      .equals(two.publicKey.export({ format: 'der', type: 'spki' }))).toBe(true);
    expect((await exported(r.h, 'export/public-key/ec'))['1']).toBe(spkiPem(one.publicKey).trim());
  });

  it('exports an imported symmetric key exactly as it was imported', async () => {
    const r = transitRig();
    await seedWrappingKey(r.storage);
    const key = randomBytes(32);
    await r.h.request('write', 'keys/k/import', { type: 'chacha20-poly1305', ciphertext: await wrapped(r.h, key), exportable: true });
    expect(await exported(r.h, 'export/encryption-key/k/latest')).toEqual({ 1: key.toString('base64') });
  });
});
