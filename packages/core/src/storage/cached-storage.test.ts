import { CachedStorage } from './cached-storage';
import { MemoryStorage } from './memory-storage';
import { runStorageConformance } from './storage-conformance';

runStorageConformance('CachedStorage over MemoryStorage', async () => ({ storage: new CachedStorage(new MemoryStorage()) }));

describe('CachedStorage', () => {
  it('answers repeated reads from memory and sees its own writes', async () => {
    const inner = new MemoryStorage();
    const get = jest.spyOn(inner, 'get');
    const cached = new CachedStorage(inner);
    await inner.put('a', Buffer.from('1'));
    expect((await cached.get('a'))?.toString()).toBe('1');
    expect((await cached.get('a'))?.toString()).toBe('1');
    expect(get).toHaveBeenCalledTimes(1);
    await cached.txn([{ type: 'put', key: 'a', value: Buffer.from('2') }, { type: 'delete', key: 'b' }]);
    expect((await cached.get('a'))?.toString()).toBe('2');
    expect(await cached.get('b')).toBeNull();
    expect(get).toHaveBeenCalledTimes(1);
  });

  it('reads through again after invalidate, for writers beneath it', async () => {
    const inner = new MemoryStorage();
    const cached = new CachedStorage(inner);
    await cached.put('k', Buffer.from('old'));
    await inner.put('k', Buffer.from('new'));
    expect((await cached.get('k'))?.toString()).toBe('old');
    cached.invalidate(['k']);
    expect((await cached.get('k'))?.toString()).toBe('new');
  });

  it('stays within its byte budget by dropping the least recently used entries', async () => {
    const inner = new MemoryStorage();
    const get = jest.spyOn(inner, 'get');
    const cached = new CachedStorage(inner, 16 * 1024);
    for (let i = 0; i < 100; i++) await cached.put(`k${i}`, Buffer.alloc(500));
    get.mockClear();
    await cached.get('k99');
    expect(get).not.toHaveBeenCalled();
    await cached.get('k0');
    expect(get).toHaveBeenCalledTimes(1);
  });
});

describe('CachedStorage with reads and writes in flight together', () => {
  /** Storage whose reads answer only when released, so a test can interleave them with writes. */
  function slowReads() {
    const inner = new MemoryStorage();
    const held: Array<() => void> = [];
    const storage = Object.assign(Object.create(inner) as MemoryStorage, {
      get: async (key: string) => {
        const value = await inner.get(key);
        await new Promise<void>((r) => held.push(r));
        return value;
      },
    });
    return { inner, storage, release: () => held.splice(0).forEach((r) => r()) };
  }

  it('does not cache a value read before a write that finished first', async () => {
    const { inner, storage, release } = slowReads();
    await inner.put('k', Buffer.from('old'));
    const cache = new CachedStorage(storage);
    const read = cache.get('k');
    await new Promise((r) => setImmediate(r));
    await cache.put('k', Buffer.from('new'));
    release();
    expect((await read)?.toString()).toBe('old');
    const after = cache.get('k');
    await new Promise((r) => setImmediate(r));
    release();
    expect((await after)?.toString()).toBe('new');
  });

  it('does not cache a value read before a delete or an invalidation', async () => {
    const { inner, storage, release } = slowReads();
    await inner.put('k', Buffer.from('old'));
    const cache = new CachedStorage(storage);
    const read = cache.get('k');
    await new Promise((r) => setImmediate(r));
    await cache.delete('k');
    release();
    await read;
    const after = cache.get('k');
    await new Promise((r) => setImmediate(r));
    release();
    expect(await after).toBeNull();

    await inner.put('j', Buffer.from('one'));
    const stale = cache.get('j');
    await new Promise((r) => setImmediate(r));
    await inner.put('j', Buffer.from('two'));
    cache.invalidate(['j']);
    release();
    await stale;
    const fresh = cache.get('j');
    await new Promise((r) => setImmediate(r));
    release();
    expect((await fresh)?.toString()).toBe('two');
  });
});
