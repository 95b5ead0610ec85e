import { crc32c, crc32cBase64 } from './crc32c';

describe('cloud3 CRC32C', () => {
  it('matches the Castagnoli check value', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32cBase64(Buffer.from('123456789'))).toBe(Buffer.from([0xe3, 0x06, 0x92, 0x83]).toString('base64'));
    expect(crc32c(Buffer.alloc(0))).toBe(0);
    // RFC 3720 B.4: 32 bytes of zeros.
    expect(crc32c(Buffer.alloc(32))).toBe(0x8a9136aa);
  });

  it('continues over pieces', () => {
    const data = Buffer.from('The quick brown fox jumps over the lazy dog');
    expect(crc32c(data.subarray(10), crc32c(data.subarray(0, 10)))).toBe(crc32c(data));
  });
});
