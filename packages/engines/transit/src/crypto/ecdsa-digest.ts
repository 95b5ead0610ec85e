import { createECDH, randomBytes, type KeyObject } from 'node:crypto';
import { bigIntToBytes, bytesToBigInt } from './der';

/**
 * ECDSA over a digest the caller already computed (`prehashed`). node:crypto only signs and
 * verifies messages it hashes itself, so for this one case the scalar arithmetic is done here
 * while the secret-dependent scalar multiplication k·G still runs inside OpenSSL (via ECDH key
 * generation, which is constant time). The remaining secret arithmetic, one multiplication by d
 * and one inversion, works on values blinded by a fresh random factor so that BigInt timing
 * cannot be tied to d or k. Verification handles only public values.
 */

export type EcdsaCurveName = 'P-256' | 'P-384' | 'P-521';

interface Curve {
  p: bigint;
  n: bigint;
  gx: bigint;
  gy: bigint;
  /** Bit length of n. */
  bits: number;
  /** Width of a scalar or coordinate in bytes. */
  size: number;
  ecdhName: string;
}

const CURVES: Record<EcdsaCurveName, Curve> = {
  'P-256': {
    p: 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn,
    n: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
    gx: 0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296n,
    gy: 0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5n,
    bits: 256, size: 32, ecdhName: 'prime256v1',
  },
  'P-384': {
    p: 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffffn,
    n: 0xffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973n,
    gx: 0xaa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7n,
    gy: 0x3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5fn,
    bits: 384, size: 48, ecdhName: 'secp384r1',
  },
  'P-521': {
    p: (1n << 521n) - 1n,
    n: 0x01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffa51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409n,
    gx: 0x00c6858e06b70404e9cd9e3ecb662395b4429c648139053fb521f828af606b4d3dbaa14b5e77efe75928fe1dc127a2ffa8de3348b3c1856a429bf97e7e31c2e5bd66n,
    gy: 0x011839296a789a3bc0045c8a5fb42c7d1bd998f54449579b446817afbd17273e662c97ee72995ef42640c550b9013fad0761353c7086a272c24088be94769fd16650n,
    bits: 521, size: 66, ecdhName: 'secp521r1',
  },
};

export function curveParams(curve: EcdsaCurveName): Readonly<Curve> {
  return CURVES[curve];
}

const mod = (a: bigint, m: bigint): bigint => {
  const r = a % m;
  return r < 0n ? r + m : r;
};

function invert(a: bigint, m: bigint): bigint {
  let [oldR, r] = [mod(a, m), m];
  let [oldS, s] = [1n, 0n];
  while (r !== 0n) {
    const q = oldR / r;
    [oldR, r] = [r, oldR - q * r];
    [oldS, s] = [s, oldS - q * s];
  }
  if (oldR !== 1n) throw new RangeError('value is not invertible');
  return mod(oldS, m);
}

/** Jacobian coordinates; z = 0 is the point at infinity. */
interface Jacobian { x: bigint; y: bigint; z: bigint }

const INFINITY: Jacobian = { x: 1n, y: 1n, z: 0n };

function double(P: Jacobian, p: bigint): Jacobian {
  if (P.z === 0n || P.y === 0n) return INFINITY;
  // a = -3 for every NIST prime curve, which gives M = 3(X - Z²)(X + Z²).
  const z2 = mod(P.z * P.z, p);
  const m = mod(3n * (P.x - z2) * (P.x + z2), p);
  const y2 = mod(P.y * P.y, p);
  const s = mod(4n * P.x * y2, p);
  const x = mod(m * m - 2n * s, p);
  const y = mod(m * (s - x) - 8n * y2 * y2, p);
  const z = mod(2n * P.y * P.z, p);
  return { x, y, z };
}

function add(P: Jacobian, Q: Jacobian, p: bigint): Jacobian {
  if (P.z === 0n) return Q;
  if (Q.z === 0n) return P;
  const z1z1 = mod(P.z * P.z, p);
  const z2z2 = mod(Q.z * Q.z, p);
  const u1 = mod(P.x * z2z2, p);
  const u2 = mod(Q.x * z1z1, p);
  const s1 = mod(P.y * Q.z * z2z2, p);
  const s2 = mod(Q.y * P.z * z1z1, p);
  if (u1 === u2) return s1 === s2 ? double(P, p) : INFINITY;
  const h = mod(u2 - u1, p);
  const r = mod(s2 - s1, p);
  const h2 = mod(h * h, p);
  const h3 = mod(h * h2, p);
  const u1h2 = mod(u1 * h2, p);
  const x = mod(r * r - h3 - 2n * u1h2, p);
  const y = mod(r * (u1h2 - x) - s1 * h3, p);
  const z = mod(h * P.z * Q.z, p);
  return { x, y, z };
}

function affineX(P: Jacobian, p: bigint): bigint | undefined {
  if (P.z === 0n) return undefined;
  const zi = invert(P.z, p);
  return mod(P.x * zi * zi, p);
}

/** u1·G + u2·Q in one pass (Shamir's trick); public inputs only, so plain double-and-add is fine. */
function twinMultiply(u1: bigint, G: Jacobian, u2: bigint, Q: Jacobian, p: bigint): Jacobian {
  const GQ = add(G, Q, p);
  let R = INFINITY;
  const bits = Math.max(u1.toString(2).length, u2.toString(2).length);
  for (let i = bits - 1; i >= 0; i--) {
    R = double(R, p);
    const b1 = (u1 >> BigInt(i)) & 1n;
    const b2 = (u2 >> BigInt(i)) & 1n;
    if (b1 && b2) R = add(R, GQ, p);
    else if (b1) R = add(R, G, p);
    else if (b2) R = add(R, Q, p);
  }
  return R;
}

/** The leftmost bit-length-of-n bits of the digest, as ECDSA (and Go's ecdsa package) define it. */
export function digestToScalar(curve: EcdsaCurveName, digest: Buffer): bigint {
  const c = CURVES[curve];
  const e = bytesToBigInt(digest.subarray(0, c.size));
  const excess = Math.min(digest.length, c.size) * 8 - c.bits;
  return excess > 0 ? e >> BigInt(excess) : e;
}

function jwkScalar(value: string | undefined): bigint {
  if (!value) throw new TypeError('EC key has no such component');
  return bytesToBigInt(Buffer.from(value, 'base64url'));
}

function randomScalar(n: bigint, size: number): bigint {
  for (;;) {
    // 8 spare bytes make the bias of the reduction negligible.
    const r = mod(bytesToBigInt(randomBytes(size + 8)), n);
    if (r !== 0n) return r;
  }
}

export interface EcdsaSignatureValues { r: bigint; s: bigint }

/** Signs `digest` exactly as given (truncated to the order's bit length, never hashed). */
export function signDigest(curve: EcdsaCurveName, privateKey: KeyObject, digest: Buffer): EcdsaSignatureValues {
  const c = CURVES[curve];
  const d = jwkScalar(privateKey.export({ format: 'jwk' }).d);
  const e = digestToScalar(curve, digest);
  for (;;) {
    const ecdh = createECDH(c.ecdhName);
    ecdh.generateKeys();
    const k = bytesToBigInt(ecdh.getPrivateKey());
    const point = ecdh.getPublicKey(); // 0x04 ‖ X ‖ Y
    const r = mod(bytesToBigInt(point.subarray(1, 1 + c.size)), c.n);
    if (r === 0n) continue;
    const b = randomScalar(c.n, c.size);
    const kbInv = invert(mod(k * b, c.n), c.n);
    const t = mod(e * b + r * mod(d * b, c.n), c.n);
    const s = mod(kbInv * t, c.n);
    if (s === 0n) continue;
    return { r, s };
  }
}

/** Checks (r, s) against `digest` taken as is. Out-of-range values are simply invalid. */
export function verifyDigest(curve: EcdsaCurveName, publicKey: KeyObject, digest: Buffer, sig: EcdsaSignatureValues): boolean {
  const c = CURVES[curve];
  const { r, s } = sig;
  if (r <= 0n || s <= 0n || r >= c.n || s >= c.n) return false;
  const jwk = publicKey.export({ format: 'jwk' });
  const Q: Jacobian = { x: jwkScalar(jwk.x), y: jwkScalar(jwk.y), z: 1n };
  const G: Jacobian = { x: c.gx, y: c.gy, z: 1n };
  const w = invert(s, c.n);
  const e = digestToScalar(curve, digest);
  const X = affineX(twinMultiply(mod(e * w, c.n), G, mod(r * w, c.n), Q, c.p), c.p);
  return X !== undefined && mod(X, c.n) === r;
}

/** Test hook: n·G and friends, computed with the same arithmetic verification relies on. */
export function multiplyBase(curve: EcdsaCurveName, scalar: bigint): { x: bigint; y: bigint } | undefined {
  const c = CURVES[curve];
  const R = twinMultiply(scalar, { x: c.gx, y: c.gy, z: 1n }, 0n, INFINITY, c.p);
  if (R.z === 0n) return undefined;
  const zi = invert(R.z, c.p);
  return { x: mod(R.x * zi * zi, c.p), y: mod(R.y * zi * zi * zi, c.p) };
}

export function scalarBytes(curve: EcdsaCurveName, n: bigint): Buffer {
  return bigIntToBytes(n, CURVES[curve].size);
}
