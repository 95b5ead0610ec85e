import { createHmac, randomBytes, randomInt, type KeyObject } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/** Service tokens look like Vault's (`hvs.` + 24 base62 characters) so clients treat them alike. */
export function newServiceTokenId(): string {
  return `hvs.${randomBase62(24)}`;
}

/** The length of every `newServiceTokenId`: a root token generation's one-time password has it. */
export const SERVICE_TOKEN_LENGTH = 'hvs.'.length + 24;

export function newAccessor(): string {
  return randomBase62(24);
}

/**
 * Token IDs are only stored as HMAC-SHA256 under a per-cluster salt; the ID itself never is.
 * Pass the salt as a KeyObject on hot paths: building one from raw bytes costs more than the HMAC.
 */
export function hashToken(salt: Buffer | KeyObject, id: string): string {
  return createHmac('sha256', salt).update(id).digest('hex');
}

export function newSalt(): Buffer {
  return randomBytes(32);
}
