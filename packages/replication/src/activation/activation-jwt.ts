import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { BadRequestError } from '@strongroom/core';

/**
 * The claims of a secondary activation token (`wrap_info.token` of primary/secondary-token):
 * where to unwrap it and which wrapping token it stands for. Times are JWT NumericDates,
 * seconds since the epoch.
 */
export interface ActivationClaims {
  /** The primary's API address, where the secondary unwraps the token. */
  addr: string;
  exp: number;
  iat: number;
  /** The id of the wrapping token that holds the activation material. */
  jti: string;
  type: 'wrapping';
  /** Which kind of secondary the token activates, so that the wrong enable refuses it before unwrapping (which spends it); absent: DR. */
  kind?: 'dr' | 'performance';
}

/** A P-521 key pair (PEM: PKCS#8 and SPKI) for signing activation tokens. */
export interface ActivationSigningKey {
  privateKey: string;
  publicKey: string;
}

const HEADER = { alg: 'ES512', typ: 'JWT' } as const;
/** The field every error names: secondary/enable and update-primary take the JWT as `token`. */
const FIELD = 'token';
const BASE64URL = /^[A-Za-z0-9_-]*$/;
/** An activation token is a few hundred bytes; this bounds what is decoded. */
const MAX_TOKEN_CHARS = 8 * 1024;

export function createActivationSigningKey(): ActivationSigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-521' });
  return { privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

/** A compact JWS (ES512: ECDSA P-521 over SHA-512, the signature as r||s) of `claims`. */
export function signActivationJwt(privateKey: KeyObject | string, claims: ActivationClaims): string {
  const key = typeof privateKey === 'string' ? createPrivateKey(privateKey) : privateKey;
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'secp521r1') throw new TypeError('an activation token is signed with a P-521 key');
  const signingInput = `${base64url(JSON.stringify(HEADER))}.${base64url(JSON.stringify(checkClaims(claims)))}`;
  const signature = sign('sha512', Buffer.from(signingInput), { key, dsaEncoding: 'ieee-p1363' });
  return `${signingInput}.${signature.toString('base64url')}`;
}

/**
 * The claims of an activation token, read without checking its signature: the secondary has no
 * key to check it with, and the primary proves the token when it unwraps `jti`. Refuses
 * anything that is not an activation token with a BadRequestError naming the field.
 */
export function parseActivationJwt(token: string): ActivationClaims {
  return decode(token).claims;
}

/** parseActivationJwt, and the signature checked against the primary's public key. */
export function verifyActivationJwt(publicKey: KeyObject | string, token: string): ActivationClaims {
  const { claims, signingInput, signature } = decode(token);
  const key = typeof publicKey === 'string' ? createPublicKey(publicKey) : publicKey;
  if (!verify('sha512', Buffer.from(signingInput), { key, dsaEncoding: 'ieee-p1363' }, signature)) {
    throw new BadRequestError(`${FIELD}: the activation token's signature is not the primary's`);
  }
  return claims;
}

function decode(token: string): { claims: ActivationClaims; signingInput: string; signature: Buffer } {
  const refuse = (rule: string): never => {
    throw new BadRequestError(`${FIELD}: not an activation token: ${rule}`);
  };
  if (typeof token !== 'string' || token.length === 0) return refuse('it must be a non-empty string');
  if (token.length > MAX_TOKEN_CHARS) return refuse(`it is longer than ${MAX_TOKEN_CHARS} characters`);
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every((p) => p.length > 0 && BASE64URL.test(p))) return refuse('it must be three base64url parts separated by dots');
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = parseJson(headerPart);
  if (header === null || header['alg'] !== 'ES512') return refuse('its header must name the ES512 algorithm');
  const payload = parseJson(payloadPart);
  if (payload === null) return refuse('its payload must be a JSON object');
  const claims = claimsFrom(payload);
  if (typeof claims === 'string') return refuse(claims);
  const signature = Buffer.from(signaturePart, 'base64url');
  // P-521: r and s are 66 bytes each.
  if (signature.length !== 132) return refuse('its signature must be 132 bytes');
  return { claims, signingInput: `${headerPart}.${payloadPart}`, signature };
}

function parseJson(part: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The claims, or the rule the payload breaks. */
function claimsFrom(payload: Record<string, unknown>): ActivationClaims | string {
  const { addr, exp, iat, jti, type, kind } = payload;
  if (type !== 'wrapping') return 'its type claim must be "wrapping"';
  if (typeof addr !== 'string' || addr === '') return 'its addr claim must be a non-empty string';
  if (typeof jti !== 'string' || jti === '') return 'its jti claim must be a non-empty string';
  if (!Number.isSafeInteger(exp) || (exp as number) < 0) return 'its exp claim must be a whole number of seconds';
  if (!Number.isSafeInteger(iat) || (iat as number) < 0) return 'its iat claim must be a whole number of seconds';
  if (kind !== undefined && kind !== 'dr' && kind !== 'performance') return 'its kind claim must be "dr" or "performance"';
  return { addr, exp: exp as number, iat: iat as number, jti, type, ...(kind !== undefined ? { kind } : {}) };
}

function checkClaims(claims: ActivationClaims): ActivationClaims {
  const checked = claimsFrom({ ...claims });
  if (typeof checked === 'string') throw new TypeError(`cannot sign an activation token: ${checked}`);
  return checked;
}

function base64url(text: string): string {
  return Buffer.from(text).toString('base64url');
}
