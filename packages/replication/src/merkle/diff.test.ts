import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TxnOp } from '@strongroom/base';
import { answerDiff, DIFF_POSITIONS, differingNodes, planSync, summarize, type DiffAnswerOptions, type LeafDiff, type MerkleSummary } from './diff';
import { replicationService } from '../wire/replication-proto';
import { LEAF_LEVEL, leafOf, LEAVES } from './layout';
import { MerkleTree } from './merkle-tree';
import { openMerkleDb, type MerkleDb } from './store';
import { FakeCluster, put } from './test-support/fake-cluster';

/** A cluster's storage with its tree kept current, as the indexer keeps it. */
class Side {
  readonly storage = new FakeCluster();
  constructor(readonly tree: MerkleTree) {}

  write(ops: TxnOp[]): void {
    const index = this.storage.commit(ops);
    this.tree.apply(index, ops);
  }
}

/** Copies what it sends, as a wire would: nothing is shared between the two sides. */
const wire = <T>(value: T): T => structuredClone(value);

/** Leaves as lines of text: a deep compare of thousands of hashes is slow. */
const lines = (leaves: readonly LeafDiff[]): string[] =>
  leaves.map((l) => `${l.tree}/${l.leaf}: ${l.entries.map((e) => `${e.key}=${e.hash.toString('hex')}`).join(' ')}`);

describe('Merkle diff and sync', () => {
  let dir: string;
  const dbs: MerkleDb[] = [];
  const side = async (name: string) => {
    const db = await openMerkleDb(join(dir, name));
    dbs.push(db);
    return new Side(await MerkleTree.open(db));
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-merkle-diff-'));
  });
  afterEach(async () => {
    for (const db of dbs.splice(0)) await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('brings a secondary that differs everywhere to the primary\'s root in two round trips, while the primary is written', async () => {
    const primary = await side('primary');
    const secondary = await side('secondary');
    primary.write(Array.from({ length: 2000 }, (_, i) => put(`logical/m/${i}`, `p${i}`)));
    primary.write(Array.from({ length: 300 }, (_, i) => put(`sys/token/id/${i}`, `t${i}`)));
    // The secondary has some of it, some of it stale, and keys the primary deleted.
    secondary.write([
      ...Array.from({ length: 1000 }, (_, i) => put(`logical/m/${i}`, i % 10 === 0 ? 'stale' : `p${i}`)),
      ...Array.from({ length: 50 }, (_, i) => put(`logical/gone/${i}`, 'x')),
      put('sys/token/id/old', 'x'),
    ]);
    // Part of each side's entries on disk, and writes since that are not: a leaf's entries are both.
    await Promise.all([primary.tree.flush(), secondary.tree.flush()]);
    primary.write([put('logical/m/3', 'after the flush'), { type: 'delete', key: 'logical/m/4' }]);
    secondary.write([{ type: 'delete', key: 'logical/gone/0' }, put('logical/gone/0', 'back'), { type: 'delete', key: 'logical/m/5' }]);
    let roundTrips = 0;

    // 1. merkle-diff: the secondary's leaf hashes out, the differing leaves' entries back.
    roundTrips++;
    const question: MerkleSummary = wire(summarize(secondary.tree));
    const answer = wire(await answerDiff(primary.tree, question));
    expect(answer.index).toBe(primary.storage.index);
    // Written on the primary after the diff: the stream from answer.index + 1 carries it.
    primary.write([put('logical/m/1', 'newer'), { type: 'delete', key: 'logical/m/2' }]);

    // 2. merkle-sync: the values of what differs, read on the primary now.
    const plan = await planSync(secondary.tree, answer.leaves);
    // The 50 gone keys but one written back, the old token, and logical/m/4 deleted on the primary.
    expect(plan.remove).toHaveLength(52);
    roundTrips++;
    const values = wire(plan.fetch.map((key) => [key, primary.storage.data.get(key) ?? null] as const));
    secondary.write([
      ...values.map(([key, value]): TxnOp => (value ? { type: 'put', key, value: Buffer.from(value) } : { type: 'delete', key })),
      ...plan.remove.map((key): TxnOp => ({ type: 'delete', key })),
    ]);

    // Then the stream: every change after the diff's index, applied again where already there.
    for (const change of await primary.storage.changesAfter(answer.index)) secondary.write(change);
    expect(secondary.tree.root).toEqual(primary.tree.root);
    expect(roundTrips).toBe(2);
    expect(differingNodes(secondary.tree, summarize(primary.tree, 1))).toEqual({ replicated: [], local: [] });
  });

  it('says nothing differs between equal trees, and refuses a summary of the wrong size', async () => {
    const a = await side('a');
    const b = await side('b');
    a.write([put('logical/x', '1')]);
    b.write([put('logical/x', '1')]);
    expect((await answerDiff(a.tree, summarize(b.tree))).leaves).toEqual([]);
    expect(() => differingNodes(a.tree, { level: LEAF_LEVEL, replicated: Buffer.alloc(32), local: Buffer.alloc(32) })).toThrow(/replicated hashes must be 4096 hashes/);
    expect(() => summarize(a.tree, 9)).toThrow(RangeError);
  });

  it('reads a few differing leaves one by one and many in one scan, with the same answer', async () => {
    const primary = await side('primary');
    const few = await side('few');
    const many = await side('many');
    primary.write(Array.from({ length: 3000 }, (_, i) => put(`logical/k/${i}`, `v${i}`)));
    await primary.tree.flush();
    primary.write([put('logical/k/7', 'unflushed'), { type: 'delete', key: 'logical/k/8' }]);
    few.write(Array.from({ length: 3000 }, (_, i) => put(`logical/k/${i}`, i < 5 ? 'old' : `v${i}`)));
    many.write([put('logical/other', 'x')]);
    const fewAnswer = await answerDiff(primary.tree, summarize(few.tree));
    const manyAnswer = await answerDiff(primary.tree, summarize(many.tree));
    expect(fewAnswer.leaves.length).toBeLessThanOrEqual(16);
    expect(manyAnswer.leaves.length).toBeGreaterThan(16);
    const byLeaf = new Map(manyAnswer.leaves.map((l) => [`${l.tree}/${l.leaf}`, l.entries]));
    // A leaf left out of the second answer is empty on the primary, as it is there.
    for (const l of fewAnswer.leaves) expect(l.entries).toEqual(byLeaf.get(`${l.tree}/${l.leaf}`) ?? []);
    const all = manyAnswer.leaves.flatMap((l) => l.entries.map((e) => e.key));
    expect(all).toHaveLength(2999);
    expect(all).toContain('logical/k/7');
    expect(all).not.toContain('logical/k/8');
    const plan = await planSync(many.tree, manyAnswer.leaves);
    expect(plan.remove).toEqual(['logical/other']);
    expect([...plan.fetch].sort()).toEqual([...all].sort());
  });

  /** Every page of an answer, asking for each from where the last one ended. */
  async function pages(primary: Side, theirs: MerkleSummary, maxBytes: number, options: DiffAnswerOptions = {}): Promise<LeafDiff[][]> {
    const out: LeafDiff[][] = [];
    for (let from: number | null = 0; from !== null;) {
      const answer = await answerDiff(primary.tree, theirs, { ...options, page: { from, maxBytes } });
      out.push(answer.leaves);
      from = answer.next;
    }
    return out;
  }

  it('answers in pages of at most the bytes asked for that together are the whole answer, and syncs page by page', async () => {
    const primary = await side('primary');
    const secondary = await side('secondary');
    primary.write(Array.from({ length: 3000 }, (_, i) => put(`logical/p/${i}`, `v${i}`)));
    primary.write(Array.from({ length: 500 }, (_, i) => put(`sys/token/id/${i}`, `t${i}`)));
    await primary.tree.flush();
    primary.write([put('logical/p/1', 'unflushed')]);
    secondary.write([put('logical/only-here', 'x'), put('sys/token/id/stale', 'x')]);
    const question = summarize(secondary.tree);
    const whole = await answerDiff(primary.tree, question);
    expect(whole.next).toBeNull();

    const paged = await pages(primary, question, 16 * 1024);
    expect(paged.length).toBeGreaterThan(5);
    expect(lines(paged.flat())).toEqual(lines(whole.leaves));
    // Each page, as the wire encodes it, within its bytes (and the last_wal and next_page fields).
    const encode = replicationService().merkleDiff.responseSerialize;
    for (const page of paged) expect(encode({ lastWal: 1e12, leaves: page, nextPage: 8192 }).length).toBeLessThanOrEqual(16 * 1024 + 16);

    for (const page of paged) {
      const plan = await planSync(secondary.tree, page);
      secondary.write([
        ...plan.fetch.map((key) => put(key, (primary.storage.data.get(key) as Buffer).toString())),
        ...plan.remove.map((key): TxnOp => ({ type: 'delete', key })),
      ]);
    }
    expect(secondary.tree.root).toEqual(primary.tree.root);
  });

  it('starts a page where asked, in either tree, and refuses a position past the last leaf', async () => {
    const primary = await side('primary');
    const empty = await side('empty');
    primary.write([put('logical/a', '1'), put('logical/b', '2'), put('sys/token/id/t', '3')]);
    const question = summarize(empty.tree);
    const all = (await answerDiff(primary.tree, question)).leaves;
    const localLeaf = leafOf('sys/token/id/t');
    const fromLocal = await answerDiff(primary.tree, question, { page: { from: LEAVES + localLeaf, maxBytes: 1 << 20 } });
    expect(fromLocal).toMatchObject({ next: null, leaves: [{ tree: 'local', leaf: localLeaf }] });
    expect((await answerDiff(primary.tree, question, { page: { from: DIFF_POSITIONS, maxBytes: 1 } })).leaves).toEqual([]);
    // A page never splits a leaf, and one leaf larger than the page still goes, alone.
    expect(await pages(primary, question, 1)).toEqual(all.map((l) => [l]));
    const second = all[1] as LeafDiff;
    expect((await answerDiff(primary.tree, question, { page: { from: second.leaf, maxBytes: 1 } })).leaves).toEqual([second]);
    await expect(answerDiff(primary.tree, question, { page: { from: DIFF_POSITIONS + 1, maxBytes: 1 } })).rejects.toThrow(RangeError);
  });

  it('tells a filtered secondary of its shared tree only: what it may hold, and the leaves where it holds what it may not', async () => {
    const primary = await side('primary');
    const secondary = await side('secondary');
    const same = [put('logical/kv/a', '1'), put('logical/hidden/b', '2')];
    primary.write([...same, put('logical/kv/new', '3'), put('sys/token/id/t', '4')]);
    // Held from before its filter refused logical/hidden/, in leaves whose hashes match the primary's.
    secondary.write([...same, put('logical/kv/deleted-on-primary', 'x')]);
    const allows = (key: string) => !key.startsWith('logical/hidden/');
    const answer = await answerDiff(primary.tree, summarize(secondary.tree), { allows });
    const byLeaf = new Map(answer.leaves.map((l) => [l.leaf, l]));
    expect(answer.leaves.every((l) => l.tree === 'replicated')).toBe(true);
    expect(byLeaf.get(leafOf('logical/kv/new'))?.entries.map((e) => e.key)).toContain('logical/kv/new');
    // Matching hashes, but it holds a refused key: the leaf answers with the allowed entries only.
    const hidden = byLeaf.get(leafOf('logical/hidden/b'));
    expect(hidden).toBeDefined();
    expect(hidden?.entries.map((e) => e.key)).not.toContain('logical/hidden/b');
    expect(answer.leaves.map((l) => l.leaf)).toEqual([...answer.leaves.map((l) => l.leaf)].sort((x, y) => x - y));
    expect((await pages(primary, summarize(secondary.tree), 1, { allows })).flat()).toEqual(answer.leaves);
    const plan = await planSync(secondary.tree, answer.leaves);
    expect(plan.fetch).toEqual(['logical/kv/new']);
    expect(plan.remove.sort()).toEqual(['logical/hidden/b', 'logical/kv/deleted-on-primary']);
  });
});
