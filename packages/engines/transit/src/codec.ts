import { BadRequestError } from '@strongroom/core';

/**
 * Decodes standard padded base64, or answers null for anything else. Buffer.from skips
 * characters outside the alphabet and stops at '=', so any such character shows up as a
 * shorter result than the length implies. This runs per batch item on large inputs, where a
 * validating regex cost more than the encryption. Self-contained (the seal pool's threads run
 * its source).
 */
export function strictBase64(text: string): Buffer | null {
  if (text.length % 4 !== 0) return null;
  const decoded = Buffer.from(text, 'base64');
  const pad = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  if (decoded.length !== (text.length / 4) * 3 - pad || text.includes('-') || text.includes('_')) return null;
  return decoded;
}

/**
 * Standard, padded base64 as Vault decodes it, or null: line breaks are skipped (the `base64`
 * tool wraps its output), anything else outside the alphabet is refused rather than dropped the
 * way Buffer.from would, so a mistyped value fails instead of encrypting something else. Uses
 * nothing but strictBase64, for the same reason.
 */
export function standardBase64(value: string): Buffer | null {
  return strictBase64(value.includes('\n') || value.includes('\r') ? value.replace(/[\r\n]/g, '') : value);
}

export function decodeBase64(field: string, value: string): Buffer {
  const decoded = standardBase64(value);
  if (!decoded) throw new BadRequestError(`invalid value for "${field}": expected standard base64`);
  return decoded;
}

/** An optional base64 field: empty means absent. */
export function decodeOptionalBase64(field: string, value: string): Buffer | undefined {
  return value === '' ? undefined : decodeBase64(field, value);
}

export const CIPHERTEXT_PREFIX = 'vault:';

/** What comes before the base64 payload of a ciphertext of `version`. */
export function ciphertextPrefix(version: number): string {
  return `${CIPHERTEXT_PREFIX}v${version}:`;
}

export function formatCiphertext(version: number, payload: Buffer): string {
  return ciphertextPrefix(version) + payload.toString('base64');
}

export interface ParsedCiphertext {
  version: number;
  payload: Buffer;
}

// The messages are Vault's: clients and runbooks match on them.
export function parseCiphertext(text: string): ParsedCiphertext {
  if (!text.startsWith(CIPHERTEXT_PREFIX)) throw new BadRequestError('invalid ciphertext: no prefix');
  const rest = text.slice(CIPHERTEXT_PREFIX.length);
  const colon = rest.indexOf(':');
  if (colon < 0) throw new BadRequestError('invalid ciphertext: wrong number of fields');
  const versionText = rest.slice(0, colon);
  if (!/^v\d{1,9}$/.test(versionText)) throw new BadRequestError('invalid ciphertext: version number could not be decoded');
  // Ciphertext from before versions were numbered from 1 says v0 and means version 1.
  const version = Math.max(1, Number(versionText.slice(1)));
  const body = rest.slice(colon + 1);
  const payload = strictBase64(body);
  if (!payload) throw new BadRequestError('invalid ciphertext: could not decode base64');
  return { version, payload };
}
