import { randomBytes } from 'node:crypto';
import { open, seal } from './aead';

describe('aead', () => {
  const key = randomBytes(32);
  const aad = Buffer.from('logical/some/key');

  it('round-trips, with the prefix in front and left out of what open takes', () => {
    const prefix = Buffer.from([1, 0, 0, 0, 7]);
    const sealed = seal(key, Buffer.from('secret value'), aad, prefix);
    expect(sealed.subarray(0, 5)).toEqual(prefix);
    expect(sealed.length).toBe(5 + 12 + 'secret value'.length + 16);
    expect(open(key, sealed.subarray(5), aad).toString()).toBe('secret value');
  });

  it('never repeats a nonce, also across refills of the nonce pool', () => {
    // The pool holds 341 nonces; 2,000 seals cross several refills.
    const nonces = new Set<string>();
    for (let i = 0; i < 2000; i++) nonces.add(seal(key, Buffer.from('x'), aad).subarray(0, 12).toString('hex'));
    expect(nonces.size).toBe(2000);
  });

  it('refuses a wrong key, a wrong AAD or a flipped byte', () => {
    const sealed = seal(key, Buffer.from('secret value'), aad);
    expect(() => open(randomBytes(32), sealed, aad)).toThrow();
    expect(() => open(key, sealed, Buffer.from('logical/other/key'))).toThrow();
    const flipped = Buffer.from(sealed);
    flipped[14] = (flipped[14] ?? 0) ^ 1;
    expect(() => open(key, flipped, aad)).toThrow();
    expect(() => open(key, sealed.subarray(0, 27), aad)).toThrow('ciphertext too short');
  });
});
