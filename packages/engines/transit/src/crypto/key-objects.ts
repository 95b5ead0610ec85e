import { createSecretKey, type KeyObject } from 'node:crypto';

/**
 * node 24 checks the type of a raw key on every cipher, HMAC or HKDF call it is handed to, and
 * that check costs several times encrypting 1 KiB; a KeyObject skips it. A key version's bytes
 * stay the same Buffer while its policy is cached, so its KeyObject is kept beside it. Keys
 * made for one request (derived keys, nonce keys) should use `secretKey`, which does not cache.
 */
const keyObjects = new WeakMap<Buffer, KeyObject>();

export function keyObjectOf(key: Buffer): KeyObject {
  let obj = keyObjects.get(key);
  if (!obj) {
    obj = createSecretKey(key);
    keyObjects.set(key, obj);
  }
  return obj;
}

/** A KeyObject for a key used once: still cheaper than handing node the raw bytes. */
export function secretKey(key: Buffer): KeyObject {
  return createSecretKey(key);
}
