import { generateKeyPolicy, KeyPolicy } from './key-policy';

const base = {
  name: 'k', derived: false, convergentEncryption: false, exportable: false, allowPlaintextBackup: false, keySize: 0, autoRotatePeriod: 0,
};

describe('KeyPolicy', () => {
  it.each(['aes256-gcm96', 'ed25519', 'ecdsa-p384', 'rsa-2048', 'hmac'])('survives a storage round trip (%s)', async (type) => {
    const p = await generateKeyPolicy({ ...base, type }, 1234);
    const back = KeyPolicy.fromStored(JSON.parse(JSON.stringify(p.toStored())));
    expect(back.toStored()).toEqual(p.toStored());
    const v = back.version(1);
    expect(v?.createdAt).toBe(1234);
    if (type === 'ed25519' || type === 'ecdsa-p384' || type === 'rsa-2048') {
      expect(v?.publicKey().equals(p.version(1)!.publicKey())).toBe(true);
    }
  });

  it('rebuilds an ed25519 public key from its stored raw form when there is no private key', async () => {
    const p = await generateKeyPolicy({ ...base, type: 'ed25519' }, 0);
    const stored = p.toStored();
    const publicOnly = { ...stored.versions['1']!, private_key: undefined };
    delete publicOnly.private_key;
    const back = KeyPolicy.fromStored({ ...stored, versions: { 1: publicOnly } });
    expect(back.version(1)?.hasPrivateKey()).toBe(false);
    expect(back.version(1)?.publicKey().equals(p.version(1)!.publicKey())).toBe(true);
  });

  it('stores an hmac key as its HMAC secret only, of key_size bytes', async () => {
    const p = await generateKeyPolicy({ ...base, type: 'hmac', keySize: 48 }, 0);
    const v = p.toStored().versions['1'];
    expect(v?.key).toBeUndefined();
    expect(Buffer.from(v?.hmac_key ?? '', 'base64')).toHaveLength(48);
  });

  it('marks new versions of convergent keys with the current nonce scheme', async () => {
    const p = await generateKeyPolicy({ ...base, type: 'aes256-gcm96', derived: true, convergentEncryption: true }, 0);
    expect(p.toStored().convergent_version).toBe(-1);
    expect(p.toStored().versions['1']?.convergent_version).toBe(3);
    expect(p.convergentVersionOf(p.version(1)!)).toBe(3);
  });
});
