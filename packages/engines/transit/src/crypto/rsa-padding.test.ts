import { constants, createHash, generateKeyPairSync, privateEncrypt, publicDecrypt, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { digestInfo, maxPssSaltLength, pkcs1v15Encode, pssEncode, pssVerify } from './rsa-padding';

describe('rsa-padding', () => {
  it('builds DigestInfo with the RFC 8017 prefixes', () => {
    const d = Buffer.alloc(32, 0xab);
    expect(digestInfo('sha2-256', d).subarray(0, 19).toString('hex')).toBe('3031300d060960864801650304020105000420');
    expect(digestInfo('sha1', Buffer.alloc(20)).subarray(0, 15).toString('hex')).toBe('3021300906052b0e03021a05000414');
    expect(digestInfo('sha2-512', Buffer.alloc(64)).subarray(0, 19).toString('hex')).toBe('3051300d060960864801650304020305000440');
    expect(digestInfo('sha3-256', d).subarray(0, 19).toString('hex')).toBe('3031300d060960864801650304020805000420');
  });

  it('pads PKCS#1 v1.5 blocks and refuses what does not fit', () => {
    const em = pkcs1v15Encode(Buffer.from('abc'), 32)!;
    expect(em.toString('hex')).toBe(`0001${'ff'.repeat(26)}00616263`);
    expect(pkcs1v15Encode(Buffer.alloc(22), 32)).toBeUndefined();
  });

  it('computes the largest PSS salt', () => {
    expect(maxPssSaltLength(2048, 'sha2-256')).toBe(222);
    expect(maxPssSaltLength(3072, 'sha2-512')).toBe(318);
    expect(maxPssSaltLength(1025, 'sha2-256')).toBe(94);
    expect(maxPssSaltLength(1026, 'sha2-256')).toBe(95);
  });

  // 1025 bits makes the encoding one byte shorter than the modulus (emBits a multiple of 8);
  // OpenSSL will not generate such odd sizes above 2048.
  describe.each([1025, 1030, 2048])('PSS with a %i-bit modulus', (bits) => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
    expect(privateKey.asymmetricKeyDetails?.modulusLength).toBe(bits);
    const k = Math.ceil(bits / 8);
    const msg = Buffer.from('message');
    const mHash = createHash('sha256').update(msg).digest();

    it('encodes so that node verifies it, and verifies what node signs', () => {
      for (const salt of [0, 32, maxPssSaltLength(bits, 'sha2-256')]) {
        const em = pssEncode('sha2-256', mHash, bits, salt);
        expect(em).toHaveLength(k);
        const sig = privateEncrypt({ key: privateKey, padding: constants.RSA_NO_PADDING }, em);
        expect(nodeVerify('sha256', msg, { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: salt }, sig)).toBe(true);
        const opened = publicDecrypt({ key: publicKey, padding: constants.RSA_NO_PADDING }, sig);
        expect(pssVerify('sha2-256', mHash, opened, bits)).toBe(true);
        expect(pssVerify('sha2-256', mHash, opened, bits, salt)).toBe(true);
        expect(pssVerify('sha2-256', mHash, opened, bits, salt + 1)).toBe(false);
      }
      const theirs = nodeSign('sha256', msg, { key: privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 20 });
      const em = publicDecrypt({ key: publicKey, padding: constants.RSA_NO_PADDING }, theirs);
      expect(pssVerify('sha2-256', mHash, em, bits, 20)).toBe(true);
      expect(pssVerify('sha2-256', createHash('sha256').update('other').digest(), em, bits)).toBe(false);
    });

    it('rejects damaged encodings', () => {
      const em = pssEncode('sha2-256', mHash, bits, 32);
      const noTrailer = Buffer.from(em);
      noTrailer[k - 1] = 0xbb;
      expect(pssVerify('sha2-256', mHash, noTrailer, bits)).toBe(false);
      const flipped = Buffer.from(em);
      flipped[k - 10]! ^= 1;
      expect(pssVerify('sha2-256', mHash, flipped, bits)).toBe(false);
      const highBit = Buffer.from(em);
      highBit[0]! |= 0x80;
      expect(pssVerify('sha2-256', mHash, highBit, bits)).toBe(false);
      expect(pssVerify('sha2-256', mHash.subarray(1), em, bits)).toBe(false);
      expect(() => pssEncode('sha2-256', mHash, bits, maxPssSaltLength(bits, 'sha2-256') + 1)).toThrow(RangeError);
    });
  });
});
