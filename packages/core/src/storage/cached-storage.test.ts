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
