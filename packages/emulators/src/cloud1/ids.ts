/**
 * Identifiers shaped like the provider's: the prefix tells a reader (and the auth method's
 * unique-ID resolution) what kind of entity an ID names, exactly as on the real service.
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';

const UPPER_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const SECRET_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function randomFrom(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

export type UniqueIdPrefix = 'AIDA' | 'AROA' | 'AIPA' | 'ANPA' | 'AGPA';

/** User, role, instance profile, policy and group IDs: a 4-letter prefix and 17 characters. */
export const uniqueId = (prefix: UniqueIdPrefix): string => prefix + randomFrom(UPPER_ALNUM, 17);
/** Long-term keys start with AKIA, temporary (STS) keys with ASIA; both are 20 characters. */
export const accessKeyId = (temporary: boolean): string => (temporary ? 'ASIA' : 'AKIA') + randomFrom(UPPER_ALNUM, 16);
export const secretAccessKey = (): string => randomFrom(SECRET_CHARS, 40);
/** Real session tokens are opaque base64 blobs of several hundred characters. */
export const sessionToken = (): string => 'IQoJb3JpZ2luX2VjE' + randomBytes(300).toString('base64');
export const requestId = (): string => randomUUID();
export const accountId = (): string => String(randomInt(1, 10)) + String(randomInt(0, 1e11)).padStart(11, '0');
export const instanceId = (): string => 'i-' + randomBytes(9).toString('hex').slice(0, 17);
export const reservationId = (): string => 'r-' + randomBytes(9).toString('hex').slice(0, 17);
export const metadataToken = (): string => randomBytes(42).toString('base64');
