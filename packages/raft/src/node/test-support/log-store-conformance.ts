/// <reference types="jest" />
import type { Entry, HardState, SnapshotMeta } from '../../core/types';
import type { LogStore } from '../log-store';

export interface LogStoreSubject {
  store: LogStore;
  /** Closes `store` and opens the same log again, as after a restart. */
  reopen(): Promise<LogStore>;
  cleanup?: () => Promise<void>;
}

function entry(index: number, term: number, text = `e${index}`): Entry {
  return { index, term, type: 'normal', data: Buffer.from(text) };
}

function plain(entries: Entry[]): Array<{ index: number; term: number; type: string; data: string }> {
  return entries.map((e) => ({ index: e.index, term: e.term, type: e.type, data: Buffer.from(e.data).toString('hex') }));
}

/** The contract of `LogStore`, run by every implementation; `make` returns an empty store. */
export function runLogStoreConformance(name: string, make: () => Promise<LogStoreSubject>): void {
  describe(`LogStore conformance: ${name}`, () => {
    let subject: LogStoreSubject;
    let store: LogStore;

    beforeEach(async () => {
      subject = await make();
      store = subject.store;
    });

    afterEach(async () => {
      await store.close();
      await subject.cleanup?.();
    });

    async function reopen(): Promise<LogStore> {
      store = await subject.reopen();
      return store;
    }

    const conf = { voters: ['a', 'b'], learners: ['c'] };

    it('loads nothing from an empty store', async () => {
      expect(await store.load()).toEqual({ entries: [] });
    });

    it('keeps entries and hard state across a reopen, with binary data, every type and a null vote', async () => {
      const hs: HardState = { term: 3, vote: 'node-é', commit: 2 };
      const entries: Entry[] = [
        entry(1, 1),
        { index: 2, term: 2, type: 'empty', data: new Uint8Array(0) },
        { index: 3, term: 3, type: 'conf', data: Uint8Array.from([0, 255, 1, 0]) },
      ];
      await store.save(hs, entries);
      await store.save({ term: 4, vote: null, commit: 3 }, []);
      const loaded = await (await reopen()).load();
      expect(loaded.hardState).toEqual({ term: 4, vote: null, commit: 3 });
      expect(plain(loaded.entries)).toEqual(plain(entries));
      expect(loaded.snapshot).toBeUndefined();
    });

    it('records a commit-only hard state', async () => {
      await store.save({ term: 2, vote: 'a', commit: 0 }, [entry(1, 2)]);
      await store.saveCommit({ term: 2, vote: 'a', commit: 1 });
      expect((await (await reopen()).load()).hardState).toEqual({ term: 2, vote: 'a', commit: 1 });
    });

    it('keeps large indexes and terms exactly', async () => {
      const big = 2 ** 40 + 7;
      await store.save({ term: big, vote: 'x', commit: big }, [{ ...entry(1, big) }]);
      const loaded = await (await reopen()).load();
      expect(loaded.hardState).toEqual({ term: big, vote: 'x', commit: big });
      expect(loaded.entries[0]?.term).toBe(big);
    });

    it('appends in several saves', async () => {
      await store.save(undefined, [entry(1, 1), entry(2, 1)]);
      await store.save(undefined, [entry(3, 1)]);
      expect((await (await reopen()).load()).entries.map((e) => e.index)).toEqual([1, 2, 3]);
    });

    it('replaces a conflicting suffix, dropping stored entries beyond the new tail', async () => {
      await store.save(undefined, [1, 2, 3, 4, 5].map((i) => entry(i, 1)));
      await store.save(undefined, [entry(3, 2, 'new3'), entry(4, 2, 'new4')]);
      const loaded = await (await reopen()).load();
      expect(plain(loaded.entries)).toEqual(plain([entry(1, 1), entry(2, 1), entry(3, 2, 'new3'), entry(4, 2, 'new4')]));
      await store.save(undefined, [entry(5, 2)]);
      expect((await store.load()).entries.map((e) => `${e.index}/${e.term}`)).toEqual(['1/1', '2/1', '3/2', '4/2', '5/2']);
    });

    it('refuses to leave a gap', async () => {
      await store.save(undefined, [entry(1, 1)]);
      await expect(store.save(undefined, [entry(3, 1)])).rejects.toThrow(/gap/);
    });

    it('installs a snapshot by dropping the whole log, then appends after it', async () => {
      await store.save(undefined, [1, 2, 3, 4].map((i) => entry(i, 1)));
      const snapshot: SnapshotMeta = { index: 10, term: 3, conf };
      await store.save({ term: 3, vote: null, commit: 10 }, [entry(11, 3)], snapshot);
      const loaded = await (await reopen()).load();
      expect(loaded.snapshot).toEqual(snapshot);
      expect(loaded.entries.map((e) => e.index)).toEqual([11]);
      expect(loaded.hardState?.commit).toBe(10);
      await store.save(undefined, [entry(12, 3)]);
      expect((await store.load()).entries.map((e) => e.index)).toEqual([11, 12]);
    });

    it('installs a snapshot that is behind the stored log by dropping it all the same', async () => {
      await store.save(undefined, [1, 2, 3, 4].map((i) => entry(i, 1)));
      await store.save(undefined, [], { index: 2, term: 1, conf });
      expect((await store.load()).entries).toEqual([]);
    });

    it('compacts: records the snapshot, truncates to the given index and loads only what follows the snapshot', async () => {
      await store.save(undefined, Array.from({ length: 20 }, (_, i) => entry(i + 1, 1)));
      const snapshot: SnapshotMeta = { index: 15, term: 1, conf };
      await store.compact(snapshot, 12);
      let loaded = await (await reopen()).load();
      expect(loaded.snapshot).toEqual(snapshot);
      expect(loaded.entries.map((e) => e.index)).toEqual([16, 17, 18, 19, 20]);
      // The trailing window (13..15) still lets appends continue the log without a gap.
      await store.save(undefined, [entry(21, 1)]);
      await store.compact({ index: 21, term: 1, conf }, 21);
      loaded = await (await reopen()).load();
      expect(loaded.entries).toEqual([]);
      await store.save(undefined, [entry(22, 2)]);
      expect((await (await reopen()).load()).entries.map((e) => e.index)).toEqual([22]);
    });
  });
}
