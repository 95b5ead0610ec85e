import { generateKeyPairSync } from 'node:crypto';
import { BadRequestError } from '@strongroom/core';
import { createActivationSigningKey, parseActivationJwt, signActivationJwt, verifyActivationJwt, type ActivationClaims } from './activation-jwt';

const claims: ActivationClaims = { addr: 'https://primary.example:8200', exp: 1_800_000_000, iat: 1_799_998_200, jti: 'wrapping-token-id', type: 'wrapping' };
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('activation JWT', () => {
  const key = createActivationSigningKey();

  it('signs ES512 with a P-1363 signature, and reads back exactly the claims, with and without the key', () => {
    const token = signActivationJwt(key.privateKey, claims);
    const [header, payload, signature] = token.split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toEqual({ alg: 'ES512', typ: 'JWT' });
    expect(JSON.parse(Buffer.from(payload!, 'base64url').toString())).toEqual(claims);
    expect(Buffer.from(signature!, 'base64url')).toHaveLength(132);
    expect(parseActivationJwt(token)).toEqual(claims);
    expect(verifyActivationJwt(key.publicKey, token)).toEqual(claims);
  });

  it('refuses a token another key signed, or whose payload changed after signing', () => {
    const token = signActivationJwt(key.privateKey, claims);
    expect(() => verifyActivationJwt(createActivationSigningKey().publicKey, token)).toThrow(/token: .*signature/);
    const [header, , signature] = token.split('.');
    const forged = `${header}.${b64({ ...claims, addr: 'https://attacker.example' })}.${signature}`;
    expect(parseActivationJwt(forged).addr).toBe('https://attacker.example');
    expect(() => verifyActivationJwt(key.publicKey, forged)).toThrow(BadRequestError);
  });

  it.each([
    ['', /non-empty/],
    ['not-a-jwt', /three base64url parts/],
    ['a.b.c.d', /three base64url parts/],
    ['a b.c.d', /three base64url parts/],
    [`${b64({ alg: 'HS256' })}.${b64(claims)}.${'A'.repeat(176)}`, /ES512/],
    [`${b64({ alg: 'ES512' })}.${b64([1])}.${'A'.repeat(176)}`, /JSON object/],
    [`${b64({ alg: 'ES512' })}.${b64({ ...claims, type: 'batch' })}.${'A'.repeat(176)}`, /type claim/],
    [`${b64({ alg: 'ES512' })}.${b64({ ...claims, addr: 7 })}.${'A'.repeat(176)}`, /addr claim/],
    [`${b64({ alg: 'ES512' })}.${b64({ ...claims, jti: '' })}.${'A'.repeat(176)}`, /jti claim/],
    [`${b64({ alg: 'ES512' })}.${b64({ ...claims, exp: 1.5 })}.${'A'.repeat(176)}`, /exp claim/],
    [`${b64({ alg: 'ES512' })}.${b64({ ...claims, iat: '1' })}.${'A'.repeat(176)}`, /iat claim/],
    [`${b64({ alg: 'ES512' })}.${b64(claims)}.AAAA`, /132 bytes/],
    ['x'.repeat(9000), /longer than/],
  ])('refuses %s, naming the token field and the rule', (token, rule) => {
    let error: unknown;
    try {
      parseActivationJwt(token);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as Error).message).toMatch(/^token: /);
    expect((error as Error).message).toMatch(rule);
  });

  it('signs only with a P-521 key and only well-formed claims', () => {
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    expect(() => signActivationJwt(p256, claims)).toThrow(/P-521/);
    expect(() => signActivationJwt(key.privateKey, { ...claims, jti: '' })).toThrow(/jti/);
  });
});
