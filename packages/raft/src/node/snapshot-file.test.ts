import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SnapshotDir, SnapshotFormatError, SnapshotReader, SnapshotWriter, type SnapshotHeader } from './snapshot-file';

async function* stream(bytes: Buffer): AsyncGenerator<Buffer> {
  yield bytes;
}

describe('snapshot files', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-snap-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const header = (index: number): SnapshotHeader => ({ index, term: 2, conf: { voters: ['a'], learners: [] }, addresses: { a: 'host:1' } });

  async function write(h: SnapshotHeader, records: Array<[string, Buffer]>, path: string): Promise<void> {
    const w = await SnapshotWriter.create(join(dir, 'x.part'), h);
    // In uneven batches, as a state view hands them over.
    for (let i = 0; i < records.length; i += 700) await w.add(records.slice(i, i + 700).map(([k, v]) => [Buffer.from(k), v] as const));
    await w.finish(path);
  }

  async function readAll(source: AsyncIterable<Uint8Array>): Promise<{ header: SnapshotHeader; records: Array<[string, string]> }> {
    const reader = new SnapshotReader(source);
    const h = await reader.header();
    const records: Array<[string, string]> = [];
    for await (const batch of reader.records()) for (const [k, v] of batch) records.push([k.toString(), v.toString('hex')]);
    return { header: h, records };
  }

  it('round-trips header and records, across reads of any chunk size', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 7);
    const records: Array<[string, Buffer]> = [['da', Buffer.from('1')], ['db', Buffer.alloc(0)], ['dbig', big]];
    for (let i = 0; i < 3000; i++) records.push([`dk${String(i).padStart(5, '0')}`, Buffer.from(String(i))]);
    const path = join(dir, 'one.snap');
    await write(header(5), records, path);
    const expected = records.map(([k, v]) => [k, v.toString('hex')]);
    const whole = await readAll(createReadStream(path));
    expect(whole.header).toEqual(header(5));
    expect(whole.records).toEqual(expected);
    const bytes = await readFile(path);
    const tiny = async function* () {
      for (let i = 0; i < bytes.length; i += 4093) yield bytes.subarray(i, i + 4093);
    };
    expect((await readAll(tiny())).records).toEqual(expected);
  });

  it('detects a flipped byte, truncation, trailing bytes and a foreign file', async () => {
    const path = join(dir, 'one.snap');
    await write(header(1), [['dkey', Buffer.from('value')]], path);
    const good = await readFile(path);
    const flipped = Buffer.from(good);
    flipped.writeUInt8(flipped.readUInt8(flipped.length - 40) ^ 1, flipped.length - 40);
    const cases = [flipped, good.subarray(0, good.length - 1), Buffer.concat([good, Buffer.from('x')]), Buffer.from('not a snapshot at all')];
    for (const bytes of cases) {
      await expect(new SnapshotReader(stream(bytes)).verify()).rejects.toBeInstanceOf(SnapshotFormatError);
    }
    await expect(new SnapshotReader(stream(good)).verify()).resolves.toEqual(header(1));
  });

  it('keeps the newest two files plus the pinned one, and drops partial files on open', async () => {
    const snaps = await SnapshotDir.open(dir);
    for (const index of [10, 20, 30]) {
      const h = header(index);
      await write(h, [['dk', Buffer.from(String(index))]], snaps.pathFor(h));
      await snaps.added(h);
    }
    await snaps.prune({ index: 10, term: 2, conf: header(10).conf });
    expect((await readdir(dir)).filter((n) => n.endsWith('.snap'))).toHaveLength(3);
    await snaps.prune(undefined);
    expect(snaps.latest()?.header.index).toBe(30);
    expect(snaps.find(10, 2)).toBeUndefined();
    await writeFile(join(dir, 'leftover.part'), 'half');
    const reopened = await SnapshotDir.open(dir);
    expect(reopened.find(20, 2)?.header).toEqual(header(20));
    expect((await readdir(dir)).sort()).toEqual(['snapshot-0000000000000020-2.snap', 'snapshot-0000000000000030-2.snap']);
  });

  it('receives a stream, and refuses a corrupt one without leaving a file', async () => {
    const source = join(dir, 'source.snap');
    await write(header(7), [['dk', Buffer.from('v')]], source);
    const snaps = await SnapshotDir.open(join(dir, 'node'));
    const file = await snaps.receive(createReadStream(source));
    expect(file.header.index).toBe(7);
    const bad = Buffer.from(await readFile(source));
    bad.writeUInt8(bad.readUInt8(20) ^ 0xff, 20);
    await expect(snaps.receive(stream(bad))).rejects.toBeInstanceOf(SnapshotFormatError);
    expect(await readdir(join(dir, 'node'))).toEqual(['snapshot-0000000000000007-2.snap']);
  });
});
