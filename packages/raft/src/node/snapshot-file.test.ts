import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SnapshotDir, SnapshotFormatError, SnapshotReader, SnapshotWriter, snapshotStream, type SnapshotHeader } from './snapshot-file';

async function* stream(bytes: Buffer): AsyncGenerator<Buffer> {
  yield bytes;
}

/** Polls `cond` every 10 ms for at most 5 s. */
async function waitUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
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

  // Version 1 as files already written hold it: restoring one taken by an older build depends on
  // every later build reading, and writing, exactly these bytes.
  const V1_HEADER: SnapshotHeader = { index: 42, term: 3, conf: { voters: ['a', 'b'], learners: ['c'] }, addresses: { a: 'a.example:8201' } };
  const V1_BATCHES: Array<Array<[Buffer, Buffer]>> = [
    [[Buffer.from('da'), Buffer.from('1')], [Buffer.from('db'), Buffer.alloc(0)]],
    [[Buffer.from('dc/\u00e9'), Buffer.from([0, 255, 7])], [Buffer.from('rz'), Buffer.from('staged')]],
  ];
  const V1_BYTES = Buffer.from(
    'U1JTTkFQAAEAAABleyJpbmRleCI6NDIsInRlcm0iOjMsImNvbmYiOnsidm90ZXJzIjpbImEiLCJiIl0sImxlYXJuZXJzIjpbImMiXX0sImFkZHJlc3NlcyI6eyJhIjoiYS5leGFtcGxlOjgyMDEifX0A' +
    'AAACAAAAAWRhMQAAAAIAAAAAZGIAAAAFAAAAA2RjL8OpAP8HAAAAAgAAAAZyenN0YWdlZP////9oaOpthmFJe2i3iVBksL7XAgjNPsv1sga0/7BeMnA1Lg==',
    'base64',
  );

  it('writes version 1 byte for byte, as a file and as a stream, and reads it back', async () => {
    const w = await SnapshotWriter.create(join(dir, 'v1.part'), V1_HEADER);
    for (const batch of V1_BATCHES) await w.add(batch);
    await w.finish(join(dir, 'v1.snap'));
    expect((await readFile(join(dir, 'v1.snap'))).equals(V1_BYTES)).toBe(true);
    // An empty batch, as a view may hand over at its end, adds nothing.
    const streamed: Buffer[] = [];
    for await (const chunk of snapshotStream(V1_HEADER, (async function* () { yield* V1_BATCHES; yield []; })())) streamed.push(chunk as Buffer);
    expect(Buffer.concat(streamed).equals(V1_BYTES)).toBe(true);
    // Keys given as strings (as a state view hands them out) are their UTF-8 bytes.
    const asStrings = V1_BATCHES.map((batch) => batch.map(([k, v]) => [k.toString('utf8'), v] as const));
    const fromStrings: Buffer[] = [];
    for await (const chunk of snapshotStream(V1_HEADER, (async function* () { yield* asStrings; })())) fromStrings.push(chunk as Buffer);
    expect(Buffer.concat(fromStrings).equals(V1_BYTES)).toBe(true);
    const read = await readAll(stream(V1_BYTES));
    expect(read.header).toEqual(V1_HEADER);
    expect(read.records).toEqual(V1_BATCHES.flat().map(([k, v]) => [k.toString(), v.toString('hex')]));
  });

  it('writes string keys of any UTF-8 length as their bytes, however many are not ASCII', async () => {
    // The encoder sizes a batch for ASCII keys: keys of 2-, 3- and 4-byte characters, first,
    // last and throughout, need more room than that, and short values leave it no slack.
    const keys = ['d\u00e9', 'da', 'd\u20ac\u20ac\u20ac', 'dplain/key', 'd\u{1f510}x', 'd' + '\u00fc'.repeat(300), 'dz\u4e2d'];
    const batch = keys.map((k, i) => [Buffer.from(k, 'utf8'), Buffer.from([i])] as [Buffer, Buffer]);
    const collect = async (batches: Array<Array<readonly [string | Buffer, Buffer]>>) => {
      const chunks: Buffer[] = [];
      for await (const chunk of snapshotStream(header(3), (async function* () { yield* batches; })())) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    };
    const fromBytes = await collect([batch]);
    for (const order of [batch, [...batch].reverse(), batch.filter((_, i) => i !== 1)]) {
      const asStrings = order.map(([k, v]) => [k.toString('utf8'), v] as const);
      expect((await collect([asStrings])).equals(await collect([order]))).toBe(true);
    }
    const read = await readAll(stream(fromBytes));
    expect(read.records.map(([k]) => k)).toEqual(keys);
  });

  it('ends the records it streams when the stream is destroyed', async () => {
    let closed = false;
    const records = (async function* () {
      try {
        for (let i = 0; ; i++) yield [[Buffer.from(`dk${i}`), Buffer.alloc(64 * 1024)] as [Buffer, Buffer]];
      } finally {
        closed = true;
      }
    })();
    const out = snapshotStream(header(1), records);
    for await (const chunk of out) {
      void chunk;
      break;
    }
    await waitUntil(() => closed);
    expect(closed).toBe(true);
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
