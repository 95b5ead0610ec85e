import { generateKeyPair, randomBytes, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { CryptoInputError } from './errors';

export type KeyType =
  | 'aes128-gcm96' | 'aes256-gcm96' | 'chacha20-poly1305'
  | 'ed25519' | 'ecdsa-p256' | 'ecdsa-p384' | 'ecdsa-p521'
  | 'rsa-2048' | 'rsa-3072' | 'rsa-4096'
  | 'hmac' | 'managed_key';

export type AeadKeyType = 'aes128-gcm96' | 'aes256-gcm96' | 'chacha20-poly1305';
export type EcdsaKeyType = 'ecdsa-p256' | 'ecdsa-p384' | 'ecdsa-p521';
export type RsaKeyType = 'rsa-2048' | 'rsa-3072' | 'rsa-4096';
export type AsymmetricKeyType = 'ed25519' | EcdsaKeyType | RsaKeyType;

export type KeyFamily = 'aead' | 'ed25519' | 'ecdsa' | 'rsa' | 'hmac' | 'managed';

export interface KeyTypeInfo {
  family: KeyFamily;
  /** Key material is a byte string (AEAD and hmac keys) rather than a key pair. */
  symmetric: boolean;
  supportsEncryption: boolean;
  supportsDecryption: boolean;
  supportsSigning: boolean;
  supportsDerivation: boolean;
  supportsConvergent: boolean;
  supportsAssociatedData: boolean;
  /** Sign and verify hash the input with hash_algorithm unless prehashed (RSA and ECDSA). */
  hashesSignatureInput: boolean;
  /** Can be created from a public key alone through import. */
  supportsPublicKeyImport: boolean;
  /** Accepted by keys/:name/import. */
  importable: boolean;
  /**
   * Key size in bytes for symmetric types (the default for hmac), modulus size in bits for RSA,
   * curve order size in bits for ECDSA, 32 for ed25519; 0 when not applicable.
   */
  keySize: number;
  /** The `name` Vault reports per version in a key read of an asymmetric key. */
  publicKeyName?: string;
  /** The curve as node:crypto names it, for ECDSA. */
  nodeCurve?: 'prime256v1' | 'secp384r1' | 'secp521r1';
  /** The integer used for `type` in backups. */
  backupType: number;
}

const aead = (keySize: number, backupType: number): KeyTypeInfo => ({
  family: 'aead', symmetric: true,
  supportsEncryption: true, supportsDecryption: true, supportsSigning: false,
  supportsDerivation: true, supportsConvergent: true, supportsAssociatedData: true,
  hashesSignatureInput: false, supportsPublicKeyImport: false, importable: true,
  keySize, backupType,
});

const ecdsa = (bits: number, name: string, nodeCurve: KeyTypeInfo['nodeCurve'], backupType: number): KeyTypeInfo => ({
  family: 'ecdsa', symmetric: false,
  supportsEncryption: false, supportsDecryption: false, supportsSigning: true,
  supportsDerivation: false, supportsConvergent: false, supportsAssociatedData: false,
  hashesSignatureInput: true, supportsPublicKeyImport: true, importable: true,
  keySize: bits, publicKeyName: name, nodeCurve, backupType,
});

const rsa = (bits: number, backupType: number): KeyTypeInfo => ({
  family: 'rsa', symmetric: false,
  supportsEncryption: true, supportsDecryption: true, supportsSigning: true,
  supportsDerivation: false, supportsConvergent: false, supportsAssociatedData: false,
  hashesSignatureInput: true, supportsPublicKeyImport: true, importable: true,
  keySize: bits, publicKeyName: `rsa-${bits}`, backupType,
});

const KEY_TYPE_INFO: Record<KeyType, KeyTypeInfo> = {
  'aes256-gcm96': aead(32, 0),
  'ecdsa-p256': ecdsa(256, 'P-256', 'prime256v1', 1),
  ed25519: {
    family: 'ed25519', symmetric: false,
    supportsEncryption: false, supportsDecryption: false, supportsSigning: true,
    supportsDerivation: true, supportsConvergent: false, supportsAssociatedData: false,
    hashesSignatureInput: false, supportsPublicKeyImport: true, importable: true,
    keySize: 32, publicKeyName: 'ed25519', backupType: 2,
  },
  'rsa-2048': rsa(2048, 3),
  'rsa-4096': rsa(4096, 4),
  'chacha20-poly1305': aead(32, 5),
  'ecdsa-p384': ecdsa(384, 'P-384', 'secp384r1', 6),
  'ecdsa-p521': ecdsa(521, 'P-521', 'secp521r1', 7),
  'aes128-gcm96': aead(16, 8),
  'rsa-3072': rsa(3072, 9),
  managed_key: {
    // What a managed key can do depends on the external key behind it; Vault reports it as able
    // to encrypt, decrypt and sign, and never offers HMAC or derivation for it.
    family: 'managed', symmetric: false,
    supportsEncryption: true, supportsDecryption: true, supportsSigning: true,
    supportsDerivation: false, supportsConvergent: false, supportsAssociatedData: true,
    hashesSignatureInput: true, supportsPublicKeyImport: false, importable: false,
    keySize: 0, backupType: 10,
  },
  hmac: {
    family: 'hmac', symmetric: true,
    supportsEncryption: false, supportsDecryption: false, supportsSigning: false,
    supportsDerivation: false, supportsConvergent: false, supportsAssociatedData: false,
    hashesSignatureInput: false, supportsPublicKeyImport: false, importable: true,
    keySize: 32, backupType: 11,
  },
};

export const KEY_TYPES: readonly KeyType[] = Object.keys(KEY_TYPE_INFO) as KeyType[];

export const HMAC_MIN_KEY_SIZE = 32;
export const HMAC_MAX_KEY_SIZE = 512;

export function isKeyType(value: unknown): value is KeyType {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(KEY_TYPE_INFO, value);
}

export function keyTypeInfo(type: KeyType): KeyTypeInfo {
  return KEY_TYPE_INFO[type];
}

export function keyTypeFromBackupType(n: number): KeyType | undefined {
  return KEY_TYPES.find((t) => KEY_TYPE_INFO[t].backupType === n);
}

export function isAeadKeyType(type: KeyType): type is AeadKeyType {
  return KEY_TYPE_INFO[type].family === 'aead';
}

export function isEcdsaKeyType(type: KeyType): type is EcdsaKeyType {
  return KEY_TYPE_INFO[type].family === 'ecdsa';
}

export function isRsaKeyType(type: KeyType): type is RsaKeyType {
  return KEY_TYPE_INFO[type].family === 'rsa';
}

export function isAsymmetricKeyType(type: KeyType): type is AsymmetricKeyType {
  const family = KEY_TYPE_INFO[type].family;
  return family === 'ed25519' || family === 'ecdsa' || family === 'rsa';
}

export type KeyMaterial =
  | { kind: 'symmetric'; key: Buffer }
  | {
    kind: 'asymmetric';
    privateKey: KeyObject;
    publicKey: KeyObject;
    /** PKCS#8 DER: the form to store, and the form import accepts. */
    privateKeyDer: Buffer;
  };

/** Checks an hmac key_size (bytes) as creation and import do. */
export function checkHmacKeySize(size: number, field = 'key_size'): number {
  if (!Number.isInteger(size) || size < HMAC_MIN_KEY_SIZE || size > HMAC_MAX_KEY_SIZE) {
    throw new CryptoInputError(field, `invalid ${field} ${size} for an hmac key: must be between ${HMAC_MIN_KEY_SIZE} and ${HMAC_MAX_KEY_SIZE} bytes`);
  }
  return size;
}

const generateKeyPairAsync = promisify(generateKeyPair);

/**
 * Fresh key material for one key version. Asynchronous because RSA-4096 generation takes long
 * enough to stall every other request if it ran on the event loop. `hmacKeySize` (bytes) only
 * applies to the hmac type, as in Vault.
 */
export async function generateKeyMaterial(type: KeyType, hmacKeySize?: number): Promise<KeyMaterial> {
  const info = KEY_TYPE_INFO[type];
  switch (info.family) {
    case 'aead':
      return { kind: 'symmetric', key: randomBytes(info.keySize) };
    case 'hmac':
      return { kind: 'symmetric', key: randomBytes(checkHmacKeySize(hmacKeySize ?? info.keySize)) };
    case 'managed':
      throw new CryptoInputError('type', 'managed_key material lives in an external key manager and cannot be generated here');
    case 'ed25519': {
      const { privateKey, publicKey } = await generateKeyPairAsync('ed25519');
      return asymmetric(privateKey, publicKey);
    }
    case 'ecdsa': {
      const { privateKey, publicKey } = await generateKeyPairAsync('ec', { namedCurve: info.nodeCurve! });
      return asymmetric(privateKey, publicKey);
    }
    case 'rsa': {
      const { privateKey, publicKey } = await generateKeyPairAsync('rsa', { modulusLength: info.keySize, publicExponent: 65537 });
      return asymmetric(privateKey, publicKey);
    }
  }
}

function asymmetric(privateKey: KeyObject, publicKey: KeyObject): KeyMaterial {
  return { kind: 'asymmetric', privateKey, publicKey, privateKeyDer: privateKey.export({ format: 'der', type: 'pkcs8' }) };
}

/** A random 32-byte secret, as every non-hmac key version carries for the hmac endpoint. */
export function generateHmacSecret(): Buffer {
  return randomBytes(32);
}
