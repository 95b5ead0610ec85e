import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { putJson, type BackendHarness, type LogicalStorage } from '@strongroom/core';
import { wrapForImport, type WrapHash } from '../crypto';
import { WRAPPING_KEY_STORAGE_KEY } from '../path-import';
import { data } from './transit-rig';

let shared: KeyObject | undefined;

/**
 * An RSA-4096 wrapping key made once per test file and put in a mount's storage where the
 * engine keeps its own, so each test does not wait for a fresh 4096-bit key.
 */
export async function seedWrappingKey(storage: LogicalStorage): Promise<KeyObject> {
  shared ??= generateKeyPairSync('rsa', { modulusLength: 4096 }).privateKey;
  await putJson(storage, WRAPPING_KEY_STORAGE_KEY, {
    private_key: shared.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
    creation_time: 0,
  });
  return shared;
}

export async function wrappingPublicKey(h: BackendHarness): Promise<KeyObject> {
  return createPublicKey(String(data(await h.request('read', 'wrapping_key'))['public_key']));
}

/** The import ciphertext for `material` (raw bytes or PKCS#8 DER) under the mount's wrapping key. */
export async function wrapped(h: BackendHarness, material: Buffer, hash: WrapHash = 'SHA256'): Promise<string> {
  return wrapForImport(await wrappingPublicKey(h), material, hash).toString('base64');
}

export function pkcs8(key: KeyObject): Buffer {
  return key.export({ format: 'der', type: 'pkcs8' });
}

export function spkiPem(key: KeyObject): string {
  return (key.type === 'public' ? key : createPublicKey(key)).export({ format: 'pem', type: 'spki' }) as string;
}

export const keyPairs = {
  ed25519: () => generateKeyPairSync('ed25519'),
  'ecdsa-p256': () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' }),
  'ecdsa-p384': () => generateKeyPairSync('ec', { namedCurve: 'secp384r1' }),
  'ecdsa-p521': () => generateKeyPairSync('ec', { namedCurve: 'secp521r1' }),
  'rsa-2048': () => generateKeyPairSync('rsa', { modulusLength: 2048 }),
} as const;
