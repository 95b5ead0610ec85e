import { createPublicKey } from 'node:crypto';
import { CryptoInputError } from './errors';
import {
  KEY_TYPES, generateKeyMaterial, isAsymmetricKeyType, isKeyType, keyTypeFromBackupType, keyTypeInfo, type KeyType,
} from './key-types';

describe('key types', () => {
  it('numbers types the way Vault backups do', () => {
    const expected: Record<number, KeyType> = {
      0: 'aes256-gcm96', 1: 'ecdsa-p256', 2: 'ed25519', 3: 'rsa-2048', 4: 'rsa-4096', 5: 'chacha20-poly1305',
      6: 'ecdsa-p384', 7: 'ecdsa-p521', 8: 'aes128-gcm96', 9: 'rsa-3072', 10: 'managed_key', 11: 'hmac',
    };
    for (const [n, type] of Object.entries(expected)) {
      expect(keyTypeInfo(type).backupType).toBe(Number(n));
      expect(keyTypeFromBackupType(Number(n))).toBe(type);
    }
    expect(KEY_TYPES).toHaveLength(12);
    expect(keyTypeFromBackupType(12)).toBeUndefined();
  });

  it('reports capabilities as key reads show them', () => {
    const caps = (t: KeyType) => {
      const i = keyTypeInfo(t);
      return [i.supportsEncryption, i.supportsDecryption, i.supportsSigning, i.supportsDerivation, i.supportsConvergent];
    };
    expect(caps('aes256-gcm96')).toEqual([true, true, false, true, true]);
    expect(caps('chacha20-poly1305')).toEqual([true, true, false, true, true]);
    expect(caps('ed25519')).toEqual([false, false, true, true, false]);
    expect(caps('ecdsa-p384')).toEqual([false, false, true, false, false]);
    expect(caps('rsa-3072')).toEqual([true, true, true, false, false]);
    expect(caps('hmac')).toEqual([false, false, false, false, false]);
  });

  it('names curves and key sizes as Vault reports them', () => {
    expect(keyTypeInfo('ecdsa-p256').publicKeyName).toBe('P-256');
    expect(keyTypeInfo('ecdsa-p521').publicKeyName).toBe('P-521');
    expect(keyTypeInfo('rsa-4096').publicKeyName).toBe('rsa-4096');
    expect(keyTypeInfo('ed25519').publicKeyName).toBe('ed25519');
    expect(keyTypeInfo('aes128-gcm96').keySize).toBe(16);
    expect(keyTypeInfo('aes256-gcm96').keySize).toBe(32);
    expect(keyTypeInfo('hmac').keySize).toBe(32);
  });

  it('recognises type names', () => {
    expect(isKeyType('rsa-3072')).toBe(true);
    expect(isKeyType('rsa-1024')).toBe(false);
    expect(isKeyType('toString')).toBe(false);
    expect(isAsymmetricKeyType('hmac')).toBe(false);
    expect(isAsymmetricKeyType('ecdsa-p256')).toBe(true);
  });

  describe('generateKeyMaterial', () => {
    it.each([['aes128-gcm96', 16], ['aes256-gcm96', 32], ['chacha20-poly1305', 32], ['hmac', 32]] as const)(
      '%s gives %i random bytes', async (type, size) => {
        const a = await generateKeyMaterial(type);
        const b = await generateKeyMaterial(type);
        if (a.kind !== 'symmetric' || b.kind !== 'symmetric') throw new Error('expected bytes');
        expect(a.key).toHaveLength(size);
        expect(a.key.equals(b.key)).toBe(false);
      });

    it('honours and checks the hmac key size', async () => {
      const m = await generateKeyMaterial('hmac', 64);
      expect(m.kind === 'symmetric' && m.key.length).toBe(64);
      await expect(generateKeyMaterial('hmac', 31)).rejects.toThrow(CryptoInputError);
      await expect(generateKeyMaterial('hmac', 513)).rejects.toThrow(/key_size/);
    });

    it.each([
      ['ed25519', 'ed25519', undefined],
      ['ecdsa-p256', 'ec', 'prime256v1'],
      ['ecdsa-p384', 'ec', 'secp384r1'],
      ['ecdsa-p521', 'ec', 'secp521r1'],
      ['rsa-2048', 'rsa', 2048],
      ['rsa-3072', 'rsa', 3072],
    ] as const)('%s gives a key pair with its PKCS#8 DER', async (type, kind, detail) => {
      const m = await generateKeyMaterial(type);
      if (m.kind !== 'asymmetric') throw new Error('expected a key pair');
      expect(m.privateKey.asymmetricKeyType).toBe(kind);
      const d = m.privateKey.asymmetricKeyDetails ?? {};
      if (kind === 'ec') expect(d.namedCurve).toBe(detail);
      if (kind === 'rsa') {
        expect(d.modulusLength).toBe(detail);
        expect(d.publicExponent).toBe(65537n);
      }
      expect(m.privateKeyDer.equals(m.privateKey.export({ format: 'der', type: 'pkcs8' }))).toBe(true);
      expect(createPublicKey(m.privateKey).export({ format: 'der', type: 'spki' }).equals(
        m.publicKey.export({ format: 'der', type: 'spki' }))).toBe(true);
    });

    it('cannot make managed keys', async () => {
      await expect(generateKeyMaterial('managed_key')).rejects.toThrow(CryptoInputError);
    });
  });
});
