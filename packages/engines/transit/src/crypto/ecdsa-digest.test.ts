import { createECDH, createHash, generateKeyPairSync, randomBytes, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import { bigIntToBytes, bytesToBigInt, decodeInteger, encodeInteger, encodeSequence, readChildren, readWhole, TAG_SEQUENCE } from './der';
import { curveParams, digestToScalar, multiplyBase, signDigest, verifyDigest, type EcdsaCurveName } from './ecdsa-digest';

const CURVES: [EcdsaCurveName, string][] = [['P-256', 'sha256'], ['P-384', 'sha384'], ['P-521', 'sha512']];

function toDer(r: bigint, s: bigint): Buffer {
  return encodeSequence(encodeInteger(r), encodeInteger(s));
}

function fromDer(sig: Buffer): { r: bigint; s: bigint } {
  const [r, s] = readChildren(readWhole(sig, TAG_SEQUENCE));
  return { r: decodeInteger(r!.value), s: decodeInteger(s!.value) };
}

describe.each(CURVES)('ECDSA over a given digest, %s', (curve, hashName) => {
  const c = curveParams(curve);
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: curve });

  it('has the curve constants node uses (G, n and p checked against OpenSSL)', () => {
    const ecdh = createECDH(c.ecdhName);
    ecdh.setPrivateKey(bigIntToBytes(1n, c.size));
    const g = ecdh.getPublicKey();
    expect(bytesToBigInt(g.subarray(1, 1 + c.size))).toBe(c.gx);
    expect(bytesToBigInt(g.subarray(1 + c.size))).toBe(c.gy);

    ecdh.setPrivateKey(bigIntToBytes(c.n - 1n, c.size));
    const minusG = ecdh.getPublicKey();
    expect(bytesToBigInt(minusG.subarray(1 + c.size))).toBe(c.p - c.gy);
    expect(multiplyBase(curve, c.n - 1n)).toEqual({ x: c.gx, y: c.p - c.gy });
    expect(multiplyBase(curve, c.n)).toBeUndefined();
    expect(() => createECDH(c.ecdhName).setPrivateKey(bigIntToBytes(c.n, c.size))).toThrow();

    for (let i = 0; i < 3; i++) {
      const k = bytesToBigInt(randomBytes(c.size)) % c.n;
      ecdh.setPrivateKey(bigIntToBytes(k, c.size));
      const pub = ecdh.getPublicKey();
      expect(multiplyBase(curve, k)).toEqual({ x: bytesToBigInt(pub.subarray(1, 1 + c.size)), y: bytesToBigInt(pub.subarray(1 + c.size)) });
    }
  });

  it('signs digests that node verifies as signatures of the message', () => {
    for (let i = 0; i < 5; i++) {
      const msg = randomBytes(50);
      const { r, s } = signDigest(curve, privateKey, createHash(hashName).update(msg).digest());
      expect(nodeVerify(hashName, msg, publicKey, toDer(r, s))).toBe(true);
    }
  });

  it('verifies node signatures given only the digest, and rejects wrong ones', () => {
    const msg = randomBytes(33);
    const sig = fromDer(nodeSign(hashName, msg, privateKey));
    const digest = createHash(hashName).update(msg).digest();
    expect(verifyDigest(curve, publicKey, digest, sig)).toBe(true);
    expect(verifyDigest(curve, publicKey, createHash(hashName).update('other').digest(), sig)).toBe(false);
    expect(verifyDigest(curve, publicKey, digest, { r: sig.r, s: (sig.s + 1n) % c.n })).toBe(false);
    expect(verifyDigest(curve, publicKey, digest, { r: 0n, s: sig.s })).toBe(false);
    expect(verifyDigest(curve, publicKey, digest, { r: sig.r, s: c.n })).toBe(false);
    expect(verifyDigest(curve, publicKey, digest, { r: -sig.r, s: sig.s })).toBe(false);
  });

  it('truncates long digests to the order size like the standard (sha512 on every curve)', () => {
    const msg = randomBytes(20);
    const { r, s } = signDigest(curve, privateKey, createHash('sha512').update(msg).digest());
    expect(nodeVerify('sha512', msg, publicKey, toDer(r, s))).toBe(true);
  });

  it('makes a fresh signature each time', () => {
    const d = randomBytes(32);
    expect(signDigest(curve, privateKey, d)).not.toEqual(signDigest(curve, privateKey, d));
  });
});

describe('digestToScalar', () => {
  it('keeps the leftmost bits of the order length', () => {
    const d = Buffer.alloc(64, 0xff);
    expect(digestToScalar('P-256', d)).toBe((1n << 256n) - 1n);
    expect(digestToScalar('P-521', Buffer.alloc(66, 0xff))).toBe((1n << 521n) - 1n);
    expect(digestToScalar('P-521', Buffer.from([0x80]))).toBe(0x80n);
    expect(digestToScalar('P-256', Buffer.alloc(0))).toBe(0n);
  });
});
