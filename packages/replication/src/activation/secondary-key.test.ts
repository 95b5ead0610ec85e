import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { BadRequestError } from '@strongroom/core';
import { decryptForSecondary, encryptToSecondary, generateSecondaryKeyPair } from './secondary-key';

describe('activation material encrypted to a secondary', () => {
  const secondary = generateSecondaryKeyPair();
  const material = Buffer.from(JSON.stringify({ cluster_id: 'c1', client_key: randomBytes(48).toString('base64') }));

  it('opens with the private key that was kept, and each sealing differs', () => {
    const sealed = encryptToSecondary(secondary.publicKey, material);
    expect(decryptForSecondary(secondary.privateKey, sealed)).toEqual(material);
    expect(encryptToSecondary(secondary.publicKey, material)).not.toBe(sealed);
    expect(Buffer.from(sealed, 'base64').includes(material)).toBe(false);
  });

  it('refuses every flipped byte, a truncation and another secondary\'s key, with a 400 naming the field and not the content', () => {
    const sealed = Buffer.from(encryptToSecondary(secondary.publicKey, material), 'base64');
    const refusals: string[] = [];
    for (let i = 0; i < sealed.length; i++) {
      const tampered = Buffer.from(sealed);
      tampered[i] = (tampered[i] as number) ^ 0x01;
      try {
        decryptForSecondary(secondary.privateKey, tampered.toString('base64'));
        refusals.push(`byte ${i} accepted`);
      } catch (err) {
        expect(err).toBeInstanceOf(BadRequestError);
        refusals.push((err as Error).message);
      }
    }
    expect(refusals.every((m) => m.startsWith('token: '))).toBe(true);
    expect(() => decryptForSecondary(secondary.privateKey, sealed.subarray(0, 40).toString('base64'))).toThrow(BadRequestError);
    expect(() => decryptForSecondary(generateSecondaryKeyPair().privateKey, sealed.toString('base64'))).toThrow(/token: .*altered/);
    expect(() => decryptForSecondary(secondary.privateKey, 'not base64!')).toThrow(/token: .*base64/);
  });

  it.each([['', 'empty'], ['AAAA', 'not a key'], [Buffer.from('-----BEGIN PUBLIC KEY-----').toString('base64'), 'PEM text'], ['x'.repeat(2000), 'too long']])(
    'refuses a public key that is %s (%s), naming secondary_public_key',
    (publicKey) => {
      expect(() => encryptToSecondary(publicKey, material)).toThrow(/^secondary_public_key: /);
    },
  );

  it('refuses an EC public key where an X25519 one belongs', () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(() => encryptToSecondary(publicKey.export({ type: 'spki', format: 'der' }).toString('base64'), material)).toThrow(BadRequestError);
  });
});
