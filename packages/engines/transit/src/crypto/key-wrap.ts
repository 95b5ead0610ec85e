import { constants, createCipheriv, createDecipheriv, privateDecrypt, publicEncrypt, randomBytes, type KeyObject } from 'node:crypto';
import { CryptoInputError } from './errors';

/** hash_function values of the import endpoints (and byok-export's `hash`). */
export type WrapHash = 'SHA1' | 'SHA224' | 'SHA256' | 'SHA384' | 'SHA512';

export const WRAP_HASHES: readonly WrapHash[] = ['SHA1', 'SHA224', 'SHA256', 'SHA384', 'SHA512'];

const NODE_HASH: Record<WrapHash, string> = { SHA1: 'sha1', SHA224: 'sha224', SHA256: 'sha256', SHA384: 'sha384', SHA512: 'sha512' };

/** RFC 5649 alternative initial value; the message length half is filled in by the cipher. */
const KWP_AIV = Buffer.from('a65959a6', 'hex');

export function parseWrapHash(raw: string, field = 'hash_function'): WrapHash {
  const upper = raw.trim().toUpperCase();
  if (!(WRAP_HASHES as readonly string[]).includes(upper)) {
    throw new CryptoInputError(field, `unsupported ${field} "${raw}"; use one of ${WRAP_HASHES.join(', ')}`);
  }
  return upper as WrapHash;
}

function kwpCipher(kek: Buffer): string {
  switch (kek.length) {
    case 16: return 'id-aes128-wrap-pad';
    case 24: return 'id-aes192-wrap-pad';
    case 32: return 'id-aes256-wrap-pad';
    default: throw new RangeError(`AES key wrap needs a 16, 24 or 32-byte key, got ${kek.length}`);
  }
}

/** AES Key Wrap with Padding (RFC 5649). */
export function aesKeyWrapPad(kek: Buffer, plaintext: Buffer): Buffer {
  if (plaintext.length === 0) throw new CryptoInputError('ciphertext', 'ciphertext: nothing to wrap');
  const cipher = createCipheriv(kwpCipher(kek), kek, KWP_AIV);
  return Buffer.concat([cipher.update(plaintext), cipher.final()]);
}

export function aesKeyUnwrapPad(kek: Buffer, wrapped: Buffer, field = 'ciphertext'): Buffer {
  // RFC 5649 output is a whole number of 64-bit blocks, at least two of them.
  if (wrapped.length < 16 || wrapped.length % 8 !== 0) {
    throw new CryptoInputError(field, `${field}: wrapped key length ${wrapped.length} is not valid for AES key wrap with padding`);
  }
  try {
    const decipher = createDecipheriv(kwpCipher(kek), kek, KWP_AIV);
    return Buffer.concat([decipher.update(wrapped), decipher.final()]);
  } catch {
    throw new CryptoInputError(field, `${field}: failed to unwrap key: integrity check failed`);
  }
}

/** RSA-OAEP with `hash` for both OAEP and MGF1 and an empty label, as Go's EncryptOAEP does. */
export function rsaOaepEncrypt(publicKey: KeyObject, data: Buffer, hash: WrapHash = 'SHA256'): Buffer {
  try {
    return publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: NODE_HASH[hash] }, data);
  } catch (err) {
    throw new CryptoInputError('plaintext', `plaintext too long for RSA-OAEP with this key and hash (${(err as Error).message})`);
  }
}

export function rsaOaepDecrypt(privateKey: KeyObject, data: Buffer, hash: WrapHash = 'SHA256', field = 'ciphertext'): Buffer {
  try {
    return privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: NODE_HASH[hash] }, data);
  } catch {
    // One message for every failure: distinguishing them would be a padding oracle.
    throw new CryptoInputError(field, `${field}: RSA-OAEP decryption failed`);
  }
}

function modulusBytes(key: KeyObject): number {
  const bits = key.asymmetricKeyDetails?.modulusLength;
  if (key.asymmetricKeyType !== 'rsa' || !bits) throw new TypeError('the wrapping key must be an RSA key');
  return Math.ceil(bits / 8);
}

/**
 * The import ciphertext: RSA-OAEP(wrapping key, fresh 32-byte AES key) ‖ KWP(AES key, target),
 * the first part as long as the wrapping modulus (512 bytes for the 4096-bit wrapping key).
 * Used by byok-export and by tests; `target` is raw bytes for symmetric keys or PKCS#8 DER.
 */
export function wrapForImport(wrappingPublicKey: KeyObject, target: Buffer, hash: WrapHash = 'SHA256'): Buffer {
  modulusBytes(wrappingPublicKey);
  const ephemeral = randomBytes(32);
  return Buffer.concat([rsaOaepEncrypt(wrappingPublicKey, ephemeral, hash), aesKeyWrapPad(ephemeral, target)]);
}

export function unwrapImport(wrappingPrivateKey: KeyObject, blob: Buffer, hash: WrapHash = 'SHA256'): Buffer {
  const split = modulusBytes(wrappingPrivateKey);
  if (blob.length <= split) {
    throw new CryptoInputError('ciphertext', `ciphertext too short: the first ${split} bytes are the wrapped AES key and the key material must follow`);
  }
  const ephemeral = rsaOaepDecrypt(wrappingPrivateKey, blob.subarray(0, split), hash);
  if (![16, 24, 32].includes(ephemeral.length)) {
    throw new CryptoInputError('ciphertext', `ciphertext: the wrapped ephemeral key is ${ephemeral.length} bytes, not an AES key`);
  }
  return aesKeyUnwrapPad(ephemeral, blob.subarray(split));
}
