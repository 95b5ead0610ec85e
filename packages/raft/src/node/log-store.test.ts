import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelLogStore } from './level-log-store';
import type { Entry } from '../core/types';
import { MemoryLogStore } from './log-store';
import { runLogStoreConformance } from './test-support/log-store-conformance';
import { WalLogStore } from './wal-log-store';

runLogStoreConformance('MemoryLogStore', async () => {
  const store = new MemoryLogStore();
  return { store, reopen: async () => store };
});

runLogStoreConformance('LevelLogStore', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'strongroom-log-'));
  let current = await LevelLogStore.open(join(dir, 'raft'));
  return {
    store: current,
    reopen: async () => {
      await current.close();
      current = await LevelLogStore.open(join(dir, 'raft'));
      return current;
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

for (const segmentBytes of [undefined, 64]) {
  // 64 bytes: nearly every write starts a new segment, so rotation and segment deletion run in every case.
  runLogStoreConformance(`WalLogStore${segmentBytes ? ` with ${segmentBytes}-byte segments` : ''}`, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'strongroom-wal-'));
    const options = segmentBytes ? { segmentBytes } : {};
    let current = await WalLogStore.open(join(dir, 'wal'), options);
    return {
      store: current,
      reopen: async () => {
        await current.close();
        current = await WalLogStore.open(join(dir, 'wal'), options);
        return current;
      },
      cleanup: () => rm(dir, { recursive: true, force: true }),
    };
  });
}

describe('LevelLogStore compaction', () => {
  const conf = { voters: ['a'], learners: [] };
  const entry = (index: number): Entry => ({ index, term: 1, type: 'normal', data: Buffer.from(`e${index}`) });

  it('stays whole when it stops between recording the snapshot and dropping the entries it covers', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'strongroom-log-'));
    try {
      const store = await LevelLogStore.open(join(dir, 'raft'));
      await store.save({ term: 1, vote: '', commit: 20 }, Array.from({ length: 20 }, (_, i) => entry(i + 1)));
      // The process dies after the synced snapshot record, before the range delete runs.
      const db = (store as unknown as { db: { clear: () => Promise<void> } }).db;
      db.clear = () => Promise.reject(new Error('killed'));
      await expect(store.compact({ index: 15, term: 1, conf }, 12)).rejects.toThrow('killed');
      await store.close();

      let again = await LevelLogStore.open(join(dir, 'raft'));
      const loaded = await again.load();
      expect(loaded.snapshot?.index).toBe(15);
      expect(loaded.entries.map((e) => e.index)).toEqual([16, 17, 18, 19, 20]);
      // The next compaction removes what the interrupted one left behind.
      await again.save(undefined, [entry(21)]);
      await again.compact({ index: 21, term: 1, conf }, 21);
      await again.close();
      again = await LevelLogStore.open(join(dir, 'raft'));
      expect((await again.load()).entries).toEqual([]);
      await again.save(undefined, [entry(22)]);
      expect((await again.load()).entries.map((e) => e.index)).toEqual([22]);
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
