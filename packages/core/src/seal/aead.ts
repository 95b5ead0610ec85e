import { createCipheriv, createDecipheriv, randomBytes, type KeyObject } from 'node:crypto';

/** AES-256-GCM with a random 96-bit nonce: `nonce ‖ ciphertext ‖ tag`, bound to `aad`. */
export function seal(key: Buffer | KeyObject, plaintext: Buffer, aad: Buffer): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad);
  const body = cipher.update(plaintext);
  const final = cipher.final();
  return Buffer.concat([nonce, body, final, cipher.getAuthTag()]);
}

/** Opens what `seal` made; throws if the key, the AAD or any byte is wrong. */
export function open(key: Buffer | KeyObject, sealed: Buffer, aad: Buffer): Buffer {
  if (sealed.length < 28) throw new Error('ciphertext too short');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  return Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]);
}
