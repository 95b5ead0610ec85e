import fs from 'node:fs';
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
/** Where a segment's frames end: its length, or where the zeros written ahead of the log begin. */
function framesEnd(path: string): number {
  const bytes = readFileSync(path);
  let at = 0;
  while (at + 8 <= bytes.length && bytes.readUInt32LE(at) !== 0) at += 8 + bytes.readUInt32LE(at);
  return at;
}

type WriteDone = (err: Error | null, written: number, buffer: Buffer) => void;
/** fs.write in the positional form the store calls it with. */
type PositionalWrite = (fd: number, buffer: Buffer, offset: number, length: number, position: number, done: WriteDone) => void;

/**
 * Opens a store with `options`, saves entries 1-100 one by one and closes it, with every
 * fs.write going through `wrap` (given the real write).
 */
async function save100Through(dir: string, options: Parameters<typeof WalLogStore.open>[1], wrap: (real: PositionalWrite, ...args: Parameters<PositionalWrite>) => void): Promise<void> {
  const real = fs.write as unknown as PositionalWrite;
  const spy = jest.spyOn(fs, 'write').mockImplementation(((...args: Parameters<PositionalWrite>) => wrap(real, ...args)) as unknown as typeof fs.write);
  try {
    const store = await WalLogStore.open(dir, options);
    await store.save({ term: 1, vote: 'a', commit: 0 }, [entry(1)]);
    for (let i = 2; i <= 100; i++) await store.save(undefined, [entry(i)]);
    await store.close();
  } finally {
    spy.mockRestore();
  }
}

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

  // A log written without zeros ahead of its frames, as an earlier release wrote it (or a segment
  // whose zero-filling failed), ends in its last frame.
  it('drops a last frame cut short by a crash, and appends after the last whole one', async () => {
    const store = await WalLogStore.open(dir, { preallocateBytes: 0 });
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
    const store = await WalLogStore.open(dir, { preallocateBytes: 0 });
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

  describe('zeros written ahead of the log', () => {
    it('writes them after the last frame, overwrites them with the next frames, and cuts them on close', async () => {
      const store = await WalLogStore.open(dir, { preallocateBytes: 4096 });
      await store.save({ term: 1, vote: 'a', commit: 0 }, [entry(1)]);
      for (let i = 2; i <= 20; i++) await store.save(undefined, [entry(i)]);
      const path = newest(dir);
      while (statSync(path).size <= framesEnd(path)) await new Promise((r) => setTimeout(r, 5));
      expect(readFileSync(path).subarray(framesEnd(path)).every((b) => b === 0)).toBe(true);
      // What a crash now would leave: the frames, then zeros (opened from a copy, since opening cuts them).
      const copy = join(root, 'crashed');
      fs.cpSync(dir, copy, { recursive: true });
      expect((await peek(copy)).entries.map((e) => e.index)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      await store.save(undefined, [entry(21)]);
      await store.close();
      // Closed cleanly, the log ends in its last frame, as an earlier release wrote it.
      expect(statSync(path).size).toBe(framesEnd(path));
      expect((await peek(dir)).entries.map((e) => e.index)).toHaveLength(21);
    });

    it('drops a frame cut short among them, with the zeros after it', async () => {
      const store = await WalLogStore.open(dir, { preallocateBytes: 4096 });
      await store.save({ term: 1, vote: 'a', commit: 0 }, [entry(1), entry(2)]);
      const whole = framesEnd(newest(dir));
      await store.save(undefined, [entry(3)]);
      await store.close();
      // The last write reached the disk only in part: its end is still the zeros it was written over.
      const bytes = readFileSync(newest(dir));
      bytes.fill(0, framesEnd(newest(dir)) - 3, framesEnd(newest(dir)));
      writeFileSync(newest(dir), bytes);

      const again = await WalLogStore.open(dir, { preallocateBytes: 4096 });
      expect((await again.load()).entries.map((e) => e.index)).toEqual([1, 2]);
      expect(statSync(newest(dir)).size).toBe(whole);
      await again.save(undefined, [entry(3, 2)]);
      await again.close();
      expect((await peek(dir)).entries.map((e) => `${e.index}/${e.term}`)).toEqual(['1/1', '2/1', '3/2']);
    });

    it('never lets a zero-filling write cover a frame written beside it', async () => {
      // Every write in flight, by its byte range: no two may overlap.
      const inFlight = new Set<[number, number]>();
      let overlaps = 0;
      // Chunks smaller than a frame: nearly every frame reaches into the chunk being filled.
      await save100Through(dir, { preallocateBytes: 16 }, (real, fd, buf, offset, length, position, done) => {
        const range: [number, number] = [position, position + length];
        for (const [from, to] of inFlight) if (range[0] < to && from < range[1]) overlaps++;
        inFlight.add(range);
        real(fd, buf, offset, length, position, (err, n, b) => {
          inFlight.delete(range);
          done(err, n, b);
        });
      });
      expect(overlaps).toBe(0);
      expect((await peek(dir)).entries.map((e) => e.index)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    });

    it('cuts a segment to its last frame even after a zero-filling write failed part way', async () => {
      // Every fourth fill (all zeros, a chunk long), the last a segment of 1000 bytes gets, writes
      // all but a few of its bytes, then fails: the disk filled up. What it wrote reaches past the
      // frames the segment ends with.
      let fills = 0;
      await save100Through(dir, { segmentBytes: 1000, preallocateBytes: 256 }, (real, fd, buf, offset, length, position, done) => {
        if (length === 256 && buf.subarray(offset, offset + length).every((b) => b === 0) && fills++ % 4 === 3) {
          real(fd, buf, offset, length - 6, position, () => done(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }), 0, buf));
          return;
        }
        real(fd, buf, offset, length, position, done);
      });
      const files = segmentFiles(dir);
      expect(files.length).toBeGreaterThan(2);
      expect(fills).toBeGreaterThan(4);
      for (const name of files) expect(statSync(join(dir, name)).size).toBe(framesEnd(join(dir, name)));
      expect((await peek(dir)).entries.map((e) => e.index)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    });

    it('cuts a segment to its last frame before the next one starts', async () => {
      const store = await WalLogStore.open(dir, { segmentBytes: 300, preallocateBytes: 256 });
      await store.save({ term: 1, vote: 'a', commit: 0 }, [entry(1)]);
      for (let i = 2; i <= 40; i++) await store.save(undefined, [entry(i)]);
      await store.close();
      const files = segmentFiles(dir);
      expect(files.length).toBeGreaterThan(3);
      for (const name of files.slice(0, -1)) expect(statSync(join(dir, name)).size).toBe(framesEnd(join(dir, name)));
      expect((await peek(dir)).entries.map((e) => e.index)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    });

    it('refuses them at the end of a segment other than the newest', async () => {
      const store = await WalLogStore.open(dir, { segmentBytes: 64 });
      for (let i = 1; i <= 4; i++) await store.save({ term: 1, vote: null, commit: i - 1 }, [entry(i)]);
      await store.close();
      const [oldest] = segmentFiles(dir);
      appendFileSync(join(dir, oldest!), Buffer.alloc(64));
      await expect(WalLogStore.open(dir)).rejects.toThrow(`the Raft log segment ${oldest} is damaged`);
    });
  });
});
