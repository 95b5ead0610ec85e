import { MemoryStorage } from '@strongroom/core';
import { generateKeyPolicy } from './key-policy';
import { KeyStore } from './key-store';

const options = {
  name: 'k', type: 'aes256-gcm96', derived: false, convergentEncryption: false, exportable: false,
  allowPlaintextBackup: false, keySize: 0, autoRotatePeriod: 0,
};

describe('KeyStore', () => {
  it('a reader that misses the cache during a write sees the written key, never the older one', async () => {
    const storage = new MemoryStorage();
    const store = new KeyStore();
    await store.update(storage, 'k', async () => ({ change: { next: await generateKeyPolicy(options, 0) }, result: null }));
    store.invalidate();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const writing = store.update(storage, 'k', async (current) => {
      await gate;
      const next = current!.clone();
      next.deletionAllowed = true;
      return { change: { next }, result: null };
    });
    const reading = store.get(storage, 'k');
    release();
    await writing;
    expect((await reading)?.deletionAllowed).toBe(true);
    expect((await store.get(storage, 'k'))?.deletionAllowed).toBe(true);
  });

  it('never changes an instance a reader holds', async () => {
    const storage = new MemoryStorage();
    const store = new KeyStore();
    await store.update(storage, 'k', async () => ({ change: { next: await generateKeyPolicy(options, 0) }, result: null }));
    const held = await store.get(storage, 'k');
    await store.update(storage, 'k', async (current) => {
      const next = current!.clone();
      await next.addGeneratedVersion(1000);
      return { change: { next }, result: null };
    });
    expect(held?.latestVersion).toBe(1);
    expect(held?.versions.size).toBe(1);
    expect((await store.get(storage, 'k'))?.latestVersion).toBe(2);
  });

  it('keeps storage and cache unchanged when the change throws', async () => {
    const storage = new MemoryStorage();
    const store = new KeyStore();
    await store.update(storage, 'k', async () => ({ change: { next: await generateKeyPolicy(options, 0) }, result: null }));
    await expect(store.update(storage, 'k', async () => { throw new Error('refused'); })).rejects.toThrow('refused');
    expect((await store.get(storage, 'k'))?.latestVersion).toBe(1);
  });
});
