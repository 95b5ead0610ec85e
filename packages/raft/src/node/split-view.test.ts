import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { ClassicLevel } from 'classic-level';
import { encodeTxn } from './command';
import { DEFAULT_CHANGE_LOG_LIMITS } from './change-log';
import { MemoryNetwork } from './memory-transport';
import { RaftNode } from './raft-node';
import { ScanThreads } from './scan-threads';
import { SnapshotReader, framedSnapshotStream, snapshotStream, type SnapshotHeader } from './snapshot-file';
import { DEFAULT_SCAN_OPTIONS, StateMachine, type ScanOptions } from './state-machine';
import { FAST, tempDir, waitFor } from './test-support/cluster';

/** Splits every state, however small, into ranges of a few records. */
const SPLIT_ALWAYS: ScanOptions = { ...DEFAULT_SCAN_OPTIONS, threads: 3, minBytes: 0, rangeBytes: 1, maxRanges: 40, creditBytes: 64 * 1024 };
const CONF = { voters: ['n1'], learners: [] };

const bytes = (...parts: Array<string | number[]>) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p))));

/** State machine keys (data and a staged restore), some not UTF-8, with values from empty to 70 KB. */
function records(): Array<[Buffer, Buffer]> {
  const out: Array<[Buffer, Buffer]> = [];
  const value = (i: number) => Buffer.alloc([0, 1, 100, 5000, 70_000][i % 5]!, i % 251);
  for (let i = 0; i < 400; i++) out.push([bytes(`dkv/${String(i).padStart(4, '0')}`), value(i)]);
  // Not UTF-8: C0 is never valid, FF neither; a key that really holds U+FFFD reads the same either way.
  for (let i = 0; i < 12; i++) out.push([bytes('dy', [0xc0, 0x41 + i]), value(i)]);
  for (let i = 0; i < 12; i++) out.push([bytes('dy', [0xf5, 0x41 + i]), value(i + 1)]);
  out.push([bytes('dy\uFFFDreal'), value(3)]);
  out.push([bytes('d\u00e9t\u00e9/\u{1F600}'), value(2)]);
  out.push([bytes('d', [0xff, 0xff]), value(4)]);
  for (let i = 0; i < 5; i++) out.push([bytes(`r${'0'.repeat(32)}${String(i).padStart(8, '0')}`), value(i + 3)]);
  return out.sort((a, b) => Buffer.compare(a[0], b[0]));
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Opens a state machine holding `records()` in its tables (where LevelDB can size the ranges). */
async function filled(dir: string, scan: ScanOptions = SPLIT_ALWAYS): Promise<StateMachine> {
  const sm = await StateMachine.open(join(dir, 'state'), DEFAULT_CHANGE_LOG_LIMITS, scan);
  await sm.replace((async function* () { yield records(); })(), 7, 2, new Map([['n1', 'n1.example:8201']]));
  return sm;
}

describe('a snapshot view split over threads', () => {
  let dir: string;
  let sm: StateMachine | undefined;
  beforeEach(async () => {
    dir = await tempDir('strongroom-split-');
  });
  afterEach(async () => {
    await sm?.close();
    sm = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('makes the bytes of a single-thread view of the same state, over many ranges', async () => {
    sm = await filled(dir);
    const prepared = await sm.prepareSplitView();
    // Many ranges, so that threads hand over to each other many times.
    expect(prepared!.ranges.length).toBeGreaterThan(8);
    const split = await sm.splitView(prepared!);
    const view = sm.view();
    expect(split!.header).toEqual(view.header);
    const header: SnapshotHeader = { ...view.header, conf: CONF };
    const [parallel, single] = await Promise.all([collect(framedSnapshotStream(header, split!.chunks)), collect(snapshotStream(header, view.records))]);
    expect(parallel.equals(single)).toBe(true);
    const keys: Buffer[] = [];
    for await (const batch of new SnapshotReader(Readable.from([parallel])).records()) for (const [k] of batch) keys.push(Buffer.from(k));
    expect(keys).toEqual(records().map(([k]) => k));
  });

  it('reads exact bytes of keys that are not UTF-8 at the edges of ranges, and ranges that hold nothing', async () => {
    sm = await filled(dir);
    const location = join(dir, 'state', 'gen-2');
    // Cuts right before and inside the runs of keys that are not UTF-8, and two empty ranges.
    const cuts = ['dkv/0100', 'dx', 'dx0', 'dy', 'dy\u00e9', 'dy\uFFFD', 'dz', '\u00ff'];
    const ranges = ['d', ...cuts].map((gte, i) => (i < cuts.length ? { gte, lt: cuts[i] } : { gte }));
    const threads = await ScanThreads.start(location, 2, SPLIT_ALWAYS);
    await threads.capture(ranges);
    const view = sm.view();
    const header: SnapshotHeader = { ...view.header, conf: CONF };
    const [parallel, single] = await Promise.all([collect(framedSnapshotStream(header, threads.chunks())), collect(snapshotStream(header, view.records))]);
    expect(parallel.equals(single)).toBe(true);
  });

  it('fails its stream when a thread ends mid-scan, and leaves nothing of the database open', async () => {
    sm = await filled(dir, { ...SPLIT_ALWAYS, creditBytes: 1 });
    const split = await sm.splitView((await sm.prepareSplitView())!);
    const stream = framedSnapshotStream({ ...split!.header, conf: CONF }, split!.chunks);
    const reading = collect(stream);
    const threads = [...(sm as unknown as { splits: Set<ScanThreads> }).splits][0]!;
    await threads.workers[1]!.terminate();
    await expect(reading).rejects.toThrow(/snapshot scan thread 1 exited/);
    await threads.closed;
    await sm.close();
    sm = undefined;
    // Only when every thread has released its handle does LevelDB's lock go.
    const db = new ClassicLevel(join(dir, 'state', 'gen-2'));
    await db.open();
    await db.close();
  });

  it('stops its threads when the stream is destroyed', async () => {
    sm = await filled(dir, { ...SPLIT_ALWAYS, creditBytes: 1 });
    const split = await sm.splitView((await sm.prepareSplitView())!);
    const threads = [...(sm as unknown as { splits: Set<ScanThreads> }).splits][0]!;
    const stream = framedSnapshotStream({ ...split!.header, conf: CONF }, split!.chunks);
    const failed = new Promise((resolve) => stream.once('error', resolve));
    await new Promise((resolve) => stream.once('readable', resolve));
    stream.destroy(new Error('the destination failed'));
    await failed;
    await threads.closed;
    expect((sm as unknown as { splits: Set<ScanThreads> }).splits.size).toBe(0);
  });

  it('leaves a small state, or a node without threads to spare, to the single-thread view', async () => {
    sm = await filled(dir, { ...SPLIT_ALWAYS, minBytes: 1024 * 1024 * 1024 });
    expect(await sm.prepareSplitView()).toBeUndefined();
    await sm.close();
    sm = await StateMachine.open(join(dir, 'state'), DEFAULT_CHANGE_LOG_LIMITS, { ...SPLIT_ALWAYS, threads: 1 });
    expect(await sm.prepareSplitView()).toBeUndefined();
  });

  it('fails to start, clearly, when a thread cannot open the database', async () => {
    await expect(ScanThreads.start(join(dir, 'missing'), 2, SPLIT_ALWAYS)).rejects.toThrow(/snapshot scan thread \d failed/);
  });

  it('is one point in the log while writes go on: the restored state is the state at its index', async () => {
    const node = await RaftNode.open({
      id: 'n1', dataDir: dir, transport: new MemoryNetwork().transport('n1'), bootstrap: CONF, ...FAST,
      // Checkpoints flush the memtable often, so that LevelDB can size ranges of the data.
      snapshotMaxLogBytes: 64 * 1024, snapshotScan: SPLIT_ALWAYS,
    });
    try {
      const value = 'v'.repeat(1000);
      // Write i sets a key of its own and `last` to i, in one entry: a state at one index holds
      // exactly the keys up to `last`. The keys fall in every range.
      const key = (i: number) => `${(i * 7919 % 16).toString(16)}/${i}`;
      const write = (i: number) => node.propose(encodeTxn([{ type: 'put', key: key(i), value: Buffer.from(value) }, { type: 'put', key: 'last', value: Buffer.from(String(i)) }]));
      let i = 0;
      for (; i < 300; i++) await write(i);
      await waitFor(() => node.stats().checkpoints > 0, 'a checkpoint');
      let writing = true;
      const writer = (async () => {
        for (; writing && i < 5000; i++) await write(i);
      })();
      const start = jest.spyOn(ScanThreads, 'start');
      let snapshot: Buffer;
      try {
        const out = new PassThrough();
        const taken = collect(out);
        await node.writeSnapshot(out);
        snapshot = await taken;
        expect(start).toHaveBeenCalledTimes(1);
      } finally {
        start.mockRestore();
        writing = false;
        await writer;
      }
      const restored = await StateMachine.open(join(dir, 'restored'));
      try {
        await restored.replaceFrom(new SnapshotReader(Readable.from([snapshot])));
        const last = Number((await restored.get('last'))!.toString());
        expect(last).toBeGreaterThanOrEqual(299);
        for (let j = 0; j < i; j++) expect([j, (await restored.get(key(j))) !== null]).toEqual([j, j <= last]);
      } finally {
        await restored.close();
      }
    } finally {
      await node.close();
    }
  });
});
