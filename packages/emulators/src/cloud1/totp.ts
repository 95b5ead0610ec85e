/**
 * RFC 6238 time-based one-time passwords (the codes virtual MFA apps show): HMAC-SHA-1 over the
 * 30-second step counter, dynamically truncated to 6 digits. Secrets are base32, as MFA apps
 * and the provider's virtual devices exchange them.
 */
import { createHmac, randomBytes } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
export const TOTP_STEP_SECONDS = 30;

export function base32Decode(text: string): Buffer {
  const clean = text.replace(/=+$/, '').replace(/\s+/g, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const c of clean) {
    const index = BASE32.indexOf(c);
    if (index < 0) throw new Error(`Invalid base32 character '${c}'`);
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

export function base32Encode(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

export const randomTotpSecret = (): string => base32Encode(randomBytes(20));

export function totpCode(secretBase32: string, atMs: number): string {
  const counter = Math.floor(atMs / 1000 / TOTP_STEP_SECONDS);
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const digest = createHmac('sha1', base32Decode(secretBase32)).update(message).digest();
  const offset = (digest[digest.length - 1] ?? 0) & 0x0f;
  const binary = digest.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 1_000_000).padStart(6, '0');
}

/** Accepts the current step and one either side, for clock drift between device and server. */
export function totpMatches(secretBase32: string, code: string, atMs: number): boolean {
  for (const drift of [-1, 0, 1]) {
    if (totpCode(secretBase32, atMs + drift * TOTP_STEP_SECONDS * 1000) === code) return true;
  }
  return false;
}
