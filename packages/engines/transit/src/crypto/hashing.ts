import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { CryptoInputError } from './errors';
import { keyObjectOf } from './key-objects';

/** The algorithms the hash and hmac endpoints accept, spelled as Vault spells them. */
export type HashAlgorithm =
  | 'sha2-224' | 'sha2-256' | 'sha2-384' | 'sha2-512'
  | 'sha3-224' | 'sha3-256' | 'sha3-384' | 'sha3-512';

/** Signing also accepts sha1, which the hash and hmac endpoints do not. */
export type DigestAlgorithm = HashAlgorithm | 'sha1';

export const HASH_ALGORITHMS: readonly HashAlgorithm[] = [
  'sha2-224', 'sha2-256', 'sha2-384', 'sha2-512', 'sha3-224', 'sha3-256', 'sha3-384', 'sha3-512',
];

interface DigestSpec {
  node: string;
  size: number;
  /** DER contents of the algorithm OID, for PKCS#1 v1.5 DigestInfo. */
  oid: string;
}

const DIGESTS: Record<DigestAlgorithm, DigestSpec> = {
  sha1: { node: 'sha1', size: 20, oid: '1.3.14.3.2.26' },
  'sha2-224': { node: 'sha224', size: 28, oid: '2.16.840.1.101.3.4.2.4' },
  'sha2-256': { node: 'sha256', size: 32, oid: '2.16.840.1.101.3.4.2.1' },
  'sha2-384': { node: 'sha384', size: 48, oid: '2.16.840.1.101.3.4.2.2' },
  'sha2-512': { node: 'sha512', size: 64, oid: '2.16.840.1.101.3.4.2.3' },
  'sha3-224': { node: 'sha3-224', size: 28, oid: '2.16.840.1.101.3.4.2.7' },
  'sha3-256': { node: 'sha3-256', size: 32, oid: '2.16.840.1.101.3.4.2.8' },
  'sha3-384': { node: 'sha3-384', size: 48, oid: '2.16.840.1.101.3.4.2.9' },
  'sha3-512': { node: 'sha3-512', size: 64, oid: '2.16.840.1.101.3.4.2.10' },
};

export function isHashAlgorithm(value: unknown): value is HashAlgorithm {
  return typeof value === 'string' && (HASH_ALGORITHMS as readonly string[]).includes(value);
}

export function isDigestAlgorithm(value: unknown): value is DigestAlgorithm {
  return value === 'sha1' || isHashAlgorithm(value);
}

/** The name node:crypto and openssl know the algorithm by. */
export function nodeDigestName(algorithm: DigestAlgorithm): string {
  return DIGESTS[algorithm].node;
}

export function digestSize(algorithm: DigestAlgorithm): number {
  return DIGESTS[algorithm].size;
}

export function digestOid(algorithm: DigestAlgorithm): string {
  return DIGESTS[algorithm].oid;
}

function requireHashAlgorithm(algorithm: string, field: string): HashAlgorithm {
  if (!isHashAlgorithm(algorithm)) {
    throw new CryptoInputError(field, `unsupported ${field} "${algorithm}"; use one of ${HASH_ALGORITHMS.join(', ')}`);
  }
  return algorithm;
}

export function hash(algorithm: HashAlgorithm, input: Buffer): Buffer {
  return createHash(nodeDigestName(requireHashAlgorithm(algorithm, 'algorithm'))).update(input).digest();
}

/** `digest` for any signing hash, sha1 included; the public `hash` keeps to the endpoint's list. */
export function digest(algorithm: DigestAlgorithm, input: Buffer): Buffer {
  return createHash(nodeDigestName(algorithm)).update(input).digest();
}

export function hmac(algorithm: HashAlgorithm, key: Buffer, input: Buffer): Buffer {
  return createHmac(nodeDigestName(requireHashAlgorithm(algorithm, 'algorithm')), keyObjectOf(key)).update(input).digest();
}

/**
 * Compares in constant time so that a caller probing HMACs byte by byte learns nothing from the
 * response time. A MAC of the wrong length is simply not equal.
 */
export function hmacVerify(algorithm: HashAlgorithm, key: Buffer, input: Buffer, mac: Buffer): boolean {
  const expected = hmac(algorithm, key, input);
  return mac.length === expected.length && timingSafeEqual(mac, expected);
}
