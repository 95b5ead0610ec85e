import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { StrongroomError } from '@strongroom/core';
import { decryptWithKey, encryptWithKey } from './encryption';
import { KeyPolicy, type StoredKeyPolicy } from './key-policy';

const KEY = Buffer.alloc(32, 7);

function policy(overrides: Partial<StoredKeyPolicy> = {}, version: Record<string, unknown> = {}): KeyPolicy {
  return KeyPolicy.fromStored({
    name: 'k', type: 'aes256-gcm96', derived: false, kdf: 'hkdf_sha256', convergent_encryption: false, convergent_version: 0,
    exportable: false, allow_plaintext_backup: false, deletion_allowed: false, min_decryption_version: 1,
    min_encryption_version: 0, min_available_version: 0, latest_version: 1, auto_rotate_period: 0, key_size: 0,
    imported: false, allow_imported_key_rotation: false,
    versions: { 1: { key: KEY.toString('base64'), hmac_key: randomBytes(32).toString('base64'), creation_time: 0, ...version } },
    ...overrides,
  });
}

function payloadOf(ciphertext: string): Buffer {
  return Buffer.from(ciphertext.replace(/^vault:v\d+:/, ''), 'base64');
}

function gcmOpen(key: Buffer, nonce: Buffer, sealed: Buffer, aad?: Buffer): Buffer {
  const d = createDecipheriv(key.length === 16 ? 'aes-128-gcm' : 'aes-256-gcm', key, nonce);
  if (aad) d.setAAD(aad);
  d.setAuthTag(sealed.subarray(sealed.length - 16));
  return Buffer.concat([d.update(sealed.subarray(0, sealed.length - 16)), d.final()]);
}

function userError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof StrongroomError && err.status === 400) return err.message;
    throw err;
  }
  throw new Error('expected a 400');
}

describe('ciphertext layout (what Vault clients and migrations rely on)', () => {
  it('AEAD payload is nonce(12) ‖ ciphertext ‖ tag(16) under the version key, AAD bound', () => {
    const p = policy();
    const aad = Buffer.from('aad');
    const { ciphertext } = encryptWithKey(p, { plaintext: Buffer.from('hello'), associatedData: aad, keyVersion: 0 });
    const raw = payloadOf(ciphertext);
    expect(raw).toHaveLength(12 + 5 + 16);
    expect(gcmOpen(KEY, raw.subarray(0, 12), raw.subarray(12), aad).toString()).toBe('hello');
  });

  it('a Vault-made ciphertext (built here by hand) decrypts', () => {
    const nonce = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', KEY, nonce);
    const sealed = Buffer.concat([c.update('from vault'), c.final(), c.getAuthTag()]);
    const text = `vault:v1:${Buffer.concat([nonce, sealed]).toString('base64')}`;
    expect(decryptWithKey(policy(), text, {}).plaintext.toString()).toBe('from vault');
  });

  it('derived keys use HKDF-SHA256 with an empty salt and the context as info', () => {
    const p = policy({ derived: true });
    const context = Buffer.from('tenant');
    const { ciphertext } = encryptWithKey(p, { plaintext: Buffer.from('x'), context, keyVersion: 0 });
    const derived = Buffer.from(hkdfSync('sha256', KEY, Buffer.alloc(0), context, 32));
    const raw = payloadOf(ciphertext);
    expect(gcmOpen(derived, raw.subarray(0, 12), raw.subarray(12)).toString()).toBe('x');
  });

  it('keys from the counter KDF derive HMAC-SHA256(key, BE32(0) ‖ context ‖ BE32(256))', () => {
    const p = policy({ derived: true, kdf: 'hmac-sha256-counter' });
    const context = Buffer.from('ctx');
    const { ciphertext } = encryptWithKey(p, { plaintext: Buffer.from('legacy'), context, keyVersion: 0 });
    const bits = Buffer.alloc(4);
    bits.writeUInt32BE(256);
    const derived = createHmac('sha256', KEY).update(Buffer.concat([Buffer.alloc(4), context, bits])).digest();
    const raw = payloadOf(ciphertext);
    expect(gcmOpen(derived, raw.subarray(0, 12), raw.subarray(12)).toString()).toBe('legacy');
  });

  it('convergent version 3: HKDF gives key ‖ 32-byte nonce key; nonce = HMAC(nonce key, plaintext)[:12]', () => {
    const p = policy({ derived: true, convergent_encryption: true, convergent_version: -1 }, { convergent_version: 3 });
    const context = Buffer.from('ctx');
    const plaintext = Buffer.from('deterministic');
    const { ciphertext } = encryptWithKey(p, { plaintext, context, keyVersion: 0 });
    const material = Buffer.from(hkdfSync('sha256', KEY, Buffer.alloc(0), context, 64));
    const nonce = createHmac('sha256', material.subarray(32)).update(plaintext).digest().subarray(0, 12);
    const raw = payloadOf(ciphertext);
    expect(raw.subarray(0, 12)).toEqual(nonce);
    expect(gcmOpen(material.subarray(0, 32), nonce, raw.subarray(12)).toString()).toBe('deterministic');
  });

  it('convergent version 2: nonce = HMAC(context, plaintext)[:12], embedded', () => {
    const p = policy({ derived: true, convergent_encryption: true, convergent_version: 2 });
    const context = Buffer.from('ctx');
    const plaintext = Buffer.from('v2');
    const { ciphertext } = encryptWithKey(p, { plaintext, context, keyVersion: 0 });
    const nonce = createHmac('sha256', context).update(plaintext).digest().subarray(0, 12);
    expect(payloadOf(ciphertext).subarray(0, 12)).toEqual(nonce);
    expect(decryptWithKey(p, ciphertext, { context }).plaintext.toString()).toBe('v2');
  });

  it('convergent version 1: the caller\'s 12-byte nonce, required both ways and not embedded', () => {
    const p = policy({ derived: true, convergent_encryption: true, convergent_version: 1 });
    const context = Buffer.from('ctx');
    const nonce = Buffer.from('123456789012');
    const { ciphertext } = encryptWithKey(p, { plaintext: Buffer.from('v1'), context, nonce, keyVersion: 0 });
    expect(payloadOf(ciphertext)).toHaveLength(2 + 16);
    expect(decryptWithKey(p, ciphertext, { context, nonce }).plaintext.toString()).toBe('v1');
    expect(userError(() => decryptWithKey(p, ciphertext, { context }))).toContain('"nonce"');
    expect(userError(() => encryptWithKey(p, { plaintext: Buffer.from('v1'), context, keyVersion: 0 }))).toContain('"nonce"');
    expect(userError(() => encryptWithKey(p, { plaintext: Buffer.from('v1'), context, nonce: Buffer.alloc(8), keyVersion: 0 }))).toContain('"nonce"');
  });

  it('aes128-gcm96 uses a 16-byte key, derived or not', () => {
    const key16 = Buffer.alloc(16, 3);
    const p = policy({ type: 'aes128-gcm96' }, { key: key16.toString('base64') });
    const raw = payloadOf(encryptWithKey(p, { plaintext: Buffer.from('short'), keyVersion: 0 }).ciphertext);
    expect(gcmOpen(key16, raw.subarray(0, 12), raw.subarray(12)).toString()).toBe('short');
  });
});
