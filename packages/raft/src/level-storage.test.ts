import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { runStorageConformance, type TxnOp } from '@strongroom/core';
import { LevelStorage } from './level-storage';

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'strongroom-level-'));
}

runStorageConformance('LevelStorage', async () => {
  const dir = await tempDir();
  return { storage: await LevelStorage.open(join(dir, 'db')), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

describe('LevelStorage', () => {
  let dir: string;
  const open: LevelStorage[] = [];

  async function openAt(path: string): Promise<LevelStorage> {
    const storage = await LevelStorage.open(path);
    open.push(storage);
    return storage;
  }

  beforeEach(async () => {
    dir = await tempDir();
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    for (const storage of open.splice(0)) await storage.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('creates missing parent directories', async () => {
    const storage = await openAt(join(dir, 'a', 'b', 'db'));
    await storage.put('k', Buffer.from('v'));
    expect((await storage.get('k'))?.toString()).toBe('v');
  });

  it('keeps data across close and reopen', async () => {
    const path = join(dir, 'db');
    const first = await LevelStorage.open(path);
    await first.put('sys/keyring', Buffer.from([1, 2, 3]));
    await first.txn([
      { type: 'put', key: 'kv/a', value: Buffer.from('a') },
      { type: 'put', key: 'kv/b/c', value: Buffer.alloc(0) },
    ]);
    await first.put('gone', Buffer.from('x'));
    await first.delete('gone');
    await first.close();

    const second = await openAt(path);
    expect(await second.get('sys/keyring')).toEqual(Buffer.from([1, 2, 3]));
    expect((await second.get('kv/a'))?.toString()).toBe('a');
    expect((await second.get('kv/b/c'))?.length).toBe(0);
    expect(await second.get('gone')).toBeNull();
    expect(await second.list('')).toEqual(['kv/', 'sys/']);
  });

  it('refuses a directory another LevelStorage holds, naming the directory', async () => {
    const path = join(dir, 'db');
    await openAt(path);
    const err: unknown = await LevelStorage.open(path).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(path);
    expect((err as Error).message).toMatch(/another .*server.* may be using it/);
    // The original LevelDB error stays reachable for diagnosis.
    expect((err as Error).cause).toBeDefined();
  });

  describe('listing next to a large sub-tree', () => {
    const BIG = 50_000;

    /** Counts keys LevelDB hands back to any key iterator, i.e. how many keys a list reads. */
    function countKeysRead(): { readonly count: number } {
      const counter = { count: 0 };
      const original = ClassicLevel.prototype.keys;
      jest.spyOn(ClassicLevel.prototype, 'keys').mockImplementation(function (this: ClassicLevel, ...args: unknown[]) {
        const it = (original as (...a: unknown[]) => ReturnType<typeof original>).apply(this, args);
        const next = it.next.bind(it);
        const nextv = it.nextv.bind(it);
        const all = it.all.bind(it);
        it.next = async () => {
          const key = await next();
          if (key !== undefined) counter.count++;
          return key;
        };
        it.nextv = async (size: number, options?: {}) => {
          const keys = await nextv(size, options ?? {});
          counter.count += keys.length;
          return keys;
        };
        it.all = async (options?: {}) => {
          const keys = await all(options ?? {});
          counter.count += keys.length;
          return keys;
        };
        return it;
      });
      return counter;
    }

    let storage: LevelStorage;

    beforeEach(async () => {
      storage = await openAt(join(dir, 'db'));
      const value = Buffer.from('v');
      for (let start = 0; start < BIG; start += 5_000) {
        const ops: TxnOp[] = [];
        for (let i = start; i < start + 5_000; i++) ops.push({ type: 'put', key: `root/big/${String(i).padStart(6, '0')}`, value });
        await storage.txn(ops);
      }
      await storage.txn(
        ['root/a', 'root/b', 'root/big', 'root/big.txt', 'root/big0', 'root/c/x', 'root/d', 'other/1', 'root/big/zzz/deep'].map(
          (key) => ({ type: 'put', key, value }),
        ),
      );
    });

    it('lists the parent without reading the sub-tree', async () => {
      const counter = countKeysRead();
      expect(await storage.list('root/')).toEqual(['a', 'b', 'big', 'big.txt', 'big/', 'big0', 'c/', 'd']);
      // The spy must have seen the listing, or a zero count would prove nothing.
      expect(counter.count).toBeGreaterThan(0);
      expect(counter.count).toBeLessThan(50);
    });

    it('lists the root without reading the sub-tree', async () => {
      const counter = countKeysRead();
      expect(await storage.list('')).toEqual(['other/', 'root/']);
      expect(counter.count).toBeGreaterThan(0);
      expect(counter.count).toBeLessThan(20);
    });

    it('lists a sibling folder without reading the sub-tree', async () => {
      const counter = countKeysRead();
      expect(await storage.list('root/c/')).toEqual(['x']);
      expect(counter.count).toBeLessThan(5);
    });

    it('still lists the large folder itself completely', async () => {
      const listed = await storage.list('root/big/');
      expect(listed).toHaveLength(BIG + 1);
      expect(listed[0]).toBe('000000');
      expect(listed[BIG - 1]).toBe(String(BIG - 1).padStart(6, '0'));
      expect(listed[BIG]).toBe('zzz/');
    });
  });
});
