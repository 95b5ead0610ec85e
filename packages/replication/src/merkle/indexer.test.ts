import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MerkleIndexer, MerkleIndexSuspendedError, type MerkleIndexerOptions } from './indexer';
import { leafOf } from './layout';
import { MerkleTree } from './merkle-tree';
import type { StorageScan } from './rebuild';
import { entryPrefix, openMerkleDb, pageKey, type MerkleDb } from './store';
import { del, FakeCluster, put, waitUntil } from './test-support/fake-cluster';

describe('MerkleIndexer', () => {
  let dir: string;
  let cluster: FakeCluster;
  const open: MerkleIndexer[] = [];

  async function start(name = 'merkle', extra: Partial<MerkleIndexerOptions> = {}): Promise<MerkleIndexer> {
    const indexer = await MerkleIndexer.open({
      dir: join(dir, name), feed: cluster, scan: () => cluster.scan(), flushIntervalMs: 20, retryMs: 20, ...extra,
    });
    open.push(indexer);
    return indexer;
  }

  async function stop(indexer: MerkleIndexer): Promise<void> {
    open.splice(open.indexOf(indexer), 1);
    await indexer.close();
  }

  /** The root of a tree built in one change from the cluster's data now. */
  async function expectedRoot(): Promise<string> {
    const db = await openMerkleDb(join(dir, `truth-${Math.random().toString(16).slice(2)}`));
    try {
      const tree = await MerkleTree.open(db);
      tree.apply(1, [...cluster.data].map(([key, value]) => ({ type: 'put' as const, key, value })));
      return tree.root.toString('hex');
    } finally {
      await db.close();
    }
  }

  async function caughtUp(indexer: MerkleIndexer): Promise<void> {
    await waitUntil(() => indexer.applied === cluster.index && !indexer.reindexPending, `the index to reach ${cluster.index}`);
    expect(indexer.status().merkleRoot).toBe(await expectedRoot());
  }

  const writeKeys = (from: number, count: number, value = 'v') => {
    for (let i = from; i < from + count; i++) cluster.commit([put(`logical/k${i}`, `${value}${i}`), put(`sys/token/id/t${i}`, value)]);
  };

  /** Indexes `count` keys, stops, and lets `edit` change the store as a bad disk or an older release might. */
  async function indexThenEditStore(count: number, edit: (db: MerkleDb) => Promise<unknown>): Promise<void> {
    writeKeys(0, count);
    const first = await start();
    await caughtUp(first);
    await stop(first);
    const db = await openMerkleDb(join(dir, 'merkle'));
    try {
      await edit(db);
    } finally {
      await db.close();
    }
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-merkle-indexer-'));
    cluster = new FakeCluster();
  });
  afterEach(async () => {
    for (const indexer of open.splice(0)) await indexer.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('follows the feed, records the root before each change, and answers once a given index is in', async () => {
    const indexer = await start();
    writeKeys(0, 20);
    await indexer.whenApplied(20);
    await caughtUp(indexer);
    const before = indexer.status().merkleRoot;
    const index = cluster.commit([put('core/local/replication/dr/state', 'only here')]);
    const next = cluster.commit([del('logical/k3')]);
    await indexer.whenApplied(next);
    expect(indexer.rootBefore(index)?.toString('hex')).toBe(before);
    expect(indexer.rootBefore(next)?.toString('hex')).toBe(before);
    expect(indexer.status().merkleRoot).not.toBe(before);
  });

  it('after a crash opens at its last flush and catches up from the feed, without a reindex', async () => {
    const indexer = await start();
    writeKeys(0, 30);
    await caughtUp(indexer);
    await indexer.flush();
    // What a crash leaves on disk: the store as last flushed, while the index runs on.
    await stop(indexer);
    const live = await start('merkle', { flushIntervalMs: 60_000 });
    writeKeys(30, 40);
    await caughtUp(live);
    await cp(join(dir, 'merkle'), join(dir, 'crashed-later'), { recursive: true });
    writeKeys(70, 5, 'w');

    // Had it not opened at 30, it could not catch up from the feed: nothing older is left there.
    cluster.forget(30);
    const recovered = await start('crashed-later');
    await caughtUp(recovered);
    expect(recovered.status().reindex).toBeUndefined();
    expect(recovered.rootBefore(31)?.toString('hex')).toBe(live.rootBefore(31)?.toString('hex'));
  });

  it('reindexes from storage when the feed no longer has its next change, and when storage is restored', async () => {
    const first = await start();
    writeKeys(0, 10);
    await caughtUp(first);
    await stop(first);
    writeKeys(10, 10);
    cluster.forget(15);
    const behind = await start();
    await caughtUp(behind);
    expect(behind.status().reindex).toMatchObject({ running: false, force: false, progress: { phase: 'done', keysScanned: 40, keysTotal: 40 } });
    expect(behind.status().lastReindexEpoch).toEqual(expect.any(String));

    cluster.restore(new Map([['logical/restored', Buffer.from('r')]]));
    writeKeys(100, 2);
    await caughtUp(behind);
    expect(behind.status().reindex?.force).toBe(true);
  });

  it('applies nothing while suspended, and on resume catches up from the feed, or by a reindex once the feed lost its changes', async () => {
    const indexer = await start('merkle', { suspended: true });
    writeKeys(0, 10);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(indexer.applied).toBe(0);
    expect(cluster.follows).toBe(0);
    await expect(indexer.whenApplied(cluster.index)).rejects.toThrow(MerkleIndexSuspendedError);

    indexer.resume();
    await indexer.whenApplied(cluster.index);
    await caughtUp(indexer);
    expect(indexer.status().reindex).toBeUndefined();

    indexer.suspend();
    const applied = indexer.applied;
    writeKeys(10, 10);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(indexer.applied).toBe(applied);
    cluster.forget(cluster.index - 2);
    indexer.resume();
    await caughtUp(indexer);
    expect(indexer.status().reindex).toMatchObject({ running: false, progress: { phase: 'done' } });
  });

  it('fails what waits on it when suspended, and closes while suspended', async () => {
    const indexer = await start();
    writeKeys(0, 3);
    await caughtUp(indexer);
    const pending = indexer.whenApplied(indexer.applied + 5);
    indexer.suspend();
    await expect(pending).rejects.toThrow(MerkleIndexSuspendedError);
    await expect(indexer.whenApplied(indexer.applied + 1)).rejects.toThrow(/replication is disabled/);
    // What it already reflects still answers at once.
    await expect(indexer.whenApplied(indexer.applied)).resolves.toBeUndefined();
    await stop(indexer);
  });

  it('stops a reindex when suspended and runs it again on resume', async () => {
    writeKeys(0, 10);
    let release: (() => void) | undefined;
    let held = new Promise<void>((resolve) => { release = resolve; });
    let scans = 0;
    const slowScan = async (): Promise<StorageScan> => {
      scans++;
      await held;
      return cluster.scan();
    };
    const indexer = await start('merkle', { scan: slowScan });
    await caughtUp(indexer);
    indexer.reindex({ force: true });
    await waitUntil(() => scans === 1, 'the reindex to start');
    indexer.suspend();
    release?.();
    held = Promise.resolve();
    writeKeys(10, 2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(indexer.reindexPending).toBe(true);
    expect(scans).toBe(1);
    indexer.resume();
    await caughtUp(indexer);
    expect(scans).toBe(2);
    expect(indexer.status().reindex).toMatchObject({ running: false, force: true, progress: { phase: 'done' } });
  });

  it('follows again from its applied index when the feed\'s node is replaced', async () => {
    const indexer = await start();
    writeKeys(0, 5);
    await caughtUp(indexer);
    const follows = cluster.follows;
    cluster.replaceNode();
    writeKeys(5, 5);
    await caughtUp(indexer);
    expect(cluster.follows).toBeGreaterThan(follows);
    expect(indexer.status().reindex).toBeUndefined();
  });

  it('runs a reindex interrupted by a stop again when it opens', async () => {
    writeKeys(0, 10);
    let release: (() => void) | undefined;
    const held = new Promise<void>((resolve) => { release = resolve; });
    let scans = 0;
    let lateScanClosed = false;
    const slowScan = async (): Promise<StorageScan> => {
      scans++;
      await held;
      return { ...(await cluster.scan()), close: async () => { lateScanClosed = true; } };
    };
    const indexer = await start('merkle', { scan: slowScan });
    await caughtUp(indexer);
    await indexer.flush();
    indexer.reindex({ diff: true });
    await waitUntil(() => scans === 1, 'the reindex to start');
    await expect(indexer.check()).rejects.toThrow(/reindex of the Merkle index is running/);
    await stop(indexer);
    release?.();
    // The scan that came after the stop is ended unread.
    await waitUntil(() => lateScanClosed, 'the late scan to be closed');

    const again = await start('merkle', { scan: () => cluster.scan() });
    expect(again.reindexPending).toBe(true);
    await caughtUp(again);
    expect(again.status().reindex).toMatchObject({ running: false, diff: true, result: { leavesRewritten: 0, added: [], removed: [], changed: [] } });
  });

  it('rebuilds a store of the first format at open, and drops its records', async () => {
    await indexThenEditStore(20, async (db) => {
      await db.put('m', Buffer.from(JSON.stringify({ applied: cluster.index, floor: 0, counts: [20, 20], roots: ['', ''], root: '' })));
      await db.put('l00001', Buffer.from('a leaf record of the first format'));
    });

    const again = await start();
    expect(again.reindexPending).toBe(true);
    await caughtUp(again);
    await stop(again);
    const after = await openMerkleDb(join(dir, 'merkle'));
    try {
      expect(await after.get('m')).toBeUndefined();
      expect(await after.keys({ gte: 'l', lt: 'm' }).all()).toEqual([]);
    } finally {
      await after.close();
    }
  });

  it('agrees with a reindex about keys whose UTF-16 and UTF-8 orders differ in one leaf', async () => {
    // U+FFFD sorts after U+10000 in UTF-16 (JavaScript) but before it in UTF-8 (LevelDB).
    const high = new Map<number, string>();
    for (let i = 0; i < 5000; i++) high.set(leafOf(`logical/\u{10000}${i}`), `logical/\u{10000}${i}`);
    let low = '';
    let partner = '';
    for (let i = 0; !partner && i < 5000; i++) {
      low = `logical/\uFFFD${i}`;
      partner = high.get(leafOf(low)) ?? '';
    }
    expect(partner).not.toBe('');
    cluster.commit([put(low, 'a'), put(partner, 'b'), put('logical/plain', 'c')]);
    const indexer = await start();
    await caughtUp(indexer);
    await indexer.flush();
    // Storage loses the key that comes first in LevelDB's order behind the index's back: the
    // reindex walks the stored entries and the scan's side by side, in that order.
    cluster.data.delete(low);
    indexer.reindex({ diff: true });
    await caughtUp(indexer);
    expect(indexer.status().reindex?.result).toMatchObject({ leavesRewritten: 1, added: [], removed: [low], changed: [] });
    expect((await indexer.tree.leafEntries('replicated', leafOf(low))).map((e) => e.key)).toEqual([partner]);
  });

  it('rebuilds when a diff\'s read of the entries finds one damaged', async () => {
    await indexThenEditStore(50, (db) => db.put(entryPrefix(0, leafOf('logical/k3')) + 'logical/k3', Buffer.alloc(31)));

    const again = await start();
    await caughtUp(again);
    await expect(again.tree.leafEntries('replicated', leafOf('logical/k3'))).rejects.toThrow(/is 31 bytes/);
    await waitUntil(() => again.status().reindex?.running === false, 'the reindex to finish');
    await caughtUp(again);
    expect((await again.tree.leafEntries('replicated', leafOf('logical/k3'))).map((e) => e.key)).toContain('logical/k3');
  });

  it('finds a flipped byte in a stored page and in a stored entry, and a reindex repairs both', async () => {
    writeKeys(0, 200);
    const indexer = await start();
    await caughtUp(indexer);
    expect(clean(await indexer.check())).toBe(true);
    await stop(indexer);

    // A byte of the hash of subpage 3 in a stored page of level 2 (17-272: the leaves' parents)
    // of the replicated tree, off the path of the leaf damaged next.
    const damagedKey = 'logical/k7';
    const leaf = leafOf(damagedKey);
    const db = await openMerkleDb(join(dir, 'merkle'));
    let damagedPage = 17;
    while (damagedPage < 272 && (damagedPage === 17 + (leaf >> 4) || !(await db.get(pageKey(0, damagedPage))))) damagedPage++;
    const page = (await db.get(pageKey(0, damagedPage))) as Buffer;
    page[3 * 32 + 5] = (page[3 * 32 + 5] as number) ^ 0x40;
    await db.put(pageKey(0, damagedPage), page);
    const changedKey = damagedKey;
    const record = (await db.get(entryPrefix(0, leaf) + damagedKey)) as Buffer;
    record[31] = (record[31] as number) ^ 0x01;
    await db.put(entryPrefix(0, leaf) + damagedKey, record);
    await db.close();

    const damaged = await start();
    const report = (await damaged.check()).merkle_corruption_report;
    expect(report.corrupted_root).toBe(true);
    expect(report.corrupted_tree_map['2']).toEqual({ tree_type: 'local', corrupted_subtree_root: false, corrupted_index_tuples_map: {} });
    const replicated = report.corrupted_tree_map['1']!;
    expect(replicated.corrupted_subtree_root).toBe(true);
    expect(replicated.corrupted_index_tuples_map[String(damagedPage)]).toEqual({ corrupted: true, subpages: [3] });
    // Nothing else at that level.
    expect(Object.keys(replicated.corrupted_index_tuples_map).filter((p) => Number(p) >= 17).sort()).toEqual([String(damagedPage), String(17 + (leaf >> 4))].sort());
    // The damaged leaf shows on its path: page 0's subpage, its level-1 page's, its level-2 page's.
    expect(replicated.corrupted_index_tuples_map['0']?.subpages).toContain(leaf >> 8);
    expect(replicated.corrupted_index_tuples_map[String(1 + (leaf >> 8))]?.subpages).toContain((leaf >> 4) % 16);
    expect(replicated.corrupted_index_tuples_map[String(17 + (leaf >> 4))]?.subpages).toContain(leaf % 16);
    expect(damaged.status().corrupted).toBe(true);
    expect(report.last_corruption_check_epoch).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);

    damaged.reindex({ diff: true });
    await caughtUp(damaged);
    expect(damaged.status().reindex?.result).toMatchObject({ leavesRewritten: 1, added: [], removed: [], changed: [changedKey] });
    expect(damaged.status().corrupted).toBe(false);
    expect(clean(await damaged.check())).toBe(true);
    expect(damaged.status().corrupted).toBe(false);
  });
});

function clean(report: Awaited<ReturnType<MerkleIndexer['check']>>): boolean {
  const r = report.merkle_corruption_report;
  return !r.corrupted_root && Object.values(r.corrupted_tree_map).every((t) => !t.corrupted_subtree_root && Object.keys(t.corrupted_index_tuples_map).length === 0);
}
