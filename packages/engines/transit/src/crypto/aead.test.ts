import { randomBytes } from 'node:crypto';
import { AEAD_NONCE_SIZE, aeadDecrypt, aeadEncrypt } from './aead';
import { CryptoInputError } from './errors';
import type { AeadKeyType } from './key-types';

const TYPES: [AeadKeyType, number][] = [['aes128-gcm96', 16], ['aes256-gcm96', 32], ['chacha20-poly1305', 32]];

describe('aead', () => {
  describe('known answers (payload = nonce ‖ ciphertext ‖ tag)', () => {
    it('AES-128-GCM, GCM spec test case 2', () => {
      const out = aeadEncrypt('aes128-gcm96', Buffer.alloc(16), Buffer.alloc(16), { nonce: Buffer.alloc(12) });
      expect(out.toString('hex')).toBe(`${'00'.repeat(12)}0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf`);
    });

    it('AES-256-GCM, GCM spec test case 14', () => {
      const out = aeadEncrypt('aes256-gcm96', Buffer.alloc(32), Buffer.alloc(16), { nonce: Buffer.alloc(12) });
      expect(out.toString('hex')).toBe(`${'00'.repeat(12)}cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919`);
    });

    it('ChaCha20-Poly1305, RFC 8439 section 2.8.2 (with associated data)', () => {
      const key = Buffer.from(Array.from({ length: 32 }, (_, i) => 0x80 + i));
      const nonce = Buffer.from('070000004041424344454647', 'hex');
      const aad = Buffer.from('50515253c0c1c2c3c4c5c6c7', 'hex');
      const pt = Buffer.from("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.");
      const out = aeadEncrypt('chacha20-poly1305', key, pt, { nonce, associatedData: aad });
      expect(out.subarray(0, 12).equals(nonce)).toBe(true);
      expect(out.subarray(12, 28).toString('hex')).toBe('d31a8d34648e60db7b86afbc53ef7ec2');
      expect(out.subarray(out.length - 16).toString('hex')).toBe('1ae10b594f09e26a7e902ecbd0600691');
      expect(aeadDecrypt('chacha20-poly1305', key, out, { associatedData: aad }).equals(pt)).toBe(true);
    });
  });

  describe.each(TYPES)('%s', (type, keySize) => {
    const key = randomBytes(keySize);

    it('round-trips with a random nonce in front, 28 bytes of overhead', () => {
      const pt = Buffer.from('attack at dawn');
      const a = aeadEncrypt(type, key, pt);
      const b = aeadEncrypt(type, key, pt);
      expect(a).toHaveLength(pt.length + 28);
      expect(a.subarray(0, AEAD_NONCE_SIZE).equals(b.subarray(0, AEAD_NONCE_SIZE))).toBe(false);
      expect(aeadDecrypt(type, key, a).equals(pt)).toBe(true);
    });

    it('round-trips empty plaintext', () => {
      expect(aeadDecrypt(type, key, aeadEncrypt(type, key, Buffer.alloc(0)))).toHaveLength(0);
    });

    it('binds associated data', () => {
      const aad = Buffer.from('tenant=42');
      const ct = aeadEncrypt(type, key, Buffer.from('x'), { associatedData: aad });
      expect(aeadDecrypt(type, key, ct, { associatedData: aad }).toString()).toBe('x');
      expect(() => aeadDecrypt(type, key, ct)).toThrow(CryptoInputError);
      expect(() => aeadDecrypt(type, key, ct, { associatedData: Buffer.from('tenant=43') })).toThrow(/ciphertext/);
    });

    it('is deterministic for a fixed nonce, and can leave the nonce out (convergent version 1)', () => {
      const nonce = randomBytes(12);
      const pt = Buffer.from('same');
      const a = aeadEncrypt(type, key, pt, { nonce });
      expect(a.equals(aeadEncrypt(type, key, pt, { nonce }))).toBe(true);
      const bare = aeadEncrypt(type, key, pt, { nonce, includeNonce: false });
      expect(bare.equals(a.subarray(12))).toBe(true);
      expect(aeadDecrypt(type, key, bare, { nonce }).equals(pt)).toBe(true);
    });

    it('refuses tampering, truncation and wrong keys as ciphertext errors', () => {
      const ct = aeadEncrypt(type, key, Buffer.from('payload'));
      const tampered = Buffer.from(ct);
      tampered[14]! ^= 0x01;
      expect(() => aeadDecrypt(type, key, tampered)).toThrow(/message authentication failed/);
      expect(() => aeadDecrypt(type, randomBytes(keySize), ct)).toThrow(CryptoInputError);
      expect(() => aeadDecrypt(type, key, ct.subarray(0, 20))).toThrow(/invalid ciphertext length/);
      expect(() => aeadDecrypt(type, key, ct.subarray(0, 5))).toThrow(/invalid ciphertext length/);
    });

    it('wants a 12-byte nonce and a key of the right size', () => {
      expect(() => aeadEncrypt(type, key, Buffer.from('x'), { nonce: Buffer.alloc(8) })).toThrow(/nonce must be 12 bytes/);
      expect(() => aeadEncrypt(type, key, Buffer.from('x'), { nonce: Buffer.alloc(13) })).toThrow(
        expect.objectContaining({ name: 'CryptoInputError', field: 'nonce' }) as unknown as Error);
      expect(() => aeadEncrypt(type, randomBytes(keySize === 16 ? 32 : 16), Buffer.from('x'))).toThrow(RangeError);
    });
  });
});
