/// <reference types="jest" />
import { randomBytes } from 'node:crypto';
import type { Storage } from './storage';

export interface ConformanceSubject {
  storage: Storage;
  /** Runs after the suite has closed `storage`, e.g. to remove a temporary directory. */
  cleanup?: () => Promise<void>;
}

/**
 * The behaviour every `Storage` must share, as a Jest suite, so that an engine tested against
 * MemoryStorage behaves the same on disk. Call it at the top level of a test file; `make` runs
 * before each test and must return an empty storage.
 */
export function runStorageConformance(name: string, make: () => Promise<ConformanceSubject>): void {
  describe(`Storage conformance: ${name}`, () => {
    let subject: ConformanceSubject | undefined;
    let s: Storage;

    beforeEach(async () => {
      subject = await make();
      s = subject.storage;
    });

    afterEach(async () => {
      const current = subject;
      subject = undefined;
      if (current === undefined) return;
      try {
        await current.storage.close();
      } finally {
        await current.cleanup?.();
      }
    });

    async function putAll(keys: string[]): Promise<void> {
      for (const key of keys) await s.put(key, Buffer.from(key));
    }

    describe('get/put/delete', () => {
      it('returns null for a missing key', async () => {
        expect(await s.get('missing')).toBeNull();
        expect(await s.get('missing/nested')).toBeNull();
      });

      it('round-trips binary values, including empty and every byte value', async () => {
        const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
        await s.put('all-bytes', all);
        await s.put('empty', Buffer.alloc(0));
        await s.put('nul', Buffer.from([0, 0, 0]));

        expect(await s.get('all-bytes')).toEqual(all);
        const empty = await s.get('empty');
        expect(empty).not.toBeNull();
        expect(empty?.length).toBe(0);
        expect(await s.get('nul')).toEqual(Buffer.from([0, 0, 0]));
      });

      it('returns Buffers', async () => {
        await s.put('k', Buffer.from('v'));
        expect(Buffer.isBuffer(await s.get('k'))).toBe(true);
      });

      it('overwrites', async () => {
        await s.put('k', Buffer.from('first, and longer'));
        await s.put('k', Buffer.from('second'));
        expect((await s.get('k'))?.toString()).toBe('second');
      });

      it('deletes, and deleting a missing key is not an error', async () => {
        await s.put('k', Buffer.from('v'));
        await s.delete('k');
        expect(await s.get('k')).toBeNull();
        await expect(s.delete('k')).resolves.toBeUndefined();
        await expect(s.delete('never/existed')).resolves.toBeUndefined();
      });

      it('keeps keys that differ only by a trailing part apart', async () => {
        await s.put('a', Buffer.from('1'));
        await s.put('a/b', Buffer.from('2'));
        await s.put('ab', Buffer.from('3'));
        await s.delete('a');
        expect(await s.get('a')).toBeNull();
        expect((await s.get('a/b'))?.toString()).toBe('2');
        expect((await s.get('ab'))?.toString()).toBe('3');
      });

      it('stores unicode keys exactly', async () => {
        const keys = ['é', 'e\u0301', '日本/語', '😀', '\uffff', 'tab\tkey', 'space key'];
        await putAll(keys);
        for (const key of keys) expect((await s.get(key))?.toString()).toBe(key);
      });

      it('stores large values (1 MiB)', async () => {
        const big = randomBytes(1024 * 1024);
        await s.put('big', big);
        const got = await s.get('big');
        expect(got?.length).toBe(big.length);
        expect(got?.equals(big)).toBe(true);
      });
    });

    describe('isolation of returned and supplied buffers', () => {
      it('returns copies: mutating a result does not change storage', async () => {
        await s.put('k', Buffer.from('value'));
        const first = await s.get('k');
        first?.fill(0);
        expect((await s.get('k'))?.toString()).toBe('value');
      });

      it('copies on put: mutating the argument afterwards does not change storage', async () => {
        const value = Buffer.from('value');
        await s.put('k', value);
        value.fill(0);
        expect((await s.get('k'))?.toString()).toBe('value');
      });

      it('copies on txn: mutating an op value afterwards does not change storage', async () => {
        const value = Buffer.from('value');
        await s.txn([{ type: 'put', key: 'k', value }]);
        value.fill(0);
        expect((await s.get('k'))?.toString()).toBe('value');
      });
    });

    describe('list', () => {
      it('is empty on an empty storage', async () => {
        expect(await s.list('')).toEqual([]);
        expect(await s.list('a/')).toEqual([]);
      });

      it('is empty for a missing prefix', async () => {
        await putAll(['a/b', 'c']);
        expect(await s.list('missing/')).toEqual([]);
        expect(await s.list('c/')).toEqual([]);
        expect(await s.list('a/b/')).toEqual([]);
      });

      it('lists the root with leaves as they are and folders once with a trailing slash', async () => {
        await putAll(['x/1', 'x/2', 'x/3/deep', 'leaf', 'y/z/w']);
        expect(await s.list('')).toEqual(['leaf', 'x/', 'y/']);
      });

      it('lists nested folders relative to the prefix', async () => {
        await putAll(['a/b/c/d', 'a/b/e', 'a/f', 'g']);
        expect(await s.list('a/')).toEqual(['b/', 'f']);
        expect(await s.list('a/b/')).toEqual(['c/', 'e']);
        expect(await s.list('a/b/c/')).toEqual(['d']);
      });

      it('lists a key and a folder of the same name as two entries', async () => {
        await putAll(['a', 'a/b']);
        expect(await s.list('')).toEqual(['a', 'a/']);
      });

      it('does not confuse folders with keys that share their first characters', async () => {
        // '-' and '.' sort just below '/', and '0' just above it.
        await putAll(['a', 'a-b/c', 'a.txt', 'a/b', 'a/c/d', 'a/c/e', 'a0', 'ab/c', 'b']);
        expect(await s.list('')).toEqual(['a', 'a-b/', 'a.txt', 'a/', 'a0', 'ab/', 'b']);
        expect(await s.list('a/')).toEqual(['b', 'c/']);
        expect(await s.list('a/c/')).toEqual(['d', 'e']);
      });

      it('returns sorted results whatever the insertion order', async () => {
        const keys = ['m', 'c/1', 'z', 'a', 'k/k/k', 'b', 'y/1', 'c/2', 'A', '0'];
        for (const key of [...keys].reverse()) await s.put(key, Buffer.from('v'));
        expect(await s.list('')).toEqual(['0', 'A', 'a', 'b', 'c/', 'k/', 'm', 'y/', 'z']);
      });

      it('handles unicode names, sorted as JavaScript sorts strings', async () => {
        // '日本/😀' is in UTF-8 byte order above '日本/\uffff', so a store that skips a folder by
        // seeking to a '\uffff' sentinel would meet it again.
        await putAll(['é', 'z', '日本/x', '日本/y/z', '日本/😀', '😀', '😀/inner', '\uffff', '\uffff/x', 'ü/1']);
        const expected = ['é', 'z', '日本/', '😀', '😀/', '\uffff', '\uffff/', 'ü/'].sort();
        expect(await s.list('')).toEqual(expected);
        expect(await s.list('日本/')).toEqual(['x', 'y/', '😀']);
        expect(await s.list('😀/')).toEqual(['inner']);
      });

      it('forgets a folder once its last key is deleted', async () => {
        await putAll(['f/1', 'f/2/x', 'g']);
        await s.delete('f/1');
        expect(await s.list('')).toEqual(['f/', 'g']);
        await s.delete('f/2/x');
        expect(await s.list('')).toEqual(['g']);
        expect(await s.list('f/')).toEqual([]);
      });

      it('lists folders with many keys and many folders correctly', async () => {
        const keys: string[] = [];
        for (let i = 0; i < 30; i++) {
          const folder = `d${String(i).padStart(2, '0')}`;
          for (let j = 0; j < 10; j++) keys.push(`${folder}/k${j}`);
          keys.push(`${folder}leaf`);
        }
        await s.txn(keys.map((key) => ({ type: 'put', key, value: Buffer.from(key) })));
        const listed = await s.list('');
        expect(listed).toHaveLength(60);
        expect(listed).toEqual([...new Set(keys.map((k) => (k.includes('/') ? k.slice(0, k.indexOf('/') + 1) : k)))].sort());
        expect(await s.list('d07/')).toEqual(Array.from({ length: 10 }, (_, j) => `k${j}`));
      });
    });

    describe('txn', () => {
      it('applies puts and deletes', async () => {
        await s.put('old', Buffer.from('x'));
        await s.txn([
          { type: 'put', key: 'a', value: Buffer.from('1') },
          { type: 'put', key: 'b/c', value: Buffer.from('2') },
          { type: 'delete', key: 'old' },
          { type: 'delete', key: 'never-existed' },
        ]);
        expect((await s.get('a'))?.toString()).toBe('1');
        expect((await s.get('b/c'))?.toString()).toBe('2');
        expect(await s.get('old')).toBeNull();
        expect(await s.list('')).toEqual(['a', 'b/']);
      });

      it('applies operations in order', async () => {
        await s.txn([
          { type: 'put', key: 'gone', value: Buffer.from('1') },
          { type: 'delete', key: 'gone' },
          { type: 'delete', key: 'back' },
          { type: 'put', key: 'back', value: Buffer.from('2') },
          { type: 'put', key: 'twice', value: Buffer.from('first') },
          { type: 'put', key: 'twice', value: Buffer.from('second') },
        ]);
        expect(await s.get('gone')).toBeNull();
        expect((await s.get('back'))?.toString()).toBe('2');
        expect((await s.get('twice'))?.toString()).toBe('second');
      });

      it('accepts an empty transaction', async () => {
        await expect(s.txn([])).resolves.toBeUndefined();
        expect(await s.list('')).toEqual([]);
      });

      it('is never seen half-applied by a concurrent reader', async () => {
        // Reading in the order the txn writes: a reader that sees a new value and then an old
        // one has caught the txn part-way through. This can only catch a violation, not prove
        // atomicity.
        const keys = Array.from({ length: 50 }, (_, i) => `t/${String(i).padStart(2, '0')}`);
        await s.txn(keys.map((key) => ({ type: 'put', key, value: Buffer.from('old') })));
        const write = s.txn(keys.map((key) => ({ type: 'put', key, value: Buffer.from('new') })));
        let done = false;
        void write.then(() => (done = true), () => (done = true));
        for (let round = 0; round < 20 && !done; round++) {
          let sawNew = false;
          for (const key of keys) {
            const v = (await s.get(key))?.toString();
            if (v === 'new') sawNew = true;
            else if (sawNew) throw new Error(`read ${key} as ${String(v)} after a newer key in the same txn`);
          }
        }
        await write;
        for (const key of keys) expect((await s.get(key))?.toString()).toBe('new');
      });
    });
  });
}
