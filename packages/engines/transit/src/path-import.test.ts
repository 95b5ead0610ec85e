import { createCipheriv, createDecipheriv, createPublicKey, randomBytes } from 'node:crypto';
import { getJson } from '@strongroom/core';
import { aesKeyWrapPad, rsaOaepEncrypt } from './crypto';
import type { StoredKeyPolicy } from './key-policy';
import { WRAPPING_KEY_STORAGE_KEY } from './path-import';
import { keyPairs, pkcs8, seedWrappingKey, spkiPem, wrapped, wrappingPublicKey } from './test-support/import-support';
import { b64, badRequest, data, decrypt, encrypt, failure, transitRig, type TransitRig } from './test-support/transit-rig';

async function rig(): Promise<TransitRig> {
  const r = transitRig();
  await seedWrappingKey(r.storage);
  return r;
}

async function stored(r: TransitRig, name: string): Promise<StoredKeyPolicy> {
  const s = await getJson<StoredKeyPolicy>(r.storage, `policy/${name}`);
  if (!s) throw new Error(`no stored key ${name}`);
  return s;
}

/** Vault's AEAD ciphertext layout, made outside the engine: nonce ‖ ciphertext ‖ tag. */
function aesGcmOutside(key: Buffer, plaintext: string): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv(key.length === 16 ? 'aes-128-gcm' : 'aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return `vault:v1:${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64')}`;
}

function aesGcmOpenOutside(key: Buffer, ciphertext: string): string {
  const raw = Buffer.from(ciphertext.split(':')[2] ?? '', 'base64');
  const decipher = createDecipheriv(key.length === 16 ? 'aes-128-gcm' : 'aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(raw.length - 16));
  return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString('utf8');
}

describe('wrapping_key', () => {
  it('is a 4096-bit RSA public key, made once per mount on first read and kept', async () => {
    const r = transitRig();
    const reads = await Promise.all([1, 2, 3].map(() => r.h.request('read', 'wrapping_key')));
    const pems = reads.map((resp) => String(data(resp)['public_key']));
    expect(new Set(pems).size).toBe(1);
    expect(pems[0]).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+-----END PUBLIC KEY-----\n$/);
    const key = createPublicKey(pems[0]!);
    expect(key.asymmetricKeyType).toBe('rsa');
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(4096);
    // Concurrent first reads stored one key, not three.
    expect(r.storage.puts).toBe(1);
    expect(String(data(await r.h.request('read', 'wrapping_key'))['public_key'])).toBe(pems[0]);
    expect(await getJson(r.storage, WRAPPING_KEY_STORAGE_KEY)).not.toBeNull();
    // It is not one of the mount's named keys.
    await r.h.request('write', 'keys/other');
    expect(data(await r.h.request('list', 'keys/'))['keys']).toEqual(['other']);
  });
});

describe('keys/:name/import', () => {
  it('imports an AES-256 key: ciphertext made outside decrypts, and ours opens outside', async () => {
    const r = await rig();
    const key = randomBytes(32);
    const resp = data(await r.h.request('write', 'keys/aes/import', { type: 'aes256-gcm96', ciphertext: await wrapped(r.h, key) }));
    expect(resp).toMatchObject({ name: 'aes', type: 'aes256-gcm96', imported_key: true, imported_key_allow_rotation: false, latest_version: 1 });
    expect(await decrypt(r.h, 'aes', aesGcmOutside(key, 'from outside'))).toBe('from outside');
    expect(aesGcmOpenOutside(key, await encrypt(r.h, 'aes', 'from inside'))).toBe('from inside');
    const s = await stored(r, 'aes');
    expect(s.versions['1']?.imported).toBe(true);
    expect(Buffer.from(s.versions['1']?.hmac_key ?? '', 'base64')).toHaveLength(32);
  });

  it('imports aes128-gcm96 and chacha20-poly1305 keys of their exact sizes', async () => {
    const r = await rig();
    const k16 = randomBytes(16);
    await r.h.request('write', 'keys/a128/import', { type: 'aes128-gcm96', ciphertext: await wrapped(r.h, k16) });
    expect(await decrypt(r.h, 'a128', aesGcmOutside(k16, 'short key'))).toBe('short key');
    await r.h.request('write', 'keys/cc/import', { type: 'chacha20-poly1305', ciphertext: await wrapped(r.h, randomBytes(32)) });
    expect(await decrypt(r.h, 'cc', await encrypt(r.h, 'cc', 'x'))).toBe('x');
  });

  it('imports an hmac key of 32 to 512 bytes and reports its size', async () => {
    const r = await rig();
    const key = randomBytes(64);
    const resp = data(await r.h.request('write', 'keys/h/import', { type: 'hmac', ciphertext: await wrapped(r.h, key), exportable: true }));
    expect(resp).toMatchObject({ type: 'hmac', key_size: 64, imported_key: true });
    const exported = data(await r.h.request('read', 'export/hmac-key/h/1'));
    expect(exported['keys']).toEqual({ 1: key.toString('base64') });
  });

  it.each(Object.keys(keyPairs) as (keyof typeof keyPairs)[])('imports a %s private key as PKCS#8 and shows its public key', async (type) => {
    const r = await rig();
    const { privateKey, publicKey } = keyPairs[type]();
    const resp = data(await r.h.request('write', `keys/k/import`, { type, ciphertext: await wrapped(r.h, pkcs8(privateKey)) }));
    const shown = (resp['keys'] as Record<string, { public_key: string }>)['1']?.public_key ?? '';
    const expected = type === 'ed25519'
      ? Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('base64')
      : spkiPem(publicKey);
    expect(shown).toBe(expected);
    expect((await stored(r, 'k')).versions['1']?.private_key).toBeDefined();
  });

  it('takes every hash_function for the RSA-OAEP step, case-insensitively', async () => {
    const r = await rig();
    for (const hash of ['SHA1', 'SHA224', 'SHA256', 'SHA384', 'SHA512'] as const) {
      const name = `k-${hash.toLowerCase()}`;
      await r.h.request('write', `keys/${name}/import`, { type: 'aes256-gcm96', hash_function: hash.toLowerCase(), ciphertext: await wrapped(r.h, randomBytes(32), hash) });
    }
    expect(data(await r.h.request('list', 'keys/'))['keys']).toHaveLength(5);
  });

  it('imports a public key alone: the key can verify and encrypt but holds no private key', async () => {
    const r = await rig();
    const { publicKey } = keyPairs['rsa-2048']();
    const resp = data(await r.h.request('write', 'keys/pub/import', { type: 'rsa-2048', public_key: spkiPem(publicKey) }));
    expect((resp['keys'] as Record<string, { public_key: string }>)['1']?.public_key).toBe(spkiPem(publicKey));
    const s = await stored(r, 'pub');
    expect(s.versions['1']?.private_key).toBeUndefined();
    expect(s.versions['1']?.imported).toBe(true);
  });

  it('keeps the creation options: exportable, allow_plaintext_backup, allow_rotation, auto_rotate_period, derived', async () => {
    const r = await rig();
    const resp = data(await r.h.request('write', 'keys/opts/import', {
      type: 'aes256-gcm96', ciphertext: await wrapped(r.h, randomBytes(32)), exportable: true, allow_plaintext_backup: true,
      allow_rotation: true, auto_rotate_period: '24h', derived: true, context: b64('ctx'),
    }));
    expect(resp).toMatchObject({
      exportable: true, allow_plaintext_backup: true, imported_key_allow_rotation: true, auto_rotate_period: 86400, derived: true, kdf: 'hkdf_sha256',
    });
    const ct = await encrypt(r.h, 'opts', 'derived', { context: b64('user-1') });
    expect(await decrypt(r.h, 'opts', ct, { context: b64('user-1') })).toBe('derived');
    await failure(decrypt(r.h, 'opts', ct, { context: b64('user-2') }), 400);
  });

  it('refuses to import over an existing key, generated or imported', async () => {
    const r = await rig();
    await r.h.request('write', 'keys/gen');
    const ciphertext = await wrapped(r.h, randomBytes(32));
    const err = await failure(r.h.request('write', 'keys/gen/import', { type: 'aes256-gcm96', ciphertext }), 400);
    expect(err.message).toContain('already exists');
    expect(err.message).toContain('import_version');
    await r.h.request('write', 'keys/imp/import', { type: 'aes256-gcm96', ciphertext });
    await failure(r.h.request('write', 'keys/imp/import', { type: 'aes256-gcm96', ciphertext }), 400);
  });

  it('lets only one of two concurrent imports of the same name create the key', async () => {
    const r = await rig();
    const [a, b] = [randomBytes(32), randomBytes(32)];
    const [wa, wb] = [await wrapped(r.h, a), await wrapped(r.h, b)];
    const results = await Promise.allSettled([
      r.h.request('write', 'keys/race/import', { type: 'aes256-gcm96', ciphertext: wa }),
      r.h.request('write', 'keys/race/import', { type: 'aes256-gcm96', ciphertext: wb }),
    ]);
    expect(results.map((x) => x.status).sort()).toEqual(['fulfilled', 'rejected']);
    const winner = results[0]?.status === 'fulfilled' ? a : b;
    expect((await stored(r, 'race')).versions['1']?.key).toBe(winner.toString('base64'));
  });

  it('uses ciphertext and ignores public_key, with a warning, when both are given', async () => {
    const r = await rig();
    const { privateKey, publicKey } = keyPairs['ecdsa-p256']();
    const other = keyPairs['ecdsa-p256']();
    const resp = await r.h.request('write', 'keys/both/import', { type: 'ecdsa-p256', ciphertext: await wrapped(r.h, pkcs8(privateKey)), public_key: spkiPem(other.publicKey) });
    expect(resp?.warnings).toEqual(['"public_key" was ignored because "ciphertext" was given']);
    expect((data(resp)['keys'] as Record<string, { public_key: string }>)['1']?.public_key).toBe(spkiPem(publicKey));
  });

  describe('refusals name the field', () => {
    let r: TransitRig;
    let aes: string;
    beforeAll(async () => {
      r = await rig();
      aes = await wrapped(r.h, randomBytes(32));
    });

    it('type: required, known, not managed_key', async () => {
      await badRequest(r.h.request('write', 'keys/x/import', { ciphertext: aes }), 'type');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes512', ciphertext: aes }), 'type');
      const msg = await badRequest(r.h.request('write', 'keys/x/import', { type: 'managed_key', ciphertext: aes }), 'type');
      expect(msg).toContain('managed');
    });

    it('ciphertext: required unless public_key, base64, long enough, wrapped with this mount\'s key and hash', async () => {
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96' }), 'ciphertext');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', ciphertext: 'not base64!' }), 'ciphertext');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', ciphertext: b64(randomBytes(512)) }), 'ciphertext');
      // Wrapped with SHA1 but declared (by default) as SHA256.
      const sha1 = await wrapped(r.h, randomBytes(32), 'SHA1');
      const msg = await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', ciphertext: sha1 }), 'ciphertext');
      expect(msg).toContain('hash_function');
      // Right RSA part, tampered key wrap.
      const bad = Buffer.from(aes, 'base64');
      bad[bad.length - 1]! ^= 1;
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', ciphertext: bad.toString('base64') }), 'ciphertext');
      // An ephemeral key that is not 256 bits.
      const pub = await wrappingPublicKey(r.h);
      const short = randomBytes(16);
      const blob = Buffer.concat([rsaOaepEncrypt(pub, short), aesKeyWrapPad(short, randomBytes(32))]);
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', ciphertext: blob.toString('base64') }), 'ciphertext');
      expect(data(await r.h.request('list', 'keys/'))['keys']).toEqual([]);
    });

    it('hash_function: one of SHA1..SHA512', async () => {
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', ciphertext: aes, hash_function: 'MD5' }), 'hash_function');
    });

    it('type against the wrapped material: size of symmetric keys, kind of private keys', async () => {
      const m1 = await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes128-gcm96', ciphertext: aes }), 'type');
      expect(m1).toContain('"ciphertext"');
      expect(m1).toContain('32 bytes');
      const rsa = keyPairs['rsa-2048']();
      const m2 = await badRequest(r.h.request('write', 'keys/x/import', { type: 'ecdsa-p256', ciphertext: await wrapped(r.h, pkcs8(rsa.privateKey)) }), 'type');
      expect(m2).toContain('"ciphertext"');
      expect(m2).toContain('RSA');
      const p384 = keyPairs['ecdsa-p384']();
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'ecdsa-p256', ciphertext: await wrapped(r.h, pkcs8(p384.privateKey)) }), 'type');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'rsa-3072', ciphertext: await wrapped(r.h, pkcs8(rsa.privateKey)) }), 'type');
      // Raw AES bytes are no PKCS#8 key.
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'ed25519', ciphertext: aes }), 'ciphertext');
    });

    it('public_key: only for asymmetric types, PEM of the named type, not for derived ed25519', async () => {
      const ec = keyPairs['ecdsa-p256']();
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', public_key: spkiPem(ec.publicKey) }), 'public_key');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'ecdsa-p256', public_key: 'hello' }), 'public_key');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'rsa-2048', public_key: spkiPem(ec.publicKey) }), 'type');
      const ed = keyPairs.ed25519();
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'ed25519', derived: true, context: b64('c'), public_key: spkiPem(ed.publicKey) }), 'public_key');
    });

    it('derived, context, convergent_encryption, auto_rotate_period', async () => {
      const ec = keyPairs['ecdsa-p256']();
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'ecdsa-p256', derived: true, context: b64('c'), ciphertext: await wrapped(r.h, pkcs8(ec.privateKey)) }), 'derived');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', derived: true, ciphertext: aes }), 'context');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', derived: true, context: '%%', ciphertext: aes }), 'context');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', derived: true, context: b64('c'), convergent_encryption: true, ciphertext: aes }), 'convergent_encryption');
      const m = await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', auto_rotate_period: '2h', ciphertext: aes }), 'auto_rotate_period');
      expect(m).toContain('allow_rotation');
      await badRequest(r.h.request('write', 'keys/x/import', { type: 'aes256-gcm96', allow_rotation: true, auto_rotate_period: '10m', ciphertext: aes }), 'auto_rotate_period');
    });
  });
});

describe('rotating imported keys', () => {
  it('is refused without allow_rotation and allowed with it', async () => {
    const r = await rig();
    await r.h.request('write', 'keys/fixed/import', { type: 'aes256-gcm96', ciphertext: await wrapped(r.h, randomBytes(32)) });
    const err = await failure(r.h.request('write', 'keys/fixed/rotate'), 400);
    expect(err.message).toContain('allow_rotation');
    await r.h.request('write', 'keys/free/import', { type: 'aes256-gcm96', allow_rotation: true, ciphertext: await wrapped(r.h, randomBytes(32)) });
    expect(data(await r.h.request('write', 'keys/free/rotate'))['latest_version']).toBe(2);
  });
});

describe('keys/:name/import_version', () => {
  it('adds a new version to an imported key; old ciphertext still decrypts', async () => {
    const r = await rig();
    const k1 = randomBytes(32);
    const k2 = randomBytes(32);
    await r.h.request('write', 'keys/k/import', { type: 'aes256-gcm96', ciphertext: await wrapped(r.h, k1) });
    const old = await encrypt(r.h, 'k', 'one');
    await r.clock.advance(5000);
    const resp = data(await r.h.request('write', 'keys/k/import_version', { ciphertext: await wrapped(r.h, k2) }));
    expect(resp['latest_version']).toBe(2);
    expect(await decrypt(r.h, 'k', old)).toBe('one');
    const fresh = await encrypt(r.h, 'k', 'two');
    expect(fresh.startsWith('vault:v2:')).toBe(true);
    expect(aesGcmOpenOutside(k2, fresh)).toBe('two');
    expect((await stored(r, 'k')).versions['2']?.imported).toBe(true);
  });

  it('is refused for a key this service generated', async () => {
    const r = await rig();
    await r.h.request('write', 'keys/gen');
    const err = await failure(r.h.request('write', 'keys/gen/import_version', { ciphertext: await wrapped(r.h, randomBytes(32)) }), 400);
    expect(err.message).toContain('generated by this service');
  });

  it('is refused once the imported key has been rotated in the service', async () => {
    const r = await rig();
    await r.h.request('write', 'keys/k/import', { type: 'aes256-gcm96', allow_rotation: true, ciphertext: await wrapped(r.h, randomBytes(32)) });
    await r.h.request('write', 'keys/k/rotate');
    const err = await failure(r.h.request('write', 'keys/k/import_version', { ciphertext: await wrapped(r.h, randomBytes(32)) }), 400);
    expect(err.message).toContain('rotated');
  });

  it('is refused for a missing key, and checks material as import does', async () => {
    const r = await rig();
    await failure(r.h.request('write', 'keys/none/import_version', { ciphertext: await wrapped(r.h, randomBytes(32)) }), 400);
    await r.h.request('write', 'keys/k/import', { type: 'aes256-gcm96', ciphertext: await wrapped(r.h, randomBytes(32)) });
    await badRequest(r.h.request('write', 'keys/k/import_version', { ciphertext: await wrapped(r.h, randomBytes(16)) }), 'type');
    await badRequest(r.h.request('write', 'keys/k/import_version', {}), 'ciphertext');
    await badRequest(r.h.request('write', 'keys/k/import_version', { version: 1, ciphertext: await wrapped(r.h, randomBytes(32)) }), 'version');
  });

  it('gives a public-key-only version its matching private key through "version"', async () => {
    const r = await rig();
    const one = keyPairs['ecdsa-p256']();
    const two = keyPairs['ecdsa-p256']();
    await r.h.request('write', 'keys/ec/import', { type: 'ecdsa-p256', public_key: spkiPem(one.publicKey) });
    await r.h.request('write', 'keys/ec/import_version', { public_key: spkiPem(two.publicKey) });
    let s = await stored(r, 'ec');
    expect(s.latest_version).toBe(2);
    expect(s.versions['1']?.private_key).toBeUndefined();

    // The wrong private key for version 1 is refused; the right one fills it in place.
    await badRequest(r.h.request('write', 'keys/ec/import_version', { version: 1, ciphertext: await wrapped(r.h, pkcs8(two.privateKey)) }), 'ciphertext');
    await r.h.request('write', 'keys/ec/import_version', { version: 1, ciphertext: await wrapped(r.h, pkcs8(one.privateKey)) });
    s = await stored(r, 'ec');
    expect(s.latest_version).toBe(2);
    expect(s.versions['1']?.private_key).toBeDefined();
    expect(s.versions['1']?.public_key).toBe(spkiPem(one.publicKey));

    // A version that has its private key cannot be updated; a public key cannot update a version.
    await badRequest(r.h.request('write', 'keys/ec/import_version', { version: 1, ciphertext: await wrapped(r.h, pkcs8(one.privateKey)) }), 'version');
    await badRequest(r.h.request('write', 'keys/ec/import_version', { version: 2, public_key: spkiPem(two.publicKey) }), 'public_key');
    await badRequest(r.h.request('write', 'keys/ec/import_version', { version: 7, ciphertext: await wrapped(r.h, pkcs8(two.privateKey)) }), 'version');
  });

  it('without "version", completes the latest version when the private key matches it, else adds one', async () => {
    const r = await rig();
    const one = keyPairs['ecdsa-p256']();
    const other = keyPairs['ecdsa-p256']();
    await r.h.request('write', 'keys/ec/import', { type: 'ecdsa-p256', public_key: spkiPem(one.publicKey) });
    await r.h.request('write', 'keys/ec/import_version', { ciphertext: await wrapped(r.h, pkcs8(one.privateKey)) });
    let s = await stored(r, 'ec');
    expect(s.latest_version).toBe(1);
    expect(s.versions['1']?.private_key).toBeDefined();
    await r.h.request('write', 'keys/ec/import_version', { ciphertext: await wrapped(r.h, pkcs8(other.privateKey)) });
    s = await stored(r, 'ec');
    expect(s.latest_version).toBe(2);
  });

  it('updates the key size of an hmac key', async () => {
    const r = await rig();
    await r.h.request('write', 'keys/h/import', { type: 'hmac', ciphertext: await wrapped(r.h, randomBytes(32)) });
    const resp = data(await r.h.request('write', 'keys/h/import_version', { ciphertext: await wrapped(r.h, randomBytes(48)) }));
    expect(resp).toMatchObject({ key_size: 48, latest_version: 2 });
  });
});
