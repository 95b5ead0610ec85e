import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TxnOp } from '@strongroom/base';
import type { Entry } from '../core/types';
import { ChangesNotRetainedError, type ChangeLogLimits } from './change-log';
import { encodeAddress, encodeRestoreChunk, encodeRestoreCommit, encodeTxn, type Check } from './command';
import { SnapshotWriter } from './snapshot-file';
import { StateMachine, type AppliedChange } from './state-machine';
import { TestCluster } from './test-support/cluster';

const put = (key: string, value: string): TxnOp => ({ type: 'put', key, value: Buffer.from(value) });
const txn = (index: number, ops: TxnOp[], checks: Check[] = []): Entry => ({ index, term: 1, type: 'normal', data: encodeTxn(ops, checks) });

/** A change as plain data, values as strings, for comparisons. */
function plain(c: AppliedChange): unknown {
  if ('restored' in c) return { index: c.index, restored: true };
  return { index: c.index, ops: c.ops.map((op) => (op.type === 'put' ? [op.key, op.value.toString()] : [op.key])) };
}

async function all(sm: StateMachine, from: number): Promise<unknown[]> {
  return (await sm.changesFrom(from, 100_000)).map(plain);
}

describe('the retained window of applied changes', () => {
  let dir: string;
  let sm: StateMachine | undefined;
  const open = async (limits?: ChangeLogLimits) => { sm = await StateMachine.open(join(dir, 'state'), limits); return sm; };
  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'strongroom-changes-')); });
  afterEach(async () => {
    await sm?.close().catch(() => undefined);
    sm = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps every data change in index order, skipping entries that changed nothing', async () => {
    const s = await open();
    await s.apply([
      txn(1, [put('a', '1')]),
      { index: 2, term: 1, type: 'normal', data: encodeAddress('n1', '127.0.0.1:1') },
      txn(3, [put('b', '2'), { type: 'delete', key: 'a' }]),
      txn(4, [put('c', 'never')], [{ key: 'a', value: Buffer.from('1') }]), // the check fails: no change
      txn(5, [put('c', '3')], [{ key: 'c', value: null }]), // the check holds: its ops are the change
    ]);
    expect(await all(s, 1)).toEqual([
      { index: 1, ops: [['a', '1']] },
      { index: 3, ops: [['b', '2'], ['a']] },
      { index: 5, ops: [['c', '3']] },
    ]);
    // From an index inside the window that held no change: the next ones.
    expect(await all(s, 2)).toEqual([{ index: 3, ops: [['b', '2'], ['a']] }, { index: 5, ops: [['c', '3']] }]);
    expect((await s.changesFrom(1, 2)).map((c) => c.index)).toEqual([1, 3]);
    // Past the applied index there is nothing yet.
    expect(await s.changesFrom(6)).toEqual([]);
    expect(s.changeWindow).toMatchObject({ first: 1, last: 5, entries: 3 });
  });

  it('is bounded by entries and by bytes, and says when an index is no longer retained', async () => {
    const s = await open({ maxEntries: 5, maxBytes: 1 << 20 });
    for (let i = 1; i <= 12; i++) await s.apply([txn(i, [put(`k${i}`, 'v')])]);
    expect(s.changeWindow).toMatchObject({ first: 8, last: 12, entries: 5 });
    expect((await all(s, 8)).length).toBe(5);
    const err = await s.changesFrom(7).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChangesNotRetainedError);
    expect(err).toMatchObject({ from: 7, first: 8, message: expect.stringContaining('no longer retained') });
    await s.close();

    // Bytes: each change is ~1 KiB, so 4 KiB keeps three or four; a batch larger than the whole
    // window keeps only its newest change.
    const s2 = await StateMachine.open(join(dir, 'bytes'), { maxEntries: 1000, maxBytes: 4096 });
    sm = s2;
    const big = 'x'.repeat(1000);
    for (let i = 1; i <= 10; i++) await s2.apply([txn(i, [put(`k${i}`, big)])]);
    const w = s2.changeWindow;
    expect(w.bytes).toBeLessThanOrEqual(4096);
    expect(w.last).toBe(10);
    expect(w.entries).toBeGreaterThanOrEqual(3);
    await s2.apply(Array.from({ length: 20 }, (_, i) => txn(11 + i, [put(`b${i}`, big)])));
    expect(s2.changeWindow.first).toBeGreaterThan(20);
    expect((await s2.changesFrom(s2.changeWindow.first as number, 1000)).map((c) => c.index).at(-1)).toBe(30);
  });

  it('counts as dropped only changes that left it: an index that changed nothing is no reason to resync', async () => {
    let s = await open({ maxEntries: 1, maxBytes: 1 << 20 });
    // A cluster's first entries change no data (membership, addresses): reading from 1 is whole.
    await s.apply([{ index: 1, term: 1, type: 'normal', data: encodeAddress('n1', '127.0.0.1:1') }, txn(2, [put('a', '1')])]);
    expect(await all(s, 1)).toEqual([{ index: 2, ops: [['a', '1']] }]);
    await s.apply([txn(3, [put('b', '2')]), { index: 4, term: 1, type: 'normal', data: encodeAddress('n2', '127.0.0.1:2') }]);
    // 2 left the window; 3 is the one kept. Nothing after 3 was lost, so 4 and 5 read fine.
    await expect(s.changesFrom(2)).rejects.toBeInstanceOf(ChangesNotRetainedError);
    expect(await all(s, 3)).toEqual([{ index: 3, ops: [['b', '2']] }]);
    expect(await all(s, 4)).toEqual([]);
    await s.close();
    s = await open({ maxEntries: 1, maxBytes: 1 << 20 });
    await expect(s.changesFrom(2)).rejects.toMatchObject({ first: 3 });
    expect(await all(s, 3)).toEqual([{ index: 3, ops: [['b', '2']] }]);
  });

  it('survives a restart: the window reads the same from any index in it, and goes on growing', async () => {
    let s = await open({ maxEntries: 50, maxBytes: 1 << 20 });
    for (let i = 1; i <= 80; i += 4) await s.apply([1, 2, 3, 4].map((j) => txn(i + j - 1, [put(`k${i + j - 1}`, String(i + j - 1))])));
    const before = await all(s, 31);
    await s.close();
    s = await open({ maxEntries: 50, maxBytes: 1 << 20 });
    expect(s.changeWindow).toMatchObject({ first: 31, last: 80, entries: 50 });
    expect(await all(s, 31)).toEqual(before);
    expect(await all(s, 75)).toEqual(before.slice(44));
    await s.apply([txn(81, [put('k81', '81')])]);
    expect(s.changeWindow).toMatchObject({ first: 32, last: 81 });
    await expect(s.changesFrom(31)).rejects.toBeInstanceOf(ChangesNotRetainedError);
  });

  it('starts over at a restore, which replaces the whole state: earlier indexes are no longer retained', async () => {
    const s = await open();
    await s.apply([txn(1, [put('a', '1')]), txn(2, [put('b', '2')])]);
    // A snapshot holding one key, restored through the log at index 4.
    const source = await StateMachine.open(join(dir, 'source'));
    await source.apply([txn(1, [put('z', '9')])]);
    const view = source.view();
    const writer = await SnapshotWriter.create(join(dir, 'r.part'), { ...view.header, conf: { voters: ['x'], learners: [] } });
    for await (const batch of view.records) await writer.add(batch);
    await writer.finish(join(dir, 'r.snap'));
    await source.close();
    const snapshot = await readFile(join(dir, 'r.snap'));
    const id = 'ab'.repeat(16);
    await s.apply([
      { index: 3, term: 1, type: 'normal', data: encodeRestoreChunk(id, 0, snapshot) },
      { index: 4, term: 1, type: 'normal', data: encodeRestoreCommit(id, 1) },
    ]);
    expect(await s.get('z')).toEqual(Buffer.from('9'));
    expect(await all(s, 4)).toEqual([{ index: 4, restored: true }]);
    await expect(s.changesFrom(2)).rejects.toBeInstanceOf(ChangesNotRetainedError);
    await s.apply([txn(5, [put('c', '3')])]);
    expect(await all(s, 4)).toEqual([{ index: 4, restored: true }, { index: 5, ops: [['c', '3']] }]);
  });
});

describe('the retained window on a three-node cluster', () => {
  let cluster: TestCluster | undefined;
  afterEach(() => cluster?.close());
  jest.setTimeout(60_000);

  it('is the same on every member', async () => {
    cluster = await TestCluster.start(['n1', 'n2', 'n3'], { changeLog: { maxEntries: 40 } });
    const leader = await cluster.leader();
    for (let i = 0; i < 60; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => leader.propose(encodeTxn([put(`k/${i + j}`, String(i + j))]))));
    }
    await leader.propose(encodeTxn([{ type: 'delete', key: 'k/3' }]));
    await cluster.waitApplied(leader.applied);
    const windows = await Promise.all(['n1', 'n2', 'n3'].map(async (id) => {
      const node = cluster!.node(id);
      const first = node.changeWindow().first as number;
      return (await node.changesFrom(first, 1000)).map(plain);
    }));
    expect(windows[0]).toHaveLength(40);
    expect((windows[0]!.at(-1) as { ops: unknown }).ops).toEqual([['k/3']]);
    expect(windows[1]).toEqual(windows[0]);
    expect(windows[2]).toEqual(windows[0]);
  });

  it('marks a change as the node\'s own only where its proposer still awaits it', async () => {
    cluster = await TestCluster.start(['n1', 'n2', 'n3']);
    const leader = await cluster.leader();
    const follower = cluster.node(['n1', 'n2', 'n3'].find((id) => id !== leader.id)!);
    const seen: Record<string, AppliedChange[]> = { leader: [], follower: [] };
    leader.onApply((changes) => seen['leader']!.push(...changes));
    follower.onApply((changes) => seen['follower']!.push(...changes));
    const applied = new Promise<boolean>((resolve) => {
      // The notice comes before the proposer's promise settles: that is why it must say so.
      const off = leader.onApply((changes) => {
        if (changes.some((c) => 'ops' in c && c.ops[0]?.key === 'mine')) {
          off();
          resolve(true);
        }
      });
    });
    await leader.propose(encodeTxn([put('mine', '1')]));
    await applied;
    await cluster.waitApplied(leader.applied);
    const mine = (list: AppliedChange[]) => list.find((c) => 'ops' in c && c.ops[0]?.key === 'mine') as { own?: true } | undefined;
    expect(mine(seen['leader']!)?.own).toBe(true);
    expect(mine(seen['follower']!)).toBeDefined();
    expect(mine(seen['follower']!)?.own).toBeUndefined();
    // Nor is it stored: the window reads back without the mark.
    const stored = mine(await leader.changesFrom(leader.changeWindow().first as number, 1000));
    expect(stored).toBeDefined();
    expect(stored?.own).toBeUndefined();
  });
});
