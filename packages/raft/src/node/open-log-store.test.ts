import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Entry } from '../core/types';
import { LevelLogStore } from './level-log-store';
import { openLogStore } from './open-log-store';
import { tempDir } from './test-support/cluster';

const entry = (index: number): Entry => ({ index, term: 2, type: 'normal', data: Buffer.from(`e${index}`) });

describe('openLogStore', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await tempDir('strongroom-open-log-');
  });
  afterEach(() => rm(dataDir, { recursive: true, force: true }));

  it('moves a log kept in LevelDB by an earlier release into the write-ahead log, losing nothing', async () => {
    const old = await LevelLogStore.open(join(dataDir, 'raft'));
    const snapshot = { index: 5, term: 2, conf: { voters: ['a', 'b'], learners: [] } };
    await old.save({ term: 2, vote: 'b', commit: 6 }, [1, 2, 3, 4, 5, 6, 7, 8].map(entry));
    await old.compact(snapshot, 4);
    await old.close();

    const store = await openLogStore(dataDir);
    expect(existsSync(join(dataDir, 'raft'))).toBe(false);
    const loaded = await store.load();
    expect(loaded.hardState).toEqual({ term: 2, vote: 'b', commit: 6 });
    expect(loaded.snapshot).toEqual(snapshot);
    expect(loaded.entries.map((e) => [e.index, Buffer.from(e.data).toString()])).toEqual([[6, 'e6'], [7, 'e7'], [8, 'e8']]);
    await store.save(undefined, [entry(9)]);
    await store.close();

    const again = await openLogStore(dataDir);
    expect((await again.load()).entries.map((e) => e.index)).toEqual([6, 7, 8, 9]);
    await again.close();
  });

  it('starts an empty log in a new data directory', async () => {
    const store = await openLogStore(dataDir);
    expect(await store.load()).toEqual({ entries: [] });
    await store.close();
    expect(existsSync(join(dataDir, 'wal'))).toBe(true);
  });
});
