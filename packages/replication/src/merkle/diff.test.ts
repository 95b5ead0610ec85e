import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TxnOp } from '@strongroom/base';
import { answerDiff, differingNodes, planSync, summarize, type MerkleSummary } from './diff';
import { LEAF_LEVEL } from './layout';
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
    expect(await planSync(many.tree, manyAnswer.leaves)).toEqual({ fetch: expect.arrayContaining(all), remove: ['logical/other'] });
  });
});
