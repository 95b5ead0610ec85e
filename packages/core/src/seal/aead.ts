import { createCipheriv, createDecipheriv, randomFillSync, type KeyObject } from 'node:crypto';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const NO_PREFIX = Buffer.alloc(0);

/*
 * Nonces come from a block of CSPRNG output drawn 341 at a time: one call into the generator
 * costs more than the AES-GCM of a small value, and every stored value needs a nonce. Each
 * block is fresh memory and each nonce is handed out once, so none can repeat.
 */
const POOL_BYTES = NONCE_BYTES * 341;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function nextNonce(): Buffer {
  if (poolOffset + NONCE_BYTES > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafeSlow(POOL_BYTES));
    poolOffset = 0;
  }
  const nonce = pool.subarray(poolOffset, poolOffset + NONCE_BYTES);
  poolOffset += NONCE_BYTES;
  return nonce;
}

/**
 * AES-256-GCM with a random 96-bit nonce: `prefix ‖ nonce ‖ ciphertext ‖ tag`, bound to `aad`.
 * The prefix (a caller's header, not authenticated unless it is also in `aad`) saves a copy.
 */
export function seal(key: Buffer | KeyObject, plaintext: Buffer, aad: Buffer, prefix: Buffer = NO_PREFIX): Buffer {
  const nonce = nextNonce();
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad);
  const body = cipher.update(plaintext);
  // GCM is a stream mode: final() yields nothing, it only computes the tag.
  cipher.final();
  const out = Buffer.allocUnsafe(prefix.length + NONCE_BYTES + body.length + TAG_BYTES);
  let at = prefix.copy(out, 0);
  at += nonce.copy(out, at);
  at += body.copy(out, at);
  cipher.getAuthTag().copy(out, at);
  return out;
}

/** Opens what `seal` made (without its prefix); throws if the key, the AAD or any byte is wrong. */
export function open(key: Buffer | KeyObject, sealed: Buffer, aad: Buffer): Buffer {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) throw new Error('ciphertext too short');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES));
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  const body = decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES));
  decipher.final();
  return body;
}
