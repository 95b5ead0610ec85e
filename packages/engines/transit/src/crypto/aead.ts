import {
  createCipheriv, createDecipheriv, randomFillSync,
  type CipherChaCha20Poly1305, type CipherGCM, type DecipherChaCha20Poly1305, type DecipherGCM,
} from 'node:crypto';
import { CryptoInputError } from './errors';
import { keyObjectOf } from './key-objects';
import type { AeadKeyType } from './key-types';

export const AEAD_NONCE_SIZE = 12;
export const AEAD_TAG_SIZE = 16;

export interface AeadEncryptOptions {
  associatedData?: Buffer;
  /**
   * A fixed nonce (convergent encryption, or a version-1 convergent caller nonce). Omitted means a
   * fresh random nonce, which is the only safe choice for non-convergent keys.
   */
  nonce?: Buffer;
  /**
   * Whether the payload starts with the nonce. Only version-1 convergent keys leave it out: the
   * caller keeps the nonce and hands it back on decrypt.
   */
  includeNonce?: boolean;
}

export interface AeadDecryptOptions {
  associatedData?: Buffer;
  /** Set only when the payload has no nonce in front (version-1 convergent keys). */
  nonce?: Buffer;
}

function checkKey(type: AeadKeyType, key: Buffer): void {
  const want = type === 'aes128-gcm96' ? 16 : 32;
  // A key of the wrong size is a storage or derivation bug, never something a caller sent.
  if (key.length !== want) throw new RangeError(`${type} needs a ${want}-byte key, got ${key.length}`);
}

/** node:crypto's name for the cipher of each AEAD key type. */
export const AEAD_CIPHER_NAMES = {
  'aes128-gcm96': 'aes-128-gcm',
  'aes256-gcm96': 'aes-256-gcm',
  'chacha20-poly1305': 'chacha20-poly1305',
} as const satisfies Record<AeadKeyType, string>;

function makeCipher(type: AeadKeyType, key: Buffer, nonce: Buffer): CipherGCM | CipherChaCha20Poly1305 {
  checkKey(type, key);
  const authTagLength = AEAD_TAG_SIZE;
  const name = AEAD_CIPHER_NAMES[type];
  if (name === 'chacha20-poly1305') return createCipheriv(name, keyObjectOf(key), nonce, { authTagLength });
  return createCipheriv(name, keyObjectOf(key), nonce, { authTagLength });
}

function makeDecipher(type: AeadKeyType, key: Buffer, nonce: Buffer): DecipherGCM | DecipherChaCha20Poly1305 {
  checkKey(type, key);
  const authTagLength = AEAD_TAG_SIZE;
  const name = AEAD_CIPHER_NAMES[type];
  if (name === 'chacha20-poly1305') return createDecipheriv(name, keyObjectOf(key), nonce, { authTagLength });
  return createDecipheriv(name, keyObjectOf(key), nonce, { authTagLength });
}

function checkNonce(nonce: Buffer): Buffer {
  if (nonce.length !== AEAD_NONCE_SIZE) {
    throw new CryptoInputError('nonce', `base64-decoded nonce must be ${AEAD_NONCE_SIZE} bytes long but given ${nonce.length} bytes`);
  }
  return nonce;
}

/**
 * Random nonces come from a pool filled by one getrandom call per 4,096 nonces rather than one
 * call each. A nonce is a view into the pool and is only used before this function returns
 * (the cipher and Buffer.concat copy it), so a refill can never change one in use.
 */
const NONCE_POOL = Buffer.allocUnsafe(AEAD_NONCE_SIZE * 4096);
let noncePos = NONCE_POOL.length;

function freshNonce(): Buffer {
  if (noncePos + AEAD_NONCE_SIZE > NONCE_POOL.length) {
    randomFillSync(NONCE_POOL);
    noncePos = 0;
  }
  const nonce = NONCE_POOL.subarray(noncePos, noncePos + AEAD_NONCE_SIZE);
  noncePos += AEAD_NONCE_SIZE;
  return nonce;
}

/** Returns nonce(12) ‖ ciphertext ‖ tag(16), or ciphertext ‖ tag when includeNonce is false. */
export function aeadEncrypt(type: AeadKeyType, key: Buffer, plaintext: Buffer, opts: AeadEncryptOptions = {}): Buffer {
  const nonce = opts.nonce ? checkNonce(opts.nonce) : freshNonce();
  const cipher = makeCipher(type, key, nonce);
  if (opts.associatedData && opts.associatedData.length > 0) {
    cipher.setAAD(opts.associatedData, { plaintextLength: plaintext.length });
  }
  const sealed = cipher.update(plaintext);
  const final = cipher.final();
  const tag = cipher.getAuthTag();
  // One copy into the result, nonce first unless the caller keeps it.
  return Buffer.concat(opts.includeNonce === false ? [sealed, final, tag] : [nonce, sealed, final, tag]);
}

export function aeadDecrypt(type: AeadKeyType, key: Buffer, payload: Buffer, opts: AeadDecryptOptions = {}): Buffer {
  checkKey(type, key);
  let nonce: Buffer;
  let body: Buffer;
  if (opts.nonce) {
    nonce = checkNonce(opts.nonce);
    body = payload;
  } else {
    if (payload.length < AEAD_NONCE_SIZE) throw new CryptoInputError('ciphertext', 'invalid ciphertext length');
    nonce = payload.subarray(0, AEAD_NONCE_SIZE);
    body = payload.subarray(AEAD_NONCE_SIZE);
  }
  if (body.length < AEAD_TAG_SIZE) throw new CryptoInputError('ciphertext', 'invalid ciphertext length');
  const tag = body.subarray(body.length - AEAD_TAG_SIZE);
  const data = body.subarray(0, body.length - AEAD_TAG_SIZE);
  const decipher = makeDecipher(type, key, nonce);
  decipher.setAuthTag(tag);
  if (opts.associatedData && opts.associatedData.length > 0) {
    decipher.setAAD(opts.associatedData, { plaintextLength: data.length });
  }
  try {
    return Buffer.concat([decipher.update(data), decipher.final()]);
  } catch {
    // Wrong key, context, associated_data or tampered bytes all look the same, deliberately.
    throw new CryptoInputError('ciphertext', 'ciphertext: message authentication failed');
  }
}
