import { randomBytes } from 'node:crypto';
import { SHARED_BATCH_MIN_ITEMS, sealBatch } from './batch-seal';
import { aeadDecrypt, sealThread } from './crypto';
import type { SealJob } from './encryption';

const key = randomBytes(32);
const job = (i: number, extra: Partial<SealJob> = {}): SealJob => ({
  type: 'aes256-gcm96', key, version: 2, plaintext: Buffer.from(`plaintext ${i}`), includeNonce: true, ...extra,
});
const opened = (ciphertext: string, k = key) => aeadDecrypt('aes256-gcm96', k, Buffer.from(ciphertext.slice('vault:v2:'.length), 'base64')).toString();

describe('sealBatch', () => {
  afterEach(() => jest.restoreAllMocks());
  afterAll(() => sealThread.stop());

  it('shares a large batch with the helper thread and keeps every item in its place', async () => {
    const helper = jest.spyOn(sealThread, 'seal');
    const jobs: Array<SealJob | undefined> = Array.from({ length: 200 }, (_, i) => job(i));
    jobs[7] = undefined;
    const out = await sealBatch(jobs);
    expect(helper).toHaveBeenCalledTimes(1);
    expect((helper.mock.calls[0]?.[3] as Buffer[]).length).toBeGreaterThan(0);
    expect(out[7]).toBeUndefined();
    out.forEach((result, i) => {
      if (i === 7) return;
      expect(result && 'ciphertext' in result && opened(result.ciphertext)).toBe(`plaintext ${i}`);
    });
  });

  it('seals a small batch on this thread alone', async () => {
    const helper = jest.spyOn(sealThread, 'seal');
    const out = await sealBatch(Array.from({ length: SHARED_BATCH_MIN_ITEMS - 1 }, (_, i) => job(i)));
    expect(helper).not.toHaveBeenCalled();
    expect(out.every((r) => r && 'ciphertext' in r)).toBe(true);
  });

  it('keeps fixed nonces, associated data and other keys on this thread', async () => {
    const helper = jest.spyOn(sealThread, 'seal');
    const other = randomBytes(32);
    const nonce = Buffer.alloc(12, 1);
    const jobs = Array.from({ length: 100 }, (_, i) => job(i));
    jobs[0] = job(0, { nonce });
    jobs[1] = job(1, { associatedData: Buffer.from('aad') });
    jobs[2] = job(2, { key: other });
    const out = await sealBatch(jobs);
    const handed = helper.mock.calls[0]?.[3] as Buffer[];
    expect(handed.map((p) => p.toString())).not.toEqual(expect.arrayContaining(['plaintext 0', 'plaintext 1', 'plaintext 2']));
    const first = out[0] as { ciphertext: string };
    expect(Buffer.from(first.ciphertext.slice('vault:v2:'.length), 'base64').subarray(0, 12).equals(nonce)).toBe(true);
    expect(opened((out[2] as { ciphertext: string }).ciphertext, other)).toBe('plaintext 2');
  });

  it('seals the helper\'s share itself when the helper fails', async () => {
    jest.spyOn(sealThread, 'seal').mockRejectedValue(new Error('no thread'));
    const out = await sealBatch(Array.from({ length: 100 }, (_, i) => job(i)));
    out.forEach((result, i) => expect(result && 'ciphertext' in result && opened(result.ciphertext)).toBe(`plaintext ${i}`));
  });
});
