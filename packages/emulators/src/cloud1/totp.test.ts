import { base32Decode, base32Encode, randomTotpSecret, totpCode, totpMatches } from './totp';

describe('cloud1 MFA codes (RFC 6238)', () => {
  // RFC 6238 appendix B, SHA-1 secret "12345678901234567890", truncated to the 6 digits MFA uses.
  const secret = base32Encode(Buffer.from('12345678901234567890', 'ascii'));

  it('matches the RFC test vectors', () => {
    expect(secret).toBe('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
    expect(totpCode(secret, 59_000)).toBe('287082');
    expect(totpCode(secret, 1111111109_000)).toBe('081804');
    expect(totpCode(secret, 1234567890_000)).toBe('005924');
    expect(totpCode(secret, 20000000000_000)).toBe('353130');
  });

  it('accepts one step of drift either side, and no more', () => {
    const at = 1234567890_000;
    const code = totpCode(secret, at);
    expect(totpMatches(secret, code, at + 30_000)).toBe(true);
    expect(totpMatches(secret, code, at - 30_000)).toBe(true);
    expect(totpMatches(secret, code, at + 90_000)).toBe(false);
  });

  it('round-trips base32 secrets', () => {
    const generated = randomTotpSecret();
    expect(base32Encode(base32Decode(generated))).toBe(generated);
    expect(base32Decode(generated)).toHaveLength(20);
  });
});
