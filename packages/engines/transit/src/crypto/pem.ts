import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { TAG_INTEGER, TAG_OCTET_STRING, TAG_OID, TAG_SEQUENCE, encodeOidValue, readChildren, readWhole } from './der';
import { CryptoInputError } from './errors';
import { ed25519PrivateKeyFromSeed } from './kdf';
import { HMAC_MAX_KEY_SIZE, HMAC_MIN_KEY_SIZE, isAsymmetricKeyType, keyTypeInfo, type AsymmetricKeyType, type KeyType } from './key-types';

/*
 * Key material in the shapes Vault puts on the wire. Where Vault trims the trailing newline of a
 * PEM block and where it does not differs by key type and endpoint; callers comparing output
 * byte for byte with Vault depend on it, so each function below keeps Vault's choice.
 */

const base64 = (b: Buffer): string => b.toString('base64');

function describeKey(key: KeyObject): string {
  const d = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case 'rsa':
    case 'rsa-pss':
      return `an RSA key (${d.modulusLength ?? '?'} bits)`;
    case 'ec':
      return `an EC key on curve ${d.namedCurve ?? '?'}`;
    default:
      return `an ${key.asymmetricKeyType ?? 'unknown'} key`;
  }
}

function checkKeyType(type: AsymmetricKeyType, key: KeyObject, field: string): void {
  const info = keyTypeInfo(type);
  const d = key.asymmetricKeyDetails ?? {};
  const ok = info.family === 'ed25519' ? key.asymmetricKeyType === 'ed25519'
    : info.family === 'ecdsa' ? key.asymmetricKeyType === 'ec' && d.namedCurve === info.nodeCurve
      : key.asymmetricKeyType === 'rsa' && d.modulusLength === info.keySize;
  if (!ok) throw new CryptoInputError(field, `${field} holds ${describeKey(key)}, which does not match key type ${type}`);
}

/** Symmetric (AEAD, hmac) key material and the per-version HMAC secret: plain base64. */
export function exportSymmetricKey(key: Buffer): string {
  return base64(key);
}

/** Ed25519 private key as Go stores it: 32-byte seed ‖ 32-byte public key. */
export function ed25519RawPrivateKey(privateKey: KeyObject): Buffer {
  const jwk = privateKey.export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || !jwk.d || !jwk.x) throw new TypeError('not an ed25519 private key');
  return Buffer.concat([Buffer.from(jwk.d, 'base64url'), Buffer.from(jwk.x, 'base64url')]);
}

export function ed25519RawPublicKey(publicKey: KeyObject): Buffer {
  const jwk = publicKey.export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || !jwk.x) throw new TypeError('not an ed25519 key');
  return Buffer.from(jwk.x, 'base64url');
}

/** From 32 bytes (seed) or Go's 64 (seed ‖ public, the public half checked against the seed). */
export function ed25519PrivateKeyFromRaw(raw: Buffer, field = 'key'): KeyObject {
  if (raw.length !== 32 && raw.length !== 64) throw new CryptoInputError(field, `${field}: an ed25519 private key is 32 or 64 bytes, got ${raw.length}`);
  const key = ed25519PrivateKeyFromSeed(raw.subarray(0, 32));
  if (raw.length === 64 && !ed25519RawPublicKey(createPublicKey(key)).equals(raw.subarray(32))) {
    throw new CryptoInputError(field, `${field}: the ed25519 public half does not belong to the seed`);
  }
  return key;
}

export function ed25519PublicKeyFromRaw(raw: Buffer, field = 'public_key'): KeyObject {
  if (raw.length !== 32) throw new CryptoInputError(field, `${field}: an ed25519 public key is 32 bytes, got ${raw.length}`);
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
}

/**
 * export/signing-key (and export/encryption-key for RSA): ECDSA as a SEC1 "EC PRIVATE KEY" PEM
 * without trailing newline, RSA as a PKCS#1 "RSA PRIVATE KEY" PEM with it, ed25519 as base64 of
 * the 64-byte seed ‖ public form.
 */
export function exportPrivateKey(type: AsymmetricKeyType, privateKey: KeyObject): string {
  const family = keyTypeInfo(type).family;
  if (family === 'ed25519') return base64(ed25519RawPrivateKey(privateKey));
  if (family === 'ecdsa') return (privateKey.export({ format: 'pem', type: 'sec1' }) as string).trim();
  return privateKey.export({ format: 'pem', type: 'pkcs1' }) as string;
}

/** export/public-key: SPKI PEM (trimmed for ECDSA, newline-terminated for RSA), raw base64 for ed25519. */
export function exportPublicKey(type: AsymmetricKeyType, publicKey: KeyObject): string {
  const family = keyTypeInfo(type).family;
  if (family === 'ed25519') return base64(ed25519RawPublicKey(publicKey));
  const pem = publicKey.export({ format: 'pem', type: 'spki' }) as string;
  return family === 'ecdsa' ? pem.trim() : pem;
}

/** The `public_key` of a version in a key read: newline-terminated SPKI PEM, or raw base64 for ed25519. */
export function formatPublicKey(type: AsymmetricKeyType, publicKey: KeyObject): string {
  if (keyTypeInfo(type).family === 'ed25519') return base64(ed25519RawPublicKey(publicKey));
  return publicKey.export({ format: 'pem', type: 'spki' }) as string;
}

/** Loads a private key stored as PKCS#8 DER. */
export function privateKeyFromDer(der: Buffer): KeyObject {
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

const RSASSA_PSS_OID = encodeOidValue('1.2.840.113549.1.1.10');

/**
 * PKCS#8 whose algorithm is RSASSA-PSS (what `openssl genpkey -algorithm RSA-PSS` writes) carries
 * an ordinary PKCS#1 key inside. Vault accepts those as plain RSA keys, so we unwrap them too.
 */
function rsaPssPkcs8ToRsa(der: Buffer): KeyObject | undefined {
  try {
    const [version, algorithm, privateKey] = readChildren(readWhole(der, TAG_SEQUENCE));
    if (version?.tag !== TAG_INTEGER || algorithm?.tag !== TAG_SEQUENCE || privateKey?.tag !== TAG_OCTET_STRING) return undefined;
    const oid = readChildren(algorithm.value)[0];
    if (oid?.tag !== TAG_OID || !oid.value.equals(RSASSA_PSS_OID)) return undefined;
    return createPrivateKey({ key: privateKey.value, format: 'der', type: 'pkcs1' });
  } catch {
    return undefined;
  }
}

export interface ParsedPrivateKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** Canonical PKCS#8 DER of the key as it will be used (RSA-PSS input comes back as plain RSA). */
  privateKeyDer: Buffer;
}

/**
 * The PKCS#8 DER that import unwraps, checked against the key type the request names, so that an
 * RSA key imported as ecdsa-p256 is refused with a message saying what it actually is.
 */
export function parseImportedPrivateKey(type: AsymmetricKeyType, der: Buffer, field = 'ciphertext'): ParsedPrivateKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  } catch (err) {
    throw new CryptoInputError(field, `${field}: error parsing asymmetric key: not a PKCS#8 private key (${(err as Error).message})`);
  }
  if (privateKey.asymmetricKeyType === 'rsa-pss') {
    const plain = rsaPssPkcs8ToRsa(der);
    if (!plain) throw new CryptoInputError(field, `${field}: error parsing asymmetric key: unreadable RSA-PSS private key`);
    privateKey = plain;
  }
  checkKeyType(type, privateKey, field);
  return { privateKey, publicKey: createPublicKey(privateKey), privateKeyDer: privateKey.export({ format: 'der', type: 'pkcs8' }) };
}

/** A `public_key` field of import: one "PUBLIC KEY" (SPKI) PEM block, of the named type. */
export function parsePublicKeyPem(type: AsymmetricKeyType, pem: string, field = 'public_key'): KeyObject {
  const match = /-----BEGIN ([A-Z0-9 ]+)-----/.exec(pem);
  if (!match) throw new CryptoInputError(field, `error parsing ${field}: not in PEM format`);
  if (match[1] !== 'PUBLIC KEY') {
    throw new CryptoInputError(field, `error parsing ${field}: expected a "PUBLIC KEY" (SPKI) PEM block, got "${match[1]}"`);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem', type: 'spki' });
  } catch (err) {
    throw new CryptoInputError(field, `error parsing ${field}: ${(err as Error).message}`);
  }
  checkKeyType(type, key, field);
  return key;
}

/** Raw key bytes for import of symmetric types: the exact size for AEAD types, 32–512 bytes for hmac. */
export function checkImportedSymmetricKey(type: KeyType, key: Buffer, field = 'ciphertext'): Buffer {
  const info = keyTypeInfo(type);
  const ok = info.family === 'aead' ? key.length === info.keySize
    : info.family === 'hmac' ? key.length >= HMAC_MIN_KEY_SIZE && key.length <= HMAC_MAX_KEY_SIZE
      : false;
  if (!ok) {
    if (isAsymmetricKeyType(type) || !info.symmetric) throw new CryptoInputError('type', `type ${type} does not take raw key bytes`);
    throw new CryptoInputError(field, `${field}: invalid key size ${key.length} bytes for key type ${type}`);
  }
  return key;
}

/** Whether a private key is the other half of a public key imported earlier (import_version). */
export function keysMatch(privateKey: KeyObject, publicKey: KeyObject): boolean {
  const a = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  const b = publicKey.export({ format: 'der', type: 'spki' });
  return a.equals(b);
}
