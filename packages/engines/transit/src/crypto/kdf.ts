import { createHmac, createPrivateKey, createPublicKey, hkdfSync, type KeyObject } from 'node:crypto';
import { CryptoInputError } from './errors';
import { keyObjectOf, secretKey } from './key-objects';
import type { AeadKeyType } from './key-types';

/** Names as key reads report them; the number is what a backup stores in `kdf`. */
export type KdfName = 'hmac-sha256-counter' | 'hkdf_sha256';

export const KDF_BY_NUMBER: Readonly<Record<number, KdfName>> = { 0: 'hmac-sha256-counter', 1: 'hkdf_sha256' };
export const KDF_NUMBER: Readonly<Record<KdfName, number>> = { 'hmac-sha256-counter': 0, hkdf_sha256: 1 };

/** HKDF-SHA256 (RFC 5869). Transit always uses an empty salt and the request context as info. */
export function hkdfSha256(ikm: Buffer, info: Buffer, length: number, salt: Buffer = Buffer.alloc(0)): Buffer {
  return Buffer.from(hkdfSync('sha256', keyObjectOf(ikm), salt, info, length));
}

export interface CounterKdfOptions {
  /**
   * SP 800-108 numbers its blocks from 1. Vault's legacy KDF numbers them from 0, so a key created
   * by it only derives the same bytes if we do too.
   */
  firstCounter?: number;
}

/**
 * SP 800-108 KDF in counter mode with HMAC-SHA256 as the PRF, counter before the fixed data:
 * block i = HMAC(key, BE32(i) ‖ fixedData ‖ BE32(outputBits)).
 */
export function kbkdfHmacSha256Counter(key: Buffer, fixedData: Buffer, outputBytes: number, opts: CounterKdfOptions = {}): Buffer {
  const prf = keyObjectOf(key);
  const first = opts.firstCounter ?? 1;
  const blocks = Math.ceil(outputBytes / 32);
  const input = Buffer.alloc(4 + fixedData.length + 4);
  fixedData.copy(input, 4);
  input.writeUInt32BE(outputBytes * 8, 4 + fixedData.length);
  const out: Buffer[] = [];
  for (let i = 0; i < blocks; i++) {
    input.writeUInt32BE(first + i, 0);
    out.push(createHmac('sha256', prf).update(input).digest());
  }
  return Buffer.concat(out).subarray(0, outputBytes);
}

/**
 * The `hmac-sha256-counter` KDF of keys made before HKDF became the default: always 256 bits,
 * counter from 0, whatever the caller wants to do with them.
 */
export function hmacSha256CounterKdf(key: Buffer, context: Buffer): Buffer {
  return kbkdfHmacSha256Counter(key, context, 32, { firstCounter: 0 });
}

function requireContext(context: Buffer | undefined): Buffer {
  if (!context || context.length === 0) {
    throw new CryptoInputError('context', "missing 'context' for key derivation; the key was created using a derived key, which means additional, per-request information must be included in order to perform operations with the key");
  }
  return context;
}

/**
 * Derived key bytes for a context. HKDF gives `length` bytes; the counter KDF gives its fixed 32
 * bytes whatever `length` is, and callers slice, exactly as keys derived by Vault expect.
 */
export function deriveKeyBytes(kdf: KdfName, key: Buffer, context: Buffer, length: number): Buffer {
  const ctx = requireContext(context);
  return kdf === 'hkdf_sha256' ? hkdfSha256(key, ctx, length) : hmacSha256CounterKdf(key, ctx);
}

export type ConvergentVersion = 1 | 2 | 3;

export interface AeadKeyParams {
  type: AeadKeyType;
  /** The stored key of the version in use. */
  key: Buffer;
  derived: boolean;
  kdf?: KdfName;
  context?: Buffer;
  /** Set for convergent keys: the convergent version recorded on the key version. */
  convergentVersion?: ConvergentVersion;
}

export interface AeadKey {
  encryptionKey: Buffer;
  /** For convergent versions 2 and 3: the HMAC key whose output over the plaintext is the nonce. */
  nonceKey?: Buffer;
}

/**
 * The AEAD key for one operation. Convergent version 3 derives 32 extra bytes after the encryption
 * key and keys the nonce HMAC with them; version 2 keyed it with the context itself, which is why
 * it was replaced; version 1 takes the nonce from the caller.
 */
export function resolveAeadKey(params: AeadKeyParams): AeadKey {
  const encBytes = params.type === 'aes128-gcm96' ? 16 : 32;
  const v = params.convergentVersion;
  if (v !== undefined && !params.derived) throw new RangeError('convergent encryption requires a derived key');
  if (!params.derived) return { encryptionKey: params.key };

  const context = requireContext(params.context);
  const hmacBytes = v === 3 ? 32 : 0;
  const material = deriveKeyBytes(params.kdf ?? 'hkdf_sha256', params.key, context, encBytes + hmacBytes);
  if (material.length < encBytes + hmacBytes) {
    // The counter KDF only ever yields 32 bytes, too few for a 32-byte key plus a nonce key.
    throw new RangeError('could not derive key, length too small');
  }
  const encryptionKey = material.subarray(0, encBytes);
  if (v === 3) return { encryptionKey, nonceKey: material.subarray(encBytes, encBytes + hmacBytes) };
  if (v === 2) return { encryptionKey, nonceKey: context };
  return { encryptionKey };
}

/** HMAC-SHA256(nonceKey, plaintext) cut to the 12-byte AEAD nonce. */
export function convergentNonce(nonceKey: Buffer, plaintext: Buffer): Buffer {
  if (nonceKey.length === 0) throw new RangeError('invalid hmac key length of zero');
  return createHmac('sha256', secretKey(nonceKey)).update(plaintext).digest().subarray(0, 12);
}

/** PKCS#8 DER header for an Ed25519 private key; the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export function ed25519PrivateKeyFromSeed(seed: Buffer): KeyObject {
  if (seed.length !== 32) throw new RangeError(`an ed25519 seed is 32 bytes, got ${seed.length}`);
  return createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

export interface DerivedEd25519Key {
  privateKey: KeyObject;
  publicKey: KeyObject;
  /** The raw 32-byte public key, as sign returns it for derived keys. */
  publicKeyRaw: Buffer;
}

/**
 * The per-context Ed25519 key of a derived ed25519 key. `baseKey` is the stored 64-byte
 * seed ‖ public form (see ed25519RawPrivateKey): Vault feeds all 64 bytes to HKDF, so the same
 * bytes must go in here for keys restored from a Vault backup to derive the same public keys.
 */
export function deriveEd25519Key(baseKey: Buffer, context: Buffer, kdf: KdfName = 'hkdf_sha256'): DerivedEd25519Key {
  if (kdf !== 'hkdf_sha256') {
    // The counter KDF never produced usable Ed25519 keys in Vault either; refuse instead of guessing.
    throw new RangeError('derived ed25519 keys need the hkdf_sha256 KDF');
  }
  const seed = hkdfSha256(baseKey, requireContext(context), 32);
  const privateKey = ed25519PrivateKeyFromSeed(seed);
  const publicKey = createPublicKey(privateKey);
  const jwk = publicKey.export({ format: 'jwk' });
  return { privateKey, publicKey, publicKeyRaw: Buffer.from(jwk.x!, 'base64url') };
}
