import { createCipheriv, createDecipheriv, createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { BadRequestError } from '@strongroom/core';

/**
 * The key pair of secondary/generate-public-key: the primary encrypts the activation material
 * to the public key (primary/secondary-token with secondary_public_key), and only the
 * secondary that kept the private key can read it, without unwrapping at the primary.
 */
export interface SecondaryKeyPair {
  /** What the API returns: base64 of the X25519 key's SPKI DER. */
  publicKey: string;
  /** PKCS#8, PEM. A secret, kept by the secondary until it is enabled. */
  privateKey: string;
}

/*
 * Sealed format, then base64: version (1 byte) | the sender's ephemeral X25519 public key (32) |
 * AES-GCM nonce (12) | ciphertext | tag (16). The AES key is HKDF-SHA256 of the X25519 shared
 * secret, salted with both public keys, so that it is bound to this recipient and this sender;
 * the version and the ephemeral key are authenticated as associated data.
 */
const VERSION = 1;
const PUBLIC_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + PUBLIC_BYTES;
const INFO = Buffer.from('strongroom replication activation v1');
/** The field that carries the public key into primary/secondary-token. */
const PUBLIC_KEY_FIELD = 'secondary_public_key';
/** The field that carries the sealed material into secondary/enable. */
const SEALED_FIELD = 'token';

export function generateSecondaryKeyPair(): SecondaryKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  return {
    publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/**
 * `plaintext` sealed to the secondary's public key (a SecondaryKeyPair's publicKey, as a user
 * passes it), as base64. Refuses a key that is not one with a BadRequestError naming the field.
 */
export function encryptToSecondary(publicKey: string, plaintext: Buffer): string {
  const recipient = parsePublicKey(publicKey);
  const ephemeral = generateKeyPairSync('x25519');
  const ephemeralRaw = rawPublic(ephemeral.publicKey);
  const key = deriveKey(diffieHellman({ privateKey: ephemeral.privateKey, publicKey: recipient }), ephemeralRaw, rawPublic(recipient));
  const nonce = randomBytes(NONCE_BYTES);
  const header = Buffer.concat([Buffer.from([VERSION]), ephemeralRaw]);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(header);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([header, nonce, ciphertext, cipher.getAuthTag()]).toString('base64');
}

/**
 * Opens what encryptToSecondary sealed, with the private key generateSecondaryKeyPair kept.
 * Anything else (another recipient's, altered, truncated, not base64) is refused with a
 * BadRequestError that names the field and says nothing of the content.
 */
export function decryptForSecondary(privateKey: string, sealed: string): Buffer {
  const refuse = (rule: string): never => {
    throw new BadRequestError(`${SEALED_FIELD}: ${rule}`);
  };
  const own = createPrivateKey(privateKey);
  if (own.asymmetricKeyType !== 'x25519') throw new TypeError('the secondary\'s private key must be an X25519 key');
  if (typeof sealed !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(sealed)) return refuse('the encrypted activation material must be base64');
  const bytes = Buffer.from(sealed, 'base64');
  if (bytes.length < HEADER_BYTES + NONCE_BYTES + TAG_BYTES || bytes[0] !== VERSION) return refuse('not activation material encrypted to this cluster\'s public key');
  const header = bytes.subarray(0, HEADER_BYTES);
  const ephemeralRaw = bytes.subarray(1, HEADER_BYTES);
  const nonce = bytes.subarray(HEADER_BYTES, HEADER_BYTES + NONCE_BYTES);
  const ciphertext = bytes.subarray(HEADER_BYTES + NONCE_BYTES, bytes.length - TAG_BYTES);
  const tag = bytes.subarray(bytes.length - TAG_BYTES);
  try {
    const ephemeral = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: ephemeralRaw.toString('base64url') }, format: 'jwk' });
    const key = deriveKey(diffieHellman({ privateKey: own, publicKey: ephemeral }), ephemeralRaw, rawPublic(createPublicKey(own)));
    const decipher = createDecipheriv('aes-256-gcm', key, nonce);
    decipher.setAAD(header);
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]);
  } catch {
    return refuse('not activation material encrypted to this cluster\'s public key, or it was altered');
  }
}

function parsePublicKey(publicKey: string): KeyObject {
  const refuse = (): never => {
    throw new BadRequestError(`${PUBLIC_KEY_FIELD}: must be the base64 public key that secondary/generate-public-key returned`);
  };
  if (typeof publicKey !== 'string' || publicKey.length === 0 || publicKey.length > 1024 || !/^[A-Za-z0-9+/]*={0,2}$/.test(publicKey)) return refuse();
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(publicKey, 'base64'), format: 'der', type: 'spki' });
  } catch {
    return refuse();
  }
  return key.asymmetricKeyType === 'x25519' ? key : refuse();
}

function rawPublic(key: KeyObject): Buffer {
  const x = key.export({ format: 'jwk' }).x;
  if (typeof x !== 'string') throw new TypeError('an X25519 public key has an x coordinate');
  return Buffer.from(x, 'base64url');
}

function deriveKey(shared: Buffer, ephemeralRaw: Buffer, recipientRaw: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, Buffer.concat([ephemeralRaw, recipientRaw]), INFO, 32));
}
