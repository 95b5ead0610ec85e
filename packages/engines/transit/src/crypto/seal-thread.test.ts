import { randomBytes } from 'node:crypto';
import { aeadDecrypt } from './aead';
import type { AeadKeyType } from './key-types';
import { sealThread } from './seal-thread';

const TYPES: [AeadKeyType, number][] = [['aes128-gcm96', 16], ['aes256-gcm96', 32], ['chacha20-poly1305', 32]];

describe('the helper thread for batch encryption', () => {
  afterAll(() => sealThread.stop());

  it.each(TYPES)('seals with %s what this thread decrypts, in order, each with its own nonce', async (type, size) => {
    const key = randomBytes(size);
    const plaintexts = Array.from({ length: 50 }, (_, i) => Buffer.from(`item ${i} `.repeat(i)));
    const sealed = await sealThread.seal(type, key, 'vault:v3:', plaintexts);
    expect(sealed).toHaveLength(50);
    const nonces = new Set<string>();
    sealed.forEach((text, i) => {
      expect(text.startsWith('vault:v3:')).toBe(true);
      const payload = Buffer.from(text.slice('vault:v3:'.length), 'base64');
      nonces.add(payload.subarray(0, 12).toString('hex'));
      expect(aeadDecrypt(type, key, payload).equals(plaintexts[i] as Buffer)).toBe(true);
    });
    expect(nonces.size).toBe(50);
  });

  it('starts again after it was stopped, failing only what was in flight', async () => {
    const key = randomBytes(32);
    const inFlight = sealThread.seal('aes256-gcm96', key, 'p:', Array.from({ length: 2000 }, () => randomBytes(1024)));
    await sealThread.stop();
    await expect(inFlight).rejects.toThrow(/helper thread exited/);
    const [text] = await sealThread.seal('aes256-gcm96', key, 'p:', [Buffer.from('again')]);
    expect(aeadDecrypt('aes256-gcm96', key, Buffer.from((text as string).slice(2), 'base64')).toString()).toBe('again');
  });
});
