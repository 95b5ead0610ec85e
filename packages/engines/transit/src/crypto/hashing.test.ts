import { CryptoInputError } from './errors';
import { HASH_ALGORITHMS, digest, digestSize, hash, hmac, hmacVerify, nodeDigestName } from './hashing';
import { OpensslScratch } from './test-support/openssl';

describe('hashing', () => {
  const abc = Buffer.from('abc');

  it('matches published digests of "abc"', () => {
    expect(hash('sha2-256', abc).toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hash('sha3-256', abc).toString('hex')).toBe('3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532');
    expect(hash('sha2-224', abc).toString('hex')).toBe('23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7');
    expect(digest('sha1', abc).toString('hex')).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
  });

  it('matches RFC 4231 test case 2 for HMAC-SHA256', () => {
    const mac = hmac('sha2-256', Buffer.from('Jefe'), Buffer.from('what do ya want for nothing?'));
    expect(mac.toString('hex')).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });

  describe('against openssl dgst', () => {
    const ssl = new OpensslScratch();
    afterAll(() => ssl.cleanup());
    const input = Buffer.from('the quick brown fox, and 0x00 bytes \u0000\u0001');
    const key = Buffer.from('0102030405060708090a0b0c0d0e0f10111213141516171819', 'hex');

    it.each(HASH_ALGORITHMS)('%s hash and HMAC agree', (alg) => {
      const file = ssl.write(`in-${alg}`, input);
      const name = nodeDigestName(alg);
      expect(hash(alg, input).equals(ssl.run(['dgst', `-${name}`, '-binary', file]))).toBe(true);
      const mac = ssl.run(['dgst', `-${name}`, '-binary', '-mac', 'HMAC', '-macopt', `hexkey:${key.toString('hex')}`, file]);
      expect(hmac(alg, key, input).equals(mac)).toBe(true);
      expect(hash(alg, input)).toHaveLength(digestSize(alg));
    });
  });

  it('verifies HMACs in constant time and rejects other lengths', () => {
    const key = Buffer.alloc(32, 7);
    const mac = hmac('sha2-512', key, abc);
    expect(hmacVerify('sha2-512', key, abc, mac)).toBe(true);
    expect(hmacVerify('sha2-512', key, abc, mac.subarray(1))).toBe(false);
    const flipped = Buffer.from(mac);
    flipped[0]! ^= 1;
    expect(hmacVerify('sha2-512', key, abc, flipped)).toBe(false);
  });

  it('refuses unknown algorithms with an error naming the field', () => {
    expect(() => hash('md5' as never, abc)).toThrow(CryptoInputError);
    expect(() => hash('sha1' as never, abc)).toThrow(/algorithm/);
    expect(() => hmac('sha2-1024' as never, abc, abc)).toThrow(/algorithm/);
  });
});
