import { statSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runStorageConformance, type Storage, type TxnOp } from '@strongroom/base';
import { encodeConfChange } from '../core/conf-change';
import type { Entry } from '../core/types';
import { encodeAddress, encodeRestoreChunk, encodeRestoreCommit, encodeTxn, type Check } from './command';
import { SnapshotReader, SnapshotWriter } from './snapshot-file';
import { StateMachine } from './state-machine';

function txnEntry(index: number, ops: TxnOp[], checks: Check[] = [], term = 1): Entry {
  return { index, term, type: 'normal', data: encodeTxn(ops, checks) };
}

const put = (key: string, value: string): TxnOp => ({ type: 'put', key, value: Buffer.from(value) });

/** The state machine fed entries directly, seen as a Storage: its reads and writes must match every other Storage. */
class DirectStorage implements Storage {
  private index: number;
  constructor(private readonly sm: StateMachine) {
    this.index = sm.applied;
  }
  get(key: string) {
    return this.sm.get(key);
  }
  list(prefix: string) {
    return this.sm.list(prefix);
  }
  async put(key: string, value: Buffer) {
    await this.txn([{ type: 'put', key, value }]);
  }
  async delete(key: string) {
    await this.txn([{ type: 'delete', key }]);
  }
  async txn(ops: TxnOp[]) {
    await this.sm.apply([txnEntry(++this.index, ops)]);
  }
  close() {
    return this.sm.close();
  }
}

runStorageConformance('StateMachine', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'strongroom-sm-'));
  return { storage: new DirectStorage(await StateMachine.open(dir)), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

describe('StateMachine', () => {
  let dir: string;
  let sm: StateMachine;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-sm-'));
    sm = await StateMachine.open(join(dir, 'state'));
  });
  afterEach(async () => {
    await sm.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it('evaluates checks against the state before the batch plus the batch itself, in order', async () => {
    await sm.apply([txnEntry(1, [put('k', 'v1')])]);
    const out = await sm.apply([
      txnEntry(2, [put('k', 'v2')], [{ key: 'k', value: Buffer.from('v1') }]), // holds
      txnEntry(3, [put('k', 'v3')], [{ key: 'k', value: Buffer.from('v1') }]), // stale: k is v2 now
      txnEntry(4, [put('new', 'x')], [{ key: 'new', value: null }]), // absent: holds
      txnEntry(5, [put('new', 'y')], [{ key: 'new', value: null }]), // no longer absent
      { index: 6, term: 1, type: 'empty', data: new Uint8Array(0) },
      { index: 7, term: 1, type: 'normal', data: Uint8Array.from([42]) }, // malformed: refused everywhere alike
    ]);
    expect(out.results).toEqual([true, false, true, false, undefined, false]);
    expect((await sm.get('k'))?.toString()).toBe('v2');
    expect((await sm.get('new'))?.toString()).toBe('x');
    expect(sm.applied).toBe(7);
  });

  it('keeps data and the applied index together across a reopen, and skips entries already applied', async () => {
    await sm.apply([txnEntry(1, [put('a', '1')]), txnEntry(2, [put('b', '2')], [], 3)]);
    await sm.close();
    sm = await StateMachine.open(join(dir, 'state'));
    expect([sm.applied, sm.appliedTerm]).toEqual([2, 3]);
    // Replaying 1..3 after a restart: only 3 is new, so 'a' keeps the value it was given at 1.
    await sm.apply([txnEntry(1, [put('a', 'replayed')]), txnEntry(2, [put('b', 'replayed')]), txnEntry(3, [put('c', '3')])]);
    expect((await sm.get('a'))?.toString()).toBe('1');
    expect((await sm.get('b'))?.toString()).toBe('2');
    expect((await sm.get('c'))?.toString()).toBe('3');
    expect(sm.applied).toBe(3);
  });

  it('tracks member addresses from conf entries and address commands', async () => {
    const conf = (index: number, type: 'addLearner' | 'remove', node: string, address?: string): Entry => ({
      index, term: 1, type: 'conf',
      data: encodeConfChange({ type, node, ...(address && { context: Buffer.from(address) }) }),
    });
    await sm.apply([
      conf(1, 'addLearner', 'n2', 'h2:1'),
      { index: 2, term: 1, type: 'normal', data: encodeAddress('n1', 'h1:1') },
      conf(3, 'addLearner', 'n3', 'h3:1'),
      conf(4, 'remove', 'n2'),
    ]);
    expect(Object.fromEntries(sm.addresses)).toEqual({ n1: 'h1:1', n3: 'h3:1' });
    await sm.close();
    sm = await StateMachine.open(join(dir, 'state'));
    expect(Object.fromEntries(sm.addresses)).toEqual({ n1: 'h1:1', n3: 'h3:1' });
  });

  it('makes everything applied durable at a checkpoint, in a table file rather than only its unsynced log', async () => {
    await sm.apply([txnEntry(1, [put('a', '1')]), txnEntry(2, [put('b', '2')], [], 3)]);
    const [gen] = (await readdir(join(dir, 'state'))).filter((n) => n.startsWith('gen-'));
    const files = async () => readdir(join(dir, 'state', gen!));
    const logBytes = async () => {
      let total = 0;
      for (const n of (await files()).filter((f) => f.endsWith('.log'))) total += statSync(join(dir, 'state', gen!, n)).size;
      return total;
    };
    expect(await logBytes()).toBeGreaterThan(0);
    expect(await sm.checkpoint()).toEqual({ index: 2, term: 3 });
    expect(await logBytes()).toBe(0);
    expect((await files()).some((f) => f.endsWith('.ldb'))).toBe(true);
    expect((await sm.get('b'))?.toString()).toBe('2');
  });

  it('writes its memtable to a table itself every few MiB, so LevelDB never starts a log on its own', async () => {
    const [gen] = (await readdir(join(dir, 'state'))).filter((n) => n.startsWith('gen-'));
    const value = 'v'.repeat(64 * 1024);
    // About 6 MiB of data in 96 batches (twice that written, with the window): past the 4 MiB at which the state machine flushes.
    for (let i = 1; i <= 96; i++) await sm.apply([txnEntry(i, [put(`k/${i}`, value)])]);
    await sm.close();
    const files = await readdir(join(dir, 'state', gen!));
    const logs = files.filter((f) => f.endsWith('.log'));
    expect(logs).toHaveLength(1);
    // Each batch also records its change in the retained window, so the bytes written are about
    // twice the data, and a flush running in the background lets some pile up behind it; what
    // matters is that the log never reached LevelDB's own switch point (64 MiB) and that the
    // state machine's flushes moved the rest into tables.
    expect(statSync(join(dir, 'state', gen!, logs[0]!)).size).toBeLessThan(64 * 1024 * 1024);
    expect(files.some((f) => f.endsWith('.ldb'))).toBe(true);
    sm = await StateMachine.open(join(dir, 'state'));
    expect(sm.applied).toBe(96);
    expect((await sm.get('k/1'))?.length).toBe(value.length);
  });

  it('hands a view out in large batches, each of which costs a trip through the thread pool', async () => {
    const value = 'v'.repeat(1000);
    await sm.apply([txnEntry(1, Array.from({ length: 200 }, (_, i) => put(`k/${String(i).padStart(3, '0')}`, value)))]);
    const sizes: number[] = [];
    for await (const batch of sm.view().records) sizes.push(batch.length);
    // 200 KB of records: LevelDB's default would cut them into batches of about 16.
    expect(sizes).toEqual([200]);
  });

  it('hands out every key of a view as its exact bytes, even keys a restored snapshot holds that are not UTF-8', async () => {
    // Runs of such keys, between UTF-8 ones and across the view's batches, and a key that is
    // U+FFFD itself (valid UTF-8, the same character a bad byte decodes to).
    const keys: Buffer[] = [Buffer.from('d\uFFFD'), Buffer.from([0x64, 0xc0, 0xaf])];
    for (let i = 0; i < 2500; i++) {
      const name = Buffer.from(`dk/${String(i).padStart(4, '0')}`);
      keys.push(i % 700 < 300 && i % 5 !== 0 ? Buffer.concat([name, Buffer.from([0xff, i % 256])]) : name);
    }
    keys.push(Buffer.from('r' + 'ab'.repeat(16) + '00000000'));
    await sm.replace((async function* () {
      yield keys.map((k, i): [Buffer, Buffer] => [k, Buffer.from(String(i))]);
    })(), 5, 1, new Map());
    const seen: Buffer[] = [];
    for await (const batch of sm.view().records) for (const [k] of batch) seen.push(typeof k === 'string' ? Buffer.from(k) : Buffer.from(k));
    expect(seen.map((k) => k.toString('hex'))).toEqual([...keys].sort(Buffer.compare).map((k) => k.toString('hex')));
  });

  it('scans the data at one applied index, agreeing with it even when taken while a batch is being written', async () => {
    await sm.apply([txnEntry(1, [put('a', '1'), put('b', '1')]), { index: 2, term: 1, type: 'normal', data: encodeRestoreChunk('f'.repeat(32), 0, Buffer.from('staged')) }]);
    for (let i = 3; i < 43; i++) {
      // Not awaited: the scan is taken while this batch is on its way to LevelDB.
      const applying = sm.apply([txnEntry(i, [put('a', String(i)), put('b', String(i))])]);
      const scan = await sm.scan();
      await applying;
      const seen: Array<[string, string]> = [];
      for await (const batch of scan.records) for (const [k, v] of batch) seen.push([k, v.toString()]);
      // Staged restore chunks and the '!' and '#' records are not data.
      const at = scan.index === 2 ? '1' : String(scan.index);
      expect(seen).toEqual([['a', at], ['b', at]]);
      expect([i - 1, i]).toContain(scan.index);
    }
    // A scan never read is ended by close; the state machine closes as usual after it.
    const unread = await sm.scan();
    await unread.close();
    await unread.close();
  });

  it('snapshots a view that later applies do not change, and replaces its state from one atomically', async () => {
    await sm.apply([txnEntry(1, [put('x/1', 'a'), put('x/2', 'b'), put('y', 'c')])]);
    const view = sm.view();
    await sm.apply([txnEntry(2, [put('x/1', 'changed'), { type: 'delete', key: 'y' }])]);
    const path = join(dir, 'snap');
    const writer = await SnapshotWriter.create(join(dir, 'snap.part'), { ...view.header, conf: { voters: ['n1'], learners: [] } });
    for await (const batch of view.records) await writer.add(batch);
    await writer.finish(path);

    await sm.apply([txnEntry(3, [put('z', 'only after')])]);
    const { createReadStream } = await import('node:fs');
    await sm.replaceFrom(new SnapshotReader(createReadStream(path)));
    expect(sm.applied).toBe(1);
    expect((await sm.get('x/1'))?.toString()).toBe('a');
    expect((await sm.get('y'))?.toString()).toBe('c');
    expect(await sm.get('z')).toBeNull();
    await sm.close();
    sm = await StateMachine.open(join(dir, 'state'));
    expect(await sm.list('')).toEqual(['x/', 'y']);
    expect((await readdir(join(dir, 'state'))).filter((n) => n.startsWith('gen-'))).toHaveLength(1);
  });

  it('applies a restore carried in chunks at its commit entry, keeping addresses; a bad restore only drops its chunks', async () => {
    await sm.apply([txnEntry(1, [put('old', '1')]), { index: 2, term: 1, type: 'normal', data: encodeAddress('n1', 'h1') }]);
    // Build a snapshot with other data in memory.
    const source = await StateMachine.open(join(dir, 'source'));
    await source.apply([txnEntry(1, [put('restored/a', 'A'), put('restored/b', 'B')])]);
    const view = source.view();
    const writer = await SnapshotWriter.create(join(dir, 'r.part'), { ...view.header, conf: { voters: ['x'], learners: [] } });
    for await (const batch of view.records) await writer.add(batch);
    await writer.finish(join(dir, 'r.snap'));
    await source.close();
    const { readFile } = await import('node:fs/promises');
    const bytes = await readFile(join(dir, 'r.snap'));

    const id = '01'.repeat(16);
    const half = Math.floor(bytes.length / 2);
    const out = await sm.apply([
      { index: 3, term: 1, type: 'normal', data: encodeRestoreChunk(id, 0, bytes.subarray(0, half)) },
      { index: 4, term: 1, type: 'normal', data: encodeRestoreChunk(id, 1, bytes.subarray(half)) },
      { index: 5, term: 2, type: 'normal', data: encodeRestoreCommit(id, 2) },
      txnEntry(6, [put('after', 'x')]),
    ]);
    expect(out.results).toEqual([true, true, true, true]);
    expect(out.restored).toBe(true);
    expect(await sm.list('')).toEqual(['after', 'restored/']);
    expect(await sm.get('old')).toBeNull();
    expect(Object.fromEntries(sm.addresses)).toEqual({ n1: 'h1' });
    expect(sm.applied).toBe(6);

    const bad = '02'.repeat(16);
    const failed = await sm.apply([
      { index: 7, term: 2, type: 'normal', data: encodeRestoreChunk(bad, 0, bytes.subarray(0, half)) },
      { index: 8, term: 2, type: 'normal', data: encodeRestoreCommit(bad, 2) },
    ]);
    expect(failed.results).toEqual([true, false]);
    expect(await sm.list('')).toEqual(['after', 'restored/']);
    expect(sm.applied).toBe(8);
  });
});
