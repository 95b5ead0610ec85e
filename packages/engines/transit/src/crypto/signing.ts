import { constants, privateEncrypt, publicDecrypt, sign as nodeSign, timingSafeEqual, verify as nodeVerify, type KeyObject } from 'node:crypto';
import {
  DerError, TAG_INTEGER, TAG_SEQUENCE, bigIntToBytes, bytesToBigInt, decodeInteger, encodeInteger, encodeSequence,
  readChildren, readElement, readWhole, type DerElement,
} from './der';
import { curveParams, signDigest, verifyDigest, type EcdsaCurveName } from './ecdsa-digest';
import { CryptoInputError } from './errors';
import { digestSize, isDigestAlgorithm, nodeDigestName, type DigestAlgorithm } from './hashing';
import { keyTypeInfo, type AsymmetricKeyType, type EcdsaKeyType, type RsaKeyType } from './key-types';
import { digestInfo, maxPssSaltLength, pkcs1v15Encode, pssEncode, pssVerify } from './rsa-padding';

export type SignatureHashAlgorithm = DigestAlgorithm | 'none';
export type SignatureAlgorithm = 'pss' | 'pkcs1v15';
export type MarshalingAlgorithm = 'asn1' | 'jws';
/** A number is an exact salt length in bytes. */
export type SaltLength = 'auto' | 'hash' | number;

export interface SignOptions {
  hashAlgorithm: SignatureHashAlgorithm;
  prehashed: boolean;
  signatureAlgorithm: SignatureAlgorithm;
  saltLength: SaltLength;
  marshaling: MarshalingAlgorithm;
}

export const DEFAULT_SIGN_OPTIONS: Readonly<SignOptions> = {
  hashAlgorithm: 'sha2-256',
  prehashed: false,
  signatureAlgorithm: 'pss',
  saltLength: 'auto',
  marshaling: 'asn1',
};

const CURVE_OF: Record<EcdsaKeyType, EcdsaCurveName> = { 'ecdsa-p256': 'P-256', 'ecdsa-p384': 'P-384', 'ecdsa-p521': 'P-521' };

/**
 * salt_length as the request field carries it. Vault hands the number straight to Go's rsa
 * package, where 0 means "auto" and -1 means "hash"; both are kept so a request that worked
 * against Vault means the same here.
 */
export function parseSaltLength(raw: string | number): SaltLength {
  const text = String(raw).trim().toLowerCase();
  if (text === 'auto') return 'auto';
  if (text === 'hash') return 'hash';
  if (!/^-?\d+$/.test(text)) throw new CryptoInputError('salt_length', `salt_length neither 'auto', 'hash', nor an int: ${String(raw)}`);
  const n = Number(text);
  if (n < -1 || !Number.isSafeInteger(n)) throw new CryptoInputError('salt_length', `salt_length is invalid: ${text}`);
  if (n === 0) return 'auto';
  if (n === -1) return 'hash';
  return n;
}

/** Signature bytes to the text after the version prefix: std base64 for asn1, unpadded base64url for jws, for every key type. */
export function encodeSignature(signature: Buffer, marshaling: MarshalingAlgorithm): string {
  return signature.toString(marshaling === 'jws' ? 'base64url' : 'base64');
}

export function decodeSignature(text: string, marshaling: MarshalingAlgorithm): Buffer {
  const ok = marshaling === 'jws' ? /^[A-Za-z0-9_-]*$/.test(text) && text.length % 4 !== 1
    : /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text);
  if (!ok) throw new CryptoInputError('signature', 'invalid base64 signature value');
  return Buffer.from(text, marshaling === 'jws' ? 'base64url' : 'base64');
}

function resolveOptions(type: AsymmetricKeyType, partial: Partial<SignOptions>): SignOptions {
  const opts: SignOptions = { ...DEFAULT_SIGN_OPTIONS, ...partial };
  const h = opts.hashAlgorithm as string;
  if (h !== 'none' && !isDigestAlgorithm(h)) throw new CryptoInputError('hash_algorithm', `unsupported hash_algorithm ${h}`);
  if (opts.marshaling !== 'asn1' && opts.marshaling !== 'jws') {
    throw new CryptoInputError('marshaling_algorithm', `invalid marshaling_algorithm "${String(opts.marshaling)}"`);
  }
  if (opts.hashAlgorithm === 'none' && (!opts.prehashed || opts.signatureAlgorithm !== 'pkcs1v15')) {
    throw new CryptoInputError('hash_algorithm', 'hash_algorithm=none requires both prehashed=true and signature_algorithm=pkcs1v15');
  }
  if (type === 'ed25519' && opts.hashAlgorithm === 'sha2-512') {
    // With ed25519, sha2-512 asks Vault Enterprise for Ed25519ph; plain Ed25519 would quietly mean something else.
    throw new CryptoInputError('hash_algorithm', 'hash_algorithm sha2-512 (Ed25519ph) is not supported for ed25519 keys');
  }
  if (keyTypeInfo(type).family === 'rsa') {
    if (opts.signatureAlgorithm !== 'pss' && opts.signatureAlgorithm !== 'pkcs1v15') {
      throw new CryptoInputError('signature_algorithm', `unsupported signature_algorithm "${String(opts.signatureAlgorithm)}"; use pss or pkcs1v15`);
    }
    const s = opts.saltLength;
    if (s !== 'auto' && s !== 'hash' && !(typeof s === 'number' && Number.isSafeInteger(s) && s >= 0)) {
      throw new CryptoInputError('salt_length', `salt_length is invalid: ${String(s)}`);
    }
  }
  return opts;
}

function checkKey(type: AsymmetricKeyType, key: KeyObject): void {
  const info = keyTypeInfo(type);
  const kind = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  const fits = info.family === 'ed25519' ? kind === 'ed25519'
    : info.family === 'ecdsa' ? kind === 'ec' && details.namedCurve === info.nodeCurve
      : kind === 'rsa' && details.modulusLength === info.keySize;
  // The key model picked the wrong key for the type: a server bug, not a bad request.
  if (!fits) throw new TypeError(`key does not match key type ${type}`);
}

function requirePrehashedLength(alg: DigestAlgorithm, input: Buffer): void {
  if (input.length !== digestSize(alg)) {
    throw new CryptoInputError('input', `prehashed input must be a ${digestSize(alg)}-byte ${alg} digest, got ${input.length} bytes`);
  }
}

/**
 * Signs `input` with the key version's private key. For RSA and ECDSA the input is hashed with
 * hashAlgorithm first unless `prehashed`; ed25519 always signs the input itself. Returns raw
 * signature bytes (DER or r‖s for ECDSA per marshaling); encodeSignature makes the wire text.
 */
export function sign(type: AsymmetricKeyType, privateKey: KeyObject, input: Buffer, options: Partial<SignOptions> = {}): Buffer {
  const opts = resolveOptions(type, options);
  checkKey(type, privateKey);
  const family = keyTypeInfo(type).family;
  if (family === 'ed25519') return nodeSign(null, input, privateKey);
  if (family === 'ecdsa') return signEcdsa(type as EcdsaKeyType, privateKey, input, opts);
  return signRsa(type as RsaKeyType, privateKey, input, opts);
}

/**
 * True when `signature` is a valid signature of `input`. A well-formed but wrong signature gives
 * false; one that cannot be parsed at all (bad ASN.1, trailing bytes) throws CryptoInputError, the
 * distinction Vault draws between {valid: false} and a 400.
 */
export function verify(type: AsymmetricKeyType, publicKey: KeyObject, input: Buffer, signature: Buffer, options: Partial<SignOptions> = {}): boolean {
  const opts = resolveOptions(type, options);
  checkKey(type, publicKey);
  const family = keyTypeInfo(type).family;
  if (family === 'ed25519') return signature.length === 64 && nodeVerify(null, input, publicKey, signature);
  if (family === 'ecdsa') return verifyEcdsa(type as EcdsaKeyType, publicKey, input, signature, opts);
  return verifyRsa(type as RsaKeyType, publicKey, input, signature, opts);
}

// ECDSA ---------------------------------------------------------------------------------------

function signEcdsa(type: EcdsaKeyType, key: KeyObject, input: Buffer, opts: SignOptions): Buffer {
  const curve = CURVE_OF[type];
  const size = curveParams(curve).size;
  if (opts.prehashed || opts.hashAlgorithm === 'none') {
    const { r, s } = signDigest(curve, key, input);
    return opts.marshaling === 'jws'
      ? Buffer.concat([bigIntToBytes(r, size), bigIntToBytes(s, size)])
      : encodeSequence(encodeInteger(r), encodeInteger(s));
  }
  return nodeSign(nodeDigestName(opts.hashAlgorithm), input, { key, dsaEncoding: opts.marshaling === 'jws' ? 'ieee-p1363' : 'der' });
}

function parseEcdsaSignature(signature: Buffer, marshaling: MarshalingAlgorithm): { r: bigint; s: bigint } {
  if (marshaling === 'jws') {
    // Split in half whatever the length, as Vault does; a wrong length then just fails to verify.
    const half = Math.floor(signature.length / 2);
    return { r: bytesToBigInt(signature.subarray(0, half)), s: bytesToBigInt(signature.subarray(half)) };
  }
  let parts: DerElement[];
  try {
    if (readElement(signature, 0).end !== signature.length) throw new CryptoInputError('signature', 'supplied signature contains extra data');
    parts = readChildren(readWhole(signature, TAG_SEQUENCE));
  } catch (err) {
    if (err instanceof DerError) throw new CryptoInputError('signature', 'supplied signature is invalid');
    throw err;
  }
  if (parts.length !== 2 || parts.some((p) => p.tag !== TAG_INTEGER)) throw new CryptoInputError('signature', 'supplied signature is invalid');
  try {
    return { r: decodeInteger(parts[0]!.value), s: decodeInteger(parts[1]!.value) };
  } catch {
    throw new CryptoInputError('signature', 'supplied signature is invalid');
  }
}

function verifyEcdsa(type: EcdsaKeyType, key: KeyObject, input: Buffer, signature: Buffer, opts: SignOptions): boolean {
  const curve = CURVE_OF[type];
  const { n, size } = curveParams(curve);
  const { r, s } = parseEcdsaSignature(signature, opts.marshaling);
  if (r <= 0n || s <= 0n || r >= n || s >= n) return false;
  if (opts.prehashed || opts.hashAlgorithm === 'none') return verifyDigest(curve, key, input, { r, s });
  const fixed = Buffer.concat([bigIntToBytes(r, size), bigIntToBytes(s, size)]);
  return nodeVerify(nodeDigestName(opts.hashAlgorithm), input, { key, dsaEncoding: 'ieee-p1363' }, fixed);
}

// RSA -----------------------------------------------------------------------------------------

function pssSaltFor(opts: SignOptions, hash: DigestAlgorithm, modulusBits: number): number | 'auto' {
  const max = maxPssSaltLength(modulusBits, hash);
  if (opts.saltLength === 'auto') return 'auto';
  const n = opts.saltLength === 'hash' ? digestSize(hash) : opts.saltLength;
  if (n > max) throw new CryptoInputError('salt_length', `requested salt_length ${n} is invalid: at most ${max} for this key and hash`);
  return n;
}

function modulusBits(key: KeyObject): number {
  return key.asymmetricKeyDetails!.modulusLength!;
}

function signRsa(type: RsaKeyType, key: KeyObject, input: Buffer, opts: SignOptions): Buffer {
  const bits = modulusBits(key);
  const k = Math.ceil(bits / 8);
  if (opts.hashAlgorithm === 'none') {
    // RFC 8017 §9.2 without the DigestInfo: the caller's bytes go straight into the padding.
    if (input.length + 11 > k) throw new CryptoInputError('input', `input too long for hash_algorithm none: at most ${k - 11} bytes for this key`);
    return privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, input);
  }
  const hash = opts.hashAlgorithm;
  if (opts.signatureAlgorithm === 'pkcs1v15') {
    if (!opts.prehashed) return nodeSign(nodeDigestName(hash), input, { key, padding: constants.RSA_PKCS1_PADDING });
    requirePrehashedLength(hash, input);
    return privateEncrypt({ key, padding: constants.RSA_PKCS1_PADDING }, digestInfo(hash, input));
  }
  const salt = pssSaltFor(opts, hash, bits);
  if (!opts.prehashed) {
    const saltLength = salt === 'auto' ? constants.RSA_PSS_SALTLEN_MAX_SIGN : salt;
    return nodeSign(nodeDigestName(hash), input, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength });
  }
  requirePrehashedLength(hash, input);
  const em = pssEncode(hash, input, bits, salt === 'auto' ? maxPssSaltLength(bits, hash) : salt);
  return privateEncrypt({ key, padding: constants.RSA_NO_PADDING }, em);
}

/** s^e mod n as k bytes, or undefined when the signature is not a number below n. */
function rsaPublicOp(key: KeyObject, signature: Buffer): Buffer | undefined {
  try {
    return publicDecrypt({ key, padding: constants.RSA_NO_PADDING }, signature);
  } catch {
    return undefined;
  }
}

function verifyRsa(type: RsaKeyType, key: KeyObject, input: Buffer, signature: Buffer, opts: SignOptions): boolean {
  const bits = modulusBits(key);
  const k = Math.ceil(bits / 8);
  // Go refuses any signature that is not exactly the modulus size; OpenSSL would accept a shorter one.
  if (signature.length !== k) return false;
  if (opts.hashAlgorithm === 'none') return pkcs1v15Matches(key, signature, input, k);
  const hash = opts.hashAlgorithm;
  if (opts.signatureAlgorithm === 'pkcs1v15') {
    if (!opts.prehashed) return nodeVerify(nodeDigestName(hash), input, { key, padding: constants.RSA_PKCS1_PADDING }, signature);
    if (input.length !== digestSize(hash)) return false;
    return pkcs1v15Matches(key, signature, digestInfo(hash, input), k);
  }
  const salt = pssSaltFor(opts, hash, bits);
  if (!opts.prehashed) {
    const saltLength = salt === 'auto' ? constants.RSA_PSS_SALTLEN_AUTO : salt;
    return nodeVerify(nodeDigestName(hash), input, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength }, signature);
  }
  if (input.length !== digestSize(hash)) return false;
  const em = rsaPublicOp(key, signature);
  return em !== undefined && pssVerify(hash, input, em, bits, salt === 'auto' ? undefined : salt);
}

function pkcs1v15Matches(key: KeyObject, signature: Buffer, t: Buffer, k: number): boolean {
  const expected = pkcs1v15Encode(t, k);
  const em = rsaPublicOp(key, signature);
  return expected !== undefined && em !== undefined && em.length === k && timingSafeEqual(em, expected);
}
