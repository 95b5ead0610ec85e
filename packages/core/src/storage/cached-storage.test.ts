import { runStorageConformance } from '@strongroom/base';
import { CachedStorage } from './cached-storage';
import { MemoryStorage } from './memory-storage';

runStorageConformance('CachedStorage over MemoryStorage', async () => ({ storage: new CachedStorage(new MemoryStorage()) }));

/** A 16 KiB cache over memory, with `count` keys of 500 bytes written through it, and the inner reads spied on. */
async function smallCacheWritten(count: number) {
  const inner = new MemoryStorage();
  const get = jest.spyOn(inner, 'get');
  const cached = new CachedStorage(inner, 16 * 1024);
  for (let i = 0; i < count; i++) await cached.put(`k${i}`, Buffer.alloc(500));
  return { cached, get };
}

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

  it('stays within its byte budget by dropping the oldest entries', async () => {
    const { cached, get } = await smallCacheWritten(100);
    get.mockClear();
    await cached.get('k99');
    expect(get).not.toHaveBeenCalled();
    await cached.get('k0');
    expect(get).toHaveBeenCalledTimes(1);
  });

  it('keeps an entry read since it was cached over older ones nobody read, without moving it on the hit', async () => {
    const { cached, get } = await smallCacheWritten(20);
    // A Map entry deleted and set again on every hit stays in V8's hash chain as a hole until
    // the table is rebuilt: the hot keys' chains grew without bound between rebuilds.
    const held = (cached as unknown as { entries: Map<string, unknown> }).entries;
    const moved = jest.spyOn(held, 'delete');
    for (let n = 0; n < 3; n++) await cached.get('k0');
    expect(moved).not.toHaveBeenCalled();
    moved.mockRestore();
    for (let i = 20; i < 40; i++) await cached.put(`k${i}`, Buffer.alloc(500));
    get.mockClear();
    await cached.get('k0');
    expect(get).not.toHaveBeenCalled();
    await cached.get('k1');
    expect(get).toHaveBeenCalledTimes(1);
  });

  it('holds what it caches as one-byte strings and answers every byte value as it was written', async () => {
    const inner = new MemoryStorage();
    const get = jest.spyOn(inner, 'get');
    const everyByte = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    await inner.put('read', everyByte);
    const cached = new CachedStorage(inner);
    await cached.get('read');
    await cached.put('put', everyByte.subarray(128));
    await cached.txn([{ type: 'put', key: 'txn', value: everyByte.subarray(0, 128) }]);
    expect(await cached.get('read')).toEqual(everyByte);
    expect(await cached.get('put')).toEqual(everyByte.subarray(128));
    expect(await cached.get('txn')).toEqual(everyByte.subarray(0, 128));
    expect(get).toHaveBeenCalledTimes(1);
    // Neither a Buffer of its own per value (two objects and a native allocation each) nor a
    // slice of the shared pool (which keeps a whole pool block alive).
    const held = (cached as unknown as { entries: Map<string, unknown> }).entries;
    for (const key of ['read', 'put', 'txn']) expect(typeof held.get(key)).toBe('string');
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

  it.each([
    ['a write through the cache', async (cache: CachedStorage) => cache.put('k', Buffer.from('new')), 'new'],
    ['a delete through the cache', async (cache: CachedStorage) => cache.delete('k'), null],
    ['a write beneath it and the invalidation of its key', async (cache: CachedStorage, inner: MemoryStorage) => {
      await inner.put('k', Buffer.from('new'));
      cache.invalidate(['k']);
    }, 'new'],
    ['a write beneath it and the invalidation of everything', async (cache: CachedStorage, inner: MemoryStorage) => {
      await inner.put('k', Buffer.from('new'));
      cache.invalidate();
    }, 'new'],
  ])('does not cache a value read before %s that finished first', async (_what, change, expected) => {
    const { inner, storage, release } = slowReads();
    await inner.put('k', Buffer.from('old'));
    const cache = new CachedStorage(storage);
    const read = cache.get('k');
    await new Promise((r) => setImmediate(r));
    await change(cache, inner);
    release();
    expect((await read)?.toString()).toBe('old');
    const after = cache.get('k');
    await new Promise((r) => setImmediate(r));
    release();
    expect((await after)?.toString() ?? null).toBe(expected);
  });

  it('still caches reads of other keys while writes are in flight', async () => {
    const { inner, storage, release } = slowReads();
    await inner.put('config', Buffer.from('c'));
    let finishWrite: () => void = () => {};
    Object.assign(storage, {
      txn: async (ops: Parameters<MemoryStorage['txn']>[0]) => {
        await new Promise<void>((r) => { finishWrite = r; });
        return inner.txn(ops);
      },
    });
    const get = jest.spyOn(storage, 'get');
    const cache = new CachedStorage(storage);
    /** Writes `key` while a read of `read` is in flight, and ends the write before the read. */
    const readAcrossWrite = async (key: string, value: string, read: string) => {
      const write = cache.txn([{ type: 'put', key, value: Buffer.from(value) }]);
      const reading = cache.get(read);
      await new Promise((r) => setImmediate(r));
      finishWrite();
      await write;
      release();
      return reading;
    };
    // A read of another key that is in flight when the write ends is still cached.
    expect((await readAcrossWrite('data/1', 'v', 'config'))?.toString()).toBe('c');
    expect((await cache.get('config'))?.toString()).toBe('c');
    expect(get).toHaveBeenCalledTimes(1);
    // A read of the written key in flight when the write ends is not; the write's own value is.
    await readAcrossWrite('data/1', 'w', 'data/1');
    const again = cache.get('data/1');
    await new Promise((r) => setImmediate(r));
    release();
    expect((await again)?.toString()).toBe('w');
    expect(get).toHaveBeenCalledTimes(2);
  });

  it('does not cache a write that overlapped another write of the same key', async () => {
    const inner = new MemoryStorage();
    const finishers: Array<() => void> = [];
    const storage = Object.assign(Object.create(inner) as MemoryStorage, {
      put: async (key: string, value: Buffer) => {
        await new Promise<void>((r) => finishers.push(r));
        return inner.put(key, value);
      },
    });
    const get = jest.spyOn(storage, 'get');
    const cache = new CachedStorage(storage);
    const first = cache.put('k', Buffer.from('1'));
    const second = cache.put('k', Buffer.from('2'));
    // The storage applies them in the other order: neither write knows which value is last.
    finishers[1]?.();
    await second;
    finishers[0]?.();
    await first;
    expect((await cache.get('k'))?.toString()).toBe('1');
    expect(get).toHaveBeenCalledTimes(1);
  });
});
