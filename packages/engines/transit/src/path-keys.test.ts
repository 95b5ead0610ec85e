import { createPublicKey } from 'node:crypto';
import { T0_SECONDS, badRequest, data, decrypt, encrypt, failure, transitRig } from './test-support/transit-rig';

describe('keys/:name: create and read', () => {
  it('creates an aes256-gcm96 key at version 1 and reads it back in Vault\'s shape', async () => {
    const { h } = transitRig();
    const created = await h.request('write', 'keys/app');
    const expected = {
      name: 'app',
      type: 'aes256-gcm96',
      derived: false,
      deletion_allowed: false,
      exportable: false,
      allow_plaintext_backup: false,
      min_available_version: 0,
      min_decryption_version: 1,
      min_encryption_version: 0,
      latest_version: 1,
      supports_encryption: true,
      supports_decryption: true,
      supports_signing: false,
      supports_derivation: true,
      auto_rotate_period: 0,
      imported_key: false,
      convergent_encryption: false,
      keys: { 1: T0_SECONDS },
    };
    expect(created).toEqual({ data: expected });
    expect(h.lastOperation).toBe('update');
    expect(await h.request('read', 'keys/app')).toEqual({ data: expected });
  });

  it.each([
    ['aes128-gcm96', { supports_encryption: true, supports_decryption: true, supports_signing: false, supports_derivation: true }],
    ['aes256-gcm96', { supports_encryption: true, supports_decryption: true, supports_signing: false, supports_derivation: true }],
    ['chacha20-poly1305', { supports_encryption: true, supports_decryption: true, supports_signing: false, supports_derivation: true }],
    ['ed25519', { supports_encryption: false, supports_decryption: false, supports_signing: true, supports_derivation: true }],
    ['ecdsa-p256', { supports_encryption: false, supports_decryption: false, supports_signing: true, supports_derivation: false }],
    ['ecdsa-p384', { supports_encryption: false, supports_decryption: false, supports_signing: true, supports_derivation: false }],
    ['ecdsa-p521', { supports_encryption: false, supports_decryption: false, supports_signing: true, supports_derivation: false }],
    ['rsa-2048', { supports_encryption: true, supports_decryption: true, supports_signing: true, supports_derivation: false }],
    ['hmac', { supports_encryption: false, supports_decryption: false, supports_signing: false, supports_derivation: false }],
  ])('reports what a %s key supports', async (type, flags) => {
    const { h } = transitRig();
    const read = data(await h.request('write', 'keys/k', { type }));
    expect(read).toMatchObject({ type, latest_version: 1, ...flags });
  });

  it.each([
    ['ecdsa-p256', 'P-256', 'prime256v1'],
    ['ecdsa-p384', 'P-384', 'secp384r1'],
    ['ecdsa-p521', 'P-521', 'secp521r1'],
  ])('shows a %s version with its curve name and a PEM public key', async (type, curveName, nodeCurve) => {
    const { h } = transitRig();
    const keys = data(await h.request('write', 'keys/k', { type }))['keys'] as Record<string, Record<string, unknown>>;
    expect(Object.keys(keys)).toEqual(['1']);
    expect(keys['1']).toEqual({ name: curveName, public_key: expect.stringMatching(/^-----BEGIN PUBLIC KEY-----\n/), creation_time: '2026-01-01T00:00:00Z' });
    const pub = createPublicKey(String(keys['1']?.['public_key']));
    expect(pub.asymmetricKeyDetails?.namedCurve).toBe(nodeCurve);
  });

  it('shows an ed25519 public key as base64 of its 32 raw bytes', async () => {
    const { h } = transitRig();
    const keys = data(await h.request('write', 'keys/k', { type: 'ed25519' }))['keys'] as Record<string, Record<string, unknown>>;
    expect(keys['1']?.['name']).toBe('ed25519');
    expect(Buffer.from(String(keys['1']?.['public_key']), 'base64')).toHaveLength(32);
  });

  it('shows an RSA public key as PEM under the type\'s name', async () => {
    const { h } = transitRig();
    const keys = data(await h.request('write', 'keys/k', { type: 'rsa-2048' }))['keys'] as Record<string, Record<string, unknown>>;
    expect(keys['1']?.['name']).toBe('rsa-2048');
    expect(createPublicKey(String(keys['1']?.['public_key'])).asymmetricKeyDetails?.modulusLength).toBe(2048);
  });

  it('gives an hmac key no keys map but its key_size, 32 bytes unless asked', async () => {
    const { h } = transitRig();
    const read = data(await h.request('write', 'keys/h', { type: 'hmac' }));
    expect(read['keys']).toBeUndefined();
    expect(read['key_size']).toBe(32);
    expect(data(await h.request('write', 'keys/h2', { type: 'hmac', key_size: 512 }))['key_size']).toBe(512);
  });

  it('stores the creation options and shows kdf and convergent version for derived keys', async () => {
    const { h } = transitRig();
    const read = data(await h.request('write', 'keys/c', {
      derived: true, convergent_encryption: true, exportable: true, allow_plaintext_backup: true, auto_rotate_period: '24h',
    }));
    expect(read).toMatchObject({
      derived: true, kdf: 'hkdf_sha256', convergent_encryption: true, convergent_encryption_version: -1,
      exportable: true, allow_plaintext_backup: true, auto_rotate_period: 86400,
    });
  });

  it('leaves an existing key alone on a second create and says it already existed', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/app');
    const again = await h.request('write', 'keys/app', { type: 'chacha20-poly1305', exportable: true });
    expect(again?.warnings).toEqual(['key app already existed']);
    expect(data(again)).toMatchObject({ type: 'aes256-gcm96', exportable: false, latest_version: 1 });
  });

  it('answers a read of a missing key with nothing (404)', async () => {
    const { h } = transitRig();
    expect(await h.request('read', 'keys/nope')).toBeNull();
  });

  it('accepts Vault\'s key names and rejects others at routing', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/a.b-c_d1');
    await failure(h.request('write', 'keys/-leading'), 404);
    await failure(h.request('write', 'keys/trailing.'), 404);
  });
});

describe('keys/:name: creation rules', () => {
  it('refuses an unknown type', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'keys/k', { type: 'aes512' }), 'type');
  });

  it('refuses managed_key: managed keys are not configured', async () => {
    const { h } = transitRig();
    const message = await badRequest(h.request('write', 'keys/k', { type: 'managed_key', managed_key_name: 'hsm' }), 'type');
    expect(message).toContain('managed keys are not configured');
  });

  it('refuses convergent encryption without derivation, and on types without it', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'keys/k', { convergent_encryption: true }), 'convergent_encryption');
    await badRequest(h.request('write', 'keys/k', { type: 'ed25519', derived: true, convergent_encryption: true }), 'convergent_encryption');
  });

  it('refuses derivation on types that do not support it', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'keys/k', { type: 'ecdsa-p256', derived: true }), 'derived');
    await badRequest(h.request('write', 'keys/k', { type: 'rsa-2048', derived: true }), 'derived');
    expect(data(await h.request('write', 'keys/e', { type: 'ed25519', derived: true }))['derived']).toBe(true);
  });

  it('takes key_size only for hmac, between 32 and 512 bytes', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'keys/k', { type: 'hmac', key_size: 31 }), 'key_size');
    await badRequest(h.request('write', 'keys/k', { type: 'hmac', key_size: 513 }), 'key_size');
    await badRequest(h.request('write', 'keys/k', { key_size: 32 }), 'key_size');
    await badRequest(h.request('write', 'keys/k', { type: 'hmac', key_size: 'big' }), 'key_size');
    expect(data(await h.request('write', 'keys/k', { type: 'hmac', key_size: '32' }))['key_size']).toBe(32);
  });

  it('takes auto_rotate_period of 0 or at least an hour', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'keys/k', { auto_rotate_period: '59m' }), 'auto_rotate_period');
    await badRequest(h.request('write', 'keys/k', { auto_rotate_period: 1 }), 'auto_rotate_period');
    await badRequest(h.request('write', 'keys/k', { auto_rotate_period: 'soon' }), 'auto_rotate_period');
    expect(data(await h.request('write', 'keys/a', { auto_rotate_period: 0 }))['auto_rotate_period']).toBe(0);
    expect(data(await h.request('write', 'keys/b', { auto_rotate_period: '1h' }))['auto_rotate_period']).toBe(3600);
  });

  it('refuses non-boolean flags, naming them', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'keys/k', { derived: 'maybe' }), 'derived');
    await badRequest(h.request('write', 'keys/k', { exportable: 'sometimes' }), 'exportable');
    await badRequest(h.request('write', 'keys/k', { allow_plaintext_backup: [] }), 'allow_plaintext_backup');
  });

  it('creates nothing when the options are refused', async () => {
    const { h } = transitRig();
    await badRequest(h.request('write', 'keys/k', { type: 'hmac', key_size: 2 }), 'key_size');
    expect(await h.request('read', 'keys/k')).toBeNull();
  });
});

describe('keys/: list', () => {
  it('lists key names in order', async () => {
    const { h } = transitRig();
    for (const name of ['zeta', 'alpha', 'mid']) await h.request('write', `keys/${name}`);
    expect(await h.request('list', 'keys/')).toEqual({ data: { keys: ['alpha', 'mid', 'zeta'] } });
    expect(await h.request('list', 'keys')).toEqual({ data: { keys: ['alpha', 'mid', 'zeta'] } });
  });

  it('lists nothing on an empty mount (the envelope makes it a 404)', async () => {
    const { h } = transitRig();
    expect(await h.request('list', 'keys/')).toEqual({ data: { keys: [] } });
  });
});

describe('keys/:name: delete', () => {
  it('refuses while deletion_allowed is false', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const err = await failure(h.request('delete', 'keys/k'), 400);
    expect(err.message).toContain('deletion is not allowed');
    expect(await h.request('read', 'keys/k')).not.toBeNull();
  });

  it('deletes once deletion_allowed is set; its ciphertext can no longer be decrypted', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const ct = await encrypt(h, 'k', 'secret');
    await h.request('write', 'keys/k/config', { deletion_allowed: true });
    expect(await h.request('delete', 'keys/k')).toBeNull();
    expect(await h.request('read', 'keys/k')).toBeNull();
    expect(await h.request('list', 'keys/')).toEqual({ data: { keys: [] } });
    await failure(decrypt(h, 'k', ct), 400);
  });

  it('a key created again under a deleted name is a new key', async () => {
    const { h } = transitRig();
    await h.request('write', 'keys/k');
    const ct = await encrypt(h, 'k', 'secret');
    await h.request('write', 'keys/k/config', { deletion_allowed: true });
    await h.request('delete', 'keys/k');
    await h.request('write', 'keys/k');
    const err = await failure(decrypt(h, 'k', ct), 400);
    expect(err.message).toMatch(/authentication failed/);
  });

  it('refuses to delete a key that does not exist', async () => {
    const { h } = transitRig();
    await failure(h.request('delete', 'keys/nope'), 400);
  });
});
