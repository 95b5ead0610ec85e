import { appendFileSync, closeSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Entry, SnapshotMeta } from '../core/types';
import { encodeFrame } from './wal-frame';
import { WalLogStore } from './wal-log-store';

const conf = { voters: ['a'], learners: [] };
const entry = (index: number, term = 1): Entry => ({ index, term, type: 'normal', data: Buffer.from(`entry ${index}`) });
const segmentFiles = (dir: string): string[] => readdirSync(dir).filter((n) => n.endsWith('.wal')).sort();
const newest = (dir: string): string => join(dir, segmentFiles(dir).at(-1)!);

/** What another process opening the log now would load: the disk as a crash would leave it. */
async function peek(dir: string) {
  const other = await WalLogStore.open(dir);
  try {
    return await other.load();
  } finally {
    await other.close();
  }
}

describe('WalLogStore', () => {
  let root: string;
  let dir: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'strongroom-wal-'));
    dir = join(root, 'wal');
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('drops a last frame cut short by a crash, and appends after the last whole one', async () => {
    const store = await WalLogStore.open(dir);
    await store.save({ term: 1, vote: 'a', commit: 0 }, [entry(1), entry(2)]);
    const whole = statSync(newest(dir)).size;
    await store.save(undefined, [entry(3)]);
    await store.close();
    truncateSync(newest(dir), statSync(newest(dir)).size - 3);

    const again = await WalLogStore.open(dir);
    expect((await again.load()).entries.map((e) => e.index)).toEqual([1, 2]);
    expect(statSync(newest(dir)).size).toBe(whole);
    await again.save(undefined, [entry(3, 2)]);
    await again.close();
    const loaded = await peek(dir);
    expect(loaded.entries.map((e) => `${e.index}/${e.term}`)).toEqual(['1/1', '2/1', '3/2']);
    expect(loaded.hardState).toEqual({ term: 1, vote: 'a', commit: 0 });
  });

  it('drops a last frame that fails its checksum', async () => {
    const store = await WalLogStore.open(dir);
    await store.save({ term: 1, vote: null, commit: 0 }, [entry(1)]);
    await store.save(undefined, [entry(2)]);
    await store.close();
    const bytes = readFileSync(newest(dir));
    bytes[bytes.length - 1]! ^= 0xff;
    writeFileSync(newest(dir), bytes);
    expect((await peek(dir)).entries.map((e) => e.index)).toEqual([1]);
  });

  it('refuses to open when a segment other than the newest is damaged', async () => {
    const store = await WalLogStore.open(dir, { segmentBytes: 64 });
    for (let i = 1; i <= 4; i++) await store.save({ term: 1, vote: null, commit: i - 1 }, [entry(i)]);
    await store.close();
    const [oldest] = segmentFiles(dir);
    const bytes = readFileSync(join(dir, oldest!));
    bytes[bytes.length - 2]! ^= 0xff;
    writeFileSync(join(dir, oldest!), bytes);
    await expect(WalLogStore.open(dir)).rejects.toThrow(`the Raft log segment ${oldest} is damaged`);
  });

  it('refuses a frame whose checksum holds but whose contents are impossible', async () => {
    const store = await WalLogStore.open(dir);
    await store.close();
    const frame = encodeFrame({ entries: [entry(1)] });
    frame[8 + 1 + 4 + 16] = 9; // the entry's type byte
    frame.writeUInt32LE(crc32(frame.subarray(8)), 4);
    appendFileSync(newest(dir), frame);
    await expect(WalLogStore.open(dir)).rejects.toThrow('unknown type 9');
  });

  it('keeps the hard state and snapshot when compaction deletes the segments that first recorded them', async () => {
    const store = await WalLogStore.open(dir, { segmentBytes: 200 });
    await store.save({ term: 3, vote: 'b', commit: 0 }, [entry(1, 3)]);
    for (let i = 2; i <= 40; i++) await store.save(undefined, [entry(i, 3)]);
    const before = segmentFiles(dir).length;
    expect(before).toBeGreaterThan(5);
    const snapshot: SnapshotMeta = { index: 30, term: 3, conf };
    await store.compact(snapshot, 25);
    const after = segmentFiles(dir).length;
    expect(after).toBeLessThan(before);
    await store.close();

    const loaded = await peek(dir);
    expect(loaded.hardState).toEqual({ term: 3, vote: 'b', commit: 0 });
    expect(loaded.snapshot).toEqual(snapshot);
    expect(loaded.entries.map((e) => e.index)).toEqual(Array.from({ length: 10 }, (_, i) => 31 + i));
  });

  it('writes a commit-only hard state with the next frame, so a crash loses only that commit', async () => {
    const store = await WalLogStore.open(dir);
    await store.save({ term: 2, vote: 'a', commit: 0 }, [entry(1, 2)]);
    const size = statSync(newest(dir)).size;
    await store.saveCommit({ term: 2, vote: 'a', commit: 1 });
    expect(statSync(newest(dir)).size).toBe(size);
    expect((await store.load()).hardState?.commit).toBe(1);
    expect((await peek(dir)).hardState?.commit).toBe(0);

    await store.save(undefined, [entry(2, 2)]);
    expect((await peek(dir)).hardState?.commit).toBe(1);
    await store.close();
  });

  it('continues in the previous segment when a new one never got its first frame', async () => {
    const store = await WalLogStore.open(dir, { segmentBytes: 64 });
    await store.save({ term: 1, vote: null, commit: 0 }, [entry(1)]);
    await store.save(undefined, [entry(2)]);
    await store.close();
    const files = segmentFiles(dir).length;
    const next = (parseInt(segmentFiles(dir).at(-1)!.slice(0, 16), 16) + 1).toString(16).padStart(16, '0');
    writeFileSync(join(dir, `${next}.wal`), Buffer.from([1, 2, 3]));

    const again = await WalLogStore.open(dir, { segmentBytes: 64 });
    expect(segmentFiles(dir)).toHaveLength(files);
    expect((await again.load()).entries.map((e) => e.index)).toEqual([1, 2]);
    await again.save(undefined, [entry(3)]);
    await again.close();
    expect((await peek(dir)).entries.map((e) => e.index)).toEqual([1, 2, 3]);
  });

  it('refuses every write after one failed, since the file may end in a partial frame', async () => {
    const store = await WalLogStore.open(dir);
    await store.save({ term: 1, vote: null, commit: 0 }, [entry(1)]);
    closeSync((store as unknown as { fd: number }).fd);
    await expect(store.save(undefined, [entry(2)])).rejects.toThrow();
    await expect(store.save(undefined, [entry(2)])).rejects.toThrow('not writable after an earlier write failed');
  });
});
