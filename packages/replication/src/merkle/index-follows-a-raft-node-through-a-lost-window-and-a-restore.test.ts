import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { TxnOp } from '@strongroom/base';
import { CommitFeed } from '@strongroom/cluster';
import { encodeTxn, MemoryNetwork, RaftNode } from '@strongroom/raft';
import { MerkleIndexer } from './indexer';
import { MerkleTree } from './merkle-tree';
import { openMerkleDb } from './store';
import { waitUntil } from './test-support/fake-cluster';

const put = (key: string, value: string): TxnOp => ({ type: 'put', key, value: Buffer.from(value) });

describe('a Merkle index on a Raft node', () => {
  let dir: string;
  let node: RaftNode;
  const feed = new CommitFeed();
  const indexers: MerkleIndexer[] = [];

  const startIndexer = async () => {
    const indexer = await MerkleIndexer.open({ dir: join(dir, 'merkle'), feed, scan: () => node.scan(), flushIntervalMs: 20, retryMs: 20 });
    indexers.push(indexer);
    return indexer;
  };

  /** The root of the node's data now, built in one change. */
  async function rootOfData(): Promise<string> {
    const db = await openMerkleDb(join(dir, `truth-${Math.random().toString(16).slice(2)}`));
    try {
      const tree = await MerkleTree.open(db);
      const ops: TxnOp[] = [];
      for await (const batch of (await node.scan()).records) for (const [key, value] of batch) ops.push({ type: 'put', key, value });
      tree.apply(1, ops);
      return tree.root.toString('hex');
    } finally {
      await db.close();
    }
  }

  async function caughtUp(indexer: MerkleIndexer): Promise<void> {
    await waitUntil(() => indexer.applied === node.applied && !indexer.reindexPending, `the index to reach ${node.applied}`);
    expect(indexer.status().merkleRoot).toBe(await rootOfData());
  }

  const write = async (from: number, count: number) => {
    for (let i = from; i < from + count; i++) expect(await node.propose(encodeTxn([put(`logical/k${i}`, `v${i}`), put(`sys/token/id/t${i}`, 't')]))).toBe(true);
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-merkle-raft-'));
    node = await RaftNode.open({
      id: 'n1', dataDir: join(dir, 'raft'), transport: new MemoryNetwork().transport('n1'), bootstrap: { voters: ['n1'], learners: [] },
      tickMs: 10, electionTicks: 10, heartbeatTicks: 1, changeLog: { maxEntries: 8 },
    });
    feed.attach(node);
  });
  afterEach(async () => {
    for (const indexer of indexers.splice(0)) await indexer.close();
    feed.attach(null);
    await node.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('follows the commit feed, reindexes from a scan once the window moved past it, and again after a restore', async () => {
    const first = await startIndexer();
    await write(0, 5);
    await caughtUp(first);
    expect(first.status().reindex).toBeUndefined();
    await indexers.splice(0)[0]!.close();

    await write(5, 20);
    const behind = await startIndexer();
    await caughtUp(behind);
    expect(behind.status().reindex).toMatchObject({ running: false, progress: { phase: 'done', keysScanned: 50 } });

    const snapshot: Buffer[] = [];
    const out = new PassThrough();
    out.on('data', (chunk: Buffer) => snapshot.push(chunk));
    await node.writeSnapshot(out);
    await write(25, 3);
    await caughtUp(behind);
    expect(behind.status().reindex?.force).toBe(false);
    await node.restoreSnapshot(PassThrough.from([Buffer.concat(snapshot)]));
    // Only a restore asks for a forced one here.
    await waitUntil(() => behind.status().reindex?.force === true, 'a reindex after the restore');
    await caughtUp(behind);
    expect(behind.status().reindex).toMatchObject({ running: false, force: true, progress: { keysScanned: 50 } });
  });
});
