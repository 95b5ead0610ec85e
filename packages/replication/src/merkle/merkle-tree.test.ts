import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compositeRoot, entryHash, LEAF_LEVEL, leafOf, ZERO_HASH } from './layout';
import { MerkleCorruptionError, MerkleTree } from './merkle-tree';
import { entryPrefix, openMerkleDb, type MerkleDb } from './store';
import { del, put } from './test-support/fake-cluster';

describe('MerkleTree', () => {
  let dir: string;
  const dbs: MerkleDb[] = [];

  async function openTree(name: string, historyLength?: number): Promise<MerkleTree> {
    const db = await openMerkleDb(join(dir, name));
    dbs.push(db);
    return MerkleTree.open(db, historyLength);
  }

  async function closeAll(): Promise<void> {
    for (const db of dbs.splice(0)) if (db.status === 'open') await db.close();
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-merkle-'));
  });
  afterEach(async () => {
    await closeAll();
    await rm(dir, { recursive: true, force: true });
  });

  it('starts empty, keeps cluster-local keys out, and puts tokens in the local tree', async () => {
    const tree = await openTree('a');
    const empty = compositeRoot(ZERO_HASH, ZERO_HASH);
    expect(tree.root).toEqual(empty);
    tree.apply(1, [put('core/local/replication/dr', 'x')]);
    expect(tree.root).toEqual(empty);
    expect(tree.applied).toBe(1);
    tree.apply(2, [put('sys/token/id/abc', 'sealed')]);
    expect(tree.treeRoot('replicated')).toEqual(ZERO_HASH);
    expect(tree.treeRoot('local')).not.toEqual(ZERO_HASH);
    expect(tree.count('local')).toBe(1);
    expect(await tree.leafEntries('local', leafOf('sys/token/id/abc'))).toEqual([{ key: 'sys/token/id/abc', hash: entryHash('sys/token/id/abc', Buffer.from('sealed')) }]);
    tree.apply(3, [del('sys/token/id/abc')]);
    expect(tree.root).toEqual(empty);
    expect(tree.count('local')).toBe(0);
  });

  it('reaches the same root for the same contents whatever the history', async () => {
    const a = await openTree('a');
    const b = await openTree('b');
    for (let i = 0; i < 300; i++) a.apply(i + 1, [put(`logical/k${i}`, `v${i}`)]);
    a.apply(400, [put('logical/k7', 'changed'), del('logical/k8'), put('sys/expire/id/x', 'lease')]);
    const ops = [];
    for (let i = 299; i >= 0; i--) if (i !== 8) ops.push(put(`logical/k${i}`, i === 7 ? 'changed' : `v${i}`));
    b.apply(5, [put('logical/k8', 'soon gone'), put('sys/expire/id/x', 'lease')]);
    b.apply(9, [...ops, del('logical/k8')]);
    expect(b.root).toEqual(a.root);
    expect(b.hashesAt('replicated', LEAF_LEVEL)).toEqual(a.hashesAt('replicated', LEAF_LEVEL));
    b.apply(10, [put('logical/k7', 'differs')]);
    expect(b.root).not.toEqual(a.root);
  });

  it('knows the root before each change, for a bounded number of changes', async () => {
    const tree = await openTree('a', 4);
    const roots = [tree.root];
    for (let i = 1; i <= 6; i++) {
      // Index 2i: the odd indexes are changes elsewhere (gaps in the feed).
      tree.apply(2 * i, [put(`k${i}`, 'v')]);
      roots.push(tree.root);
    }
    expect(tree.rootBefore(12)).toEqual(roots[5]);
    expect(tree.rootBefore(11)).toEqual(roots[5]);
    expect(tree.rootBefore(13)).toEqual(roots[6]);
    expect(tree.rootBefore(6)).toEqual(roots[2]);
    // Four kept: the roots before 6, 8, 10, 12; nothing said at or below the last dropped (4).
    expect(tree.rootBefore(5)).toEqual(roots[2]);
    expect(tree.rootBefore(4)).toBeUndefined();
    expect(tree.rootBefore(14)).toBeUndefined();
  });

  it('comes back at its last flush, with its roots-before, and carries on from there', async () => {
    const tree = await openTree('a');
    for (let i = 1; i <= 100; i++) tree.apply(i, [put(`logical/k${i}`, `v${i}`)]);
    await tree.flush();
    const at100 = tree.root;
    const before50 = tree.rootBefore(50);
    tree.apply(101, [put('logical/lost', 'not flushed')]);
    await closeAll();

    const again = await openTree('a');
    expect(again.applied).toBe(100);
    expect(again.root).toEqual(at100);
    expect(again.rootBefore(50)).toEqual(before50);
    expect(again.count('replicated')).toBe(100);
    again.apply(101, [put('logical/k1', 'changed')]);
    const fresh = await openTree('b');
    fresh.apply(1, Array.from({ length: 100 }, (_, i) => put(`logical/k${i + 1}`, i === 0 ? 'changed' : `v${i + 1}`)));
    expect(again.root).toEqual(fresh.root);
  });

  it('writes nothing once frozen for a rebuild, even a flush that was waiting for another', async () => {
    const tree = await openTree('a');
    tree.apply(1, [put('logical/a', '1')]);
    const first = tree.flush();
    tree.apply(2, [put('logical/b', '2')]);
    const waiting = tree.flush();
    await tree.freeze();
    await Promise.all([first, waiting]);
    await closeAll();
    expect((await openTree('a')).applied).toBe(1);
  });

  it('writes the records of a failed flush with the next one', async () => {
    const tree = await openTree('a');
    const db = dbs[0]!;
    tree.apply(1, [put('logical/a', '1'), put('sys/token/id/x', 't')]);
    const batch = db.batch.bind(db);
    (db as { batch: unknown }).batch = () => Promise.reject(new Error('disk full'));
    await expect(tree.flush()).rejects.toThrow('disk full');
    (db as { batch: unknown }).batch = batch;
    tree.apply(2, [put('logical/b', '2')]);
    await tree.flush();
    const root = tree.root;
    await closeAll();
    const again = await openTree('a');
    expect(again.applied).toBe(2);
    expect(again.root).toEqual(root);
    expect((await again.leafEntries('local', leafOf('sys/token/id/x'))).map((e) => e.key)).toEqual(['sys/token/id/x']);
  });

  it('reads a replaced entry from disk, from what is not flushed, or from a read ahead, alike', async () => {
    const tree = await openTree('a');
    const keys = 2000;
    tree.apply(1, Array.from({ length: keys }, (_, i) => put(`logical/${i}`, 'v')));
    await tree.flush();
    // Some rewrites read their entry from disk, some from the read ahead, some from a write not flushed.
    tree.apply(2, [put('logical/0', 'w'), { type: 'delete', key: 'logical/1' }]);
    await tree.prefetch([{ ops: [put('logical/2', 'w'), put('logical/3', 'w')] }]);
    tree.apply(3, [put('logical/2', 'w'), put('logical/3', 'w'), put('logical/0', 'x'), put('logical/1', 'back')]);
    const flushing = tree.flush();
    tree.apply(4, [put('logical/4', 'w'), { type: 'delete', key: 'logical/0' }]);
    await flushing;
    tree.apply(5, [put('logical/0', 'again'), put('logical/5', 'w')]);
    const fresh = await openTree('b');
    fresh.apply(1, Array.from({ length: keys }, (_, i) => put(`logical/${i}`, ['again', 'back', 'w', 'w', 'w', 'w'][i] ?? 'v')));
    expect(tree.root).toEqual(fresh.root);
    expect(tree.hashesAt('replicated', LEAF_LEVEL)).toEqual(fresh.hashesAt('replicated', LEAF_LEVEL));
    expect(tree.count('replicated')).toBe(keys);
    const leaf = leafOf('logical/0');
    expect(await tree.leafEntries('replicated', leaf)).toEqual(await fresh.leafEntries('replicated', leaf));
  });

  it('does not trust a read ahead made before a flush ended', async () => {
    const tree = await openTree('a');
    // Read ahead before the key is anywhere: it finds nothing on disk.
    await tree.prefetch([{ ops: [put('logical/a', '1')] }]);
    tree.apply(1, [put('logical/a', '1')]);
    await tree.flush();
    // The key is on disk now, and no longer among the unflushed writes; had the old read ahead
    // been used, the entry it replaces would not be taken out of the leaf's sum.
    tree.apply(2, [put('logical/a', '2')]);
    const fresh = await openTree('b');
    fresh.apply(1, [put('logical/a', '2')]);
    expect(tree.root).toEqual(fresh.root);
    expect(tree.count('replicated')).toBe(1);
  });

  it('counts a delete of a missing key as nothing, and several writes of one key in one change in order', async () => {
    const tree = await openTree('a');
    const empty = tree.root;
    tree.apply(1, [del('logical/x')]);
    expect(tree.root).toEqual(empty);
    expect(tree.count('replicated')).toBe(0);
    tree.apply(2, [put('logical/a', '1'), del('logical/a')]);
    expect(tree.root).toEqual(empty);
    tree.apply(3, [del('logical/b'), put('logical/b', '2'), put('logical/b', '3'), put('logical/c', '4'), del('logical/c')]);
    const fresh = await openTree('b');
    fresh.apply(1, [put('logical/b', '3')]);
    expect(tree.root).toEqual(fresh.root);
    expect(tree.count('replicated')).toBe(1);
  });

  it('changes nothing when reading a replaced entry fails, so the change applies whole when tried again', async () => {
    // Two keys under different pages of the level above the leaves.
    let other = 0;
    while (leafOf(`logical/b${other}`) >> 4 === leafOf('logical/a') >> 4) other++;
    const b = `logical/b${other}`;
    const tree = await openTree('a');
    const db = dbs[0]!;
    tree.apply(1, [put('logical/a', '1'), put(b, '1')]);
    await tree.flush();
    const getSync = db.getSync.bind(db);
    (db as { getSync: unknown }).getSync = (key: string) => {
      if (key.endsWith(b)) throw new Error('read failed');
      return getSync(key);
    };
    const change = [del('logical/a'), put(b, '2')];
    const root = tree.root;
    expect(() => tree.apply(2, change)).toThrow('read failed');
    expect(tree.root).toEqual(root);
    expect(tree.count('replicated')).toBe(2);
    (db as { getSync: unknown }).getSync = getSync;
    tree.apply(2, change);
    const fresh = await openTree('b');
    fresh.apply(1, [put(b, '2')]);
    expect(tree.root).toEqual(fresh.root);
  });

  it('reports a damaged entry found by a read for a diff, and throws it', async () => {
    const tree = await openTree('a');
    const db = dbs[0]!;
    tree.apply(1, [put('logical/a', '1')]);
    await tree.flush();
    await db.put(entryPrefix(0, leafOf('logical/a')) + 'logical/a', Buffer.alloc(31));
    const found: Error[] = [];
    tree.onCorruption = (err) => found.push(err);
    await expect(tree.leafEntries('replicated', leafOf('logical/a'))).rejects.toThrow(MerkleCorruptionError);
    expect(found).toHaveLength(1);
  });

  it('writes one record per changed key, whatever the size of its leaf', async () => {
    const tree = await openTree('a');
    const db = dbs[0]!;
    tree.apply(1, Array.from({ length: 20000 }, (_, i) => put(`logical/${i}`, 'v')));
    await tree.flush();
    const batch = db.batch.bind(db) as unknown as (ops: Array<{ key: string; value?: Buffer }>) => Promise<void>;
    let written: Array<{ key: string; value?: Buffer }> = [];
    (db as { batch: unknown }).batch = (ops: Array<{ key: string; value?: Buffer }>) => {
      written = ops;
      return batch(ops);
    };
    tree.apply(2, [put('logical/7', 'w')]);
    await tree.flush();
    const entries = written.filter((op) => op.key.startsWith('e'));
    expect(entries).toHaveLength(1);
    expect(entries[0]!.value).toHaveLength(32);
    // The pages above the one leaf (one a level), and the root before change 2, and the checkpoint.
    expect(written.filter((op) => op.key.startsWith('p'))).toHaveLength(3);
    expect(written).toHaveLength(6);
  });

  it('comes back empty and asking for a rebuild from a store an older format wrote to', async () => {
    const tree = await openTree('a');
    tree.apply(1, [put('logical/a', '1')]);
    await tree.flush();
    const db = dbs[0]!;
    // The first format's checkpoint, as an older release writes it beside this format's records.
    await db.put('m', Buffer.from(JSON.stringify({ applied: 1, floor: 0, counts: [1, 0], roots: ['', ''], root: '' })));
    await closeAll();
    const again = await openTree('a');
    expect(again.wantsRebuild).toBe(true);
    expect(again.applied).toBe(0);
  });
});
