import { createHmac, createPublicKey, hkdfSync, randomBytes } from 'node:crypto';
import { aeadDecrypt, aeadEncrypt } from './aead';
import { CryptoInputError } from './errors';
import {
  convergentNonce, deriveEd25519Key, deriveKeyBytes, ed25519PrivateKeyFromSeed, hkdfSha256,
  hmacSha256CounterKdf, kbkdfHmacSha256Counter, resolveAeadKey,
} from './kdf';
import { OpensslScratch } from './test-support/openssl';
import { thrown } from './test-support/errors';

const hex = (s: string) => Buffer.from(s, 'hex');


describe('kdf', () => {
  const ssl = new OpensslScratch();
  afterAll(() => ssl.cleanup());

  describe('HKDF-SHA256', () => {
    it('matches RFC 5869 test case 3 (empty salt and info, as transit derives)', () => {
      const okm = hkdfSha256(Buffer.alloc(22, 0x0b), Buffer.alloc(0), 42);
      expect(okm.toString('hex')).toBe('8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8');
    });

    it('matches RFC 5869 test case 1 (with salt and info)', () => {
      const okm = hkdfSha256(Buffer.alloc(22, 0x0b), hex('f0f1f2f3f4f5f6f7f8f9'), 42, hex('000102030405060708090a0b0c'));
      expect(okm.toString('hex')).toBe('3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865');
    });

    it('matches openssl kdf HKDF with empty salt and the context as info', () => {
      const key = randomBytes(32);
      const context = randomBytes(19);
      const out = ssl.run(['kdf', '-keylen', '64', '-binary', '-kdfopt', 'digest:SHA256',
        '-kdfopt', `hexkey:${key.toString('hex')}`, '-kdfopt', `hexinfo:${context.toString('hex')}`, 'HKDF']);
      expect(hkdfSha256(key, context, 64).equals(out)).toBe(true);
      expect(deriveKeyBytes('hkdf_sha256', key, context, 48).equals(out.subarray(0, 48))).toBe(true);
    });
  });

  describe('SP 800-108 counter mode with HMAC-SHA256', () => {
    it('numbered from 1, matches openssl KBKDF (counter before fixed data, L appended)', () => {
      const key = randomBytes(32);
      const fixed = randomBytes(23);
      for (const len of [32, 80]) {
        const out = ssl.run(['kdf', '-keylen', String(len), '-binary', '-kdfopt', 'mac:HMAC', '-kdfopt', 'digest:SHA256',
          '-kdfopt', `hexkey:${key.toString('hex')}`, '-kdfopt', `hexsalt:${fixed.toString('hex')}`,
          '-kdfopt', 'use-separator:0', '-kdfopt', 'use-l:1', 'KBKDF']);
        expect(kbkdfHmacSha256Counter(key, fixed, len).equals(out)).toBe(true);
      }
    });

    it('as Vault uses it: counter from 0, L = 256, always 32 bytes (fixed vector)', () => {
      const key = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
      const out = hmacSha256CounterKdf(key, Buffer.from('vault-context'));
      expect(out.toString('hex')).toBe('efcdabfb467eff0c34a8d0a33450139ccb3521b6a7d3664d796dc3c707ac07db');
      const block = Buffer.concat([hex('00000000'), Buffer.from('vault-context'), hex('00000100')]);
      expect(out.equals(createHmac('sha256', key).update(block).digest())).toBe(true);
      expect(deriveKeyBytes('hmac-sha256-counter', key, Buffer.from('vault-context'), 16)).toHaveLength(32);
    });
  });

  it('refuses derivation without a context, naming the field', () => {
    const err = thrown(() => deriveKeyBytes('hkdf_sha256', randomBytes(32), Buffer.alloc(0), 32));
    expect(err).toBeInstanceOf(CryptoInputError);
    expect((err as CryptoInputError).field).toBe('context');
    expect((err as Error).message).toMatch(/missing 'context'/);
  });

  describe('resolveAeadKey', () => {
    const key = randomBytes(32);
    const context = Buffer.from('user-17');

    it('uses the stored key as is when the key is not derived', () => {
      expect(resolveAeadKey({ type: 'aes256-gcm96', key, derived: false }).encryptionKey.equals(key)).toBe(true);
    });

    it('derives a key of the type size with HKDF', () => {
      const stream = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), context, 64));
      expect(resolveAeadKey({ type: 'aes256-gcm96', key, derived: true, kdf: 'hkdf_sha256', context }).encryptionKey.equals(stream.subarray(0, 32))).toBe(true);
      expect(resolveAeadKey({ type: 'aes128-gcm96', key: key.subarray(0, 16), derived: true, context }).encryptionKey).toHaveLength(16);
    });

    it('convergent version 3: the 32 bytes after the encryption key key the nonce HMAC', () => {
      const stream = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), context, 64));
      const k256 = resolveAeadKey({ type: 'chacha20-poly1305', key, derived: true, context, convergentVersion: 3 });
      expect(k256.encryptionKey.equals(stream.subarray(0, 32))).toBe(true);
      expect(k256.nonceKey!.equals(stream.subarray(32, 64))).toBe(true);
      const k128 = resolveAeadKey({ type: 'aes128-gcm96', key, derived: true, context, convergentVersion: 3 });
      expect(k128.encryptionKey.equals(stream.subarray(0, 16))).toBe(true);
      expect(k128.nonceKey!.equals(stream.subarray(16, 48))).toBe(true);
    });

    it('convergent version 2 keys the nonce HMAC with the context itself', () => {
      const k = resolveAeadKey({ type: 'aes256-gcm96', key, derived: true, context, convergentVersion: 2 });
      expect(k.nonceKey!.equals(context)).toBe(true);
      expect(convergentNonce(k.nonceKey!, Buffer.from('pt')).equals(
        createHmac('sha256', context).update('pt').digest().subarray(0, 12))).toBe(true);
    });

    it('with the legacy counter KDF: slices its 32 bytes, and cannot feed version 3 for 32-byte keys', () => {
      const counter = hmacSha256CounterKdf(key, context);
      const k = resolveAeadKey({ type: 'aes128-gcm96', key, derived: true, kdf: 'hmac-sha256-counter', context });
      expect(k.encryptionKey.equals(counter.subarray(0, 16))).toBe(true);
      expect(() => resolveAeadKey({ type: 'aes256-gcm96', key, derived: true, kdf: 'hmac-sha256-counter', context, convergentVersion: 3 }))
        .toThrow(/too small/);
    });

    it('makes convergent encryption deterministic per plaintext and context', () => {
      const enc = (pt: string, ctx: Buffer) => {
        const k = resolveAeadKey({ type: 'aes256-gcm96', key, derived: true, context: ctx, convergentVersion: 3 });
        return aeadEncrypt('aes256-gcm96', k.encryptionKey, Buffer.from(pt), { nonce: convergentNonce(k.nonceKey!, Buffer.from(pt)) });
      };
      const a = enc('ssn=123', context);
      expect(a.equals(enc('ssn=123', context))).toBe(true);
      expect(a.equals(enc('ssn=124', context))).toBe(false);
      expect(a.equals(enc('ssn=123', Buffer.from('user-18')))).toBe(false);
      const k = resolveAeadKey({ type: 'aes256-gcm96', key, derived: true, context, convergentVersion: 3 });
      expect(aeadDecrypt('aes256-gcm96', k.encryptionKey, a).toString()).toBe('ssn=123');
    });
  });

  describe('ed25519', () => {
    it('builds keys from a seed (RFC 8032 test 1)', () => {
      const key = ed25519PrivateKeyFromSeed(hex('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60'));
      const x = createPublicKey(key).export({ format: 'jwk' }).x!;
      expect(Buffer.from(x, 'base64url').toString('hex')).toBe('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a');
    });

    it('derives one key per context from the HKDF stream of the 64-byte stored key', () => {
      const base = randomBytes(64);
      const a = deriveEd25519Key(base, Buffer.from('ctx-a'));
      const again = deriveEd25519Key(base, Buffer.from('ctx-a'));
      const b = deriveEd25519Key(base, Buffer.from('ctx-b'));
      expect(a.publicKeyRaw).toHaveLength(32);
      expect(a.publicKeyRaw.equals(again.publicKeyRaw)).toBe(true);
      expect(a.publicKeyRaw.equals(b.publicKeyRaw)).toBe(false);

      // openssl derives the public key from the same seed on its own.
      const seed = hkdfSha256(base, Buffer.from('ctx-a'), 32);
      const der = ssl.write('seed.der', Buffer.concat([hex('302e020100300506032b657004220420'), seed]));
      const spki = ssl.run(['pkey', '-inform', 'DER', '-in', der, '-pubout', '-outform', 'DER']);
      expect(spki.subarray(spki.length - 32).equals(a.publicKeyRaw)).toBe(true);
    });

    it('needs a context and the HKDF KDF', () => {
      expect(() => deriveEd25519Key(randomBytes(64), Buffer.alloc(0))).toThrow(CryptoInputError);
      expect(() => deriveEd25519Key(randomBytes(64), Buffer.from('c'), 'hmac-sha256-counter')).toThrow(RangeError);
    });
  });
});
