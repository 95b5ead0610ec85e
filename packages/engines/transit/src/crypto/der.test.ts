import { DerError, bigIntToBytes, bytesToBigInt, decodeInteger, encodeInteger, encodeOidValue, encodeSequence, readChildren, readWhole, TAG_SEQUENCE } from './der';

describe('der', () => {
  it('round-trips integers, adding a zero byte when the top bit is set', () => {
    expect(encodeInteger(0x7fn).toString('hex')).toBe('02017f');
    expect(encodeInteger(0x80n).toString('hex')).toBe('02020080');
    expect(encodeInteger(0n).toString('hex')).toBe('020100');
    for (const n of [1n, 255n, 256n, (1n << 521n) - 1n]) {
      const el = readWhole(encodeInteger(n), 0x02);
      expect(decodeInteger(el)).toBe(n);
    }
  });

  it('reads negative integers as negative', () => {
    expect(decodeInteger(Buffer.from('ff', 'hex'))).toBe(-1n);
    expect(decodeInteger(Buffer.from('ff7f', 'hex'))).toBe(-129n);
  });

  it('refuses non-minimal integers and lengths, and trailing data', () => {
    expect(() => decodeInteger(Buffer.from('007f', 'hex'))).toThrow(DerError);
    expect(() => decodeInteger(Buffer.from('ff80', 'hex'))).toThrow(DerError);
    expect(() => readWhole(Buffer.from('30810100', 'hex'), TAG_SEQUENCE)).toThrow(/minimally/);
    expect(() => readWhole(Buffer.from('3080', 'hex'), TAG_SEQUENCE)).toThrow(/indefinite/);
    expect(() => readWhole(Buffer.from('300000', 'hex'), TAG_SEQUENCE)).toThrow(/trailing/);
    expect(() => readWhole(Buffer.from('3005020101', 'hex'), TAG_SEQUENCE)).toThrow(/truncated/);
  });

  it('handles long-form lengths', () => {
    const body = Buffer.alloc(300, 1);
    const seq = encodeSequence(body);
    expect(seq.subarray(0, 4).toString('hex')).toBe('3082012c');
    expect(readWhole(seq, TAG_SEQUENCE).equals(body)).toBe(true);
  });

  it('splits a sequence into its children', () => {
    const seq = encodeSequence(encodeInteger(1n), encodeInteger(2n));
    expect(readChildren(readWhole(seq, TAG_SEQUENCE)).map((c) => decodeInteger(c.value))).toEqual([1n, 2n]);
  });

  it('encodes OIDs with multi-byte arcs', () => {
    expect(encodeOidValue('1.2.840.113549.1.1.10').toString('hex')).toBe('2a864886f70d01010a');
    expect(encodeOidValue('2.16.840.1.101.3.4.2.1').toString('hex')).toBe('608648016503040201');
  });

  it('converts fixed-width big-endian bytes', () => {
    expect(bigIntToBytes(1n, 4).toString('hex')).toBe('00000001');
    expect(bytesToBigInt(Buffer.from('0100', 'hex'))).toBe(256n);
    expect(() => bigIntToBytes(1n << 40n, 4)).toThrow(RangeError);
  });
});
