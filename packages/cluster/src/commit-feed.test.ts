import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CommittedChange } from '@strongroom/base';
import { ChangesNotRetainedError, encodeTxn, MemoryNetwork, RaftNode } from '@strongroom/raft';
import { CommitFeed, FeedSourceChangedError } from './commit-feed';

const FAST = { tickMs: 10, electionTicks: 10, heartbeatTicks: 1 } as const;

async function soloNode(dir: string, changeLog?: { maxEntries?: number }): Promise<RaftNode> {
  const node = await RaftNode.open({
    id: 'solo', dataDir: dir, transport: new MemoryNetwork().transport('solo'), bootstrap: { voters: ['solo'], learners: [] },
    ...FAST, ...(changeLog ? { changeLog } : {}),
  });
  node.campaign();
  while (!node.isLeader) await new Promise((r) => setTimeout(r, 5));
  return node;
}

const write = (node: RaftNode, key: string) => node.propose(encodeTxn([{ type: 'put', key, value: Buffer.from(key) }]));
const keysOf = (changes: CommittedChange[]) => changes.flatMap((c) => ('ops' in c ? c.ops.map((op) => op.key) : ['(restored)']));

describe('the commit feed', () => {
  let dir: string;
  let node: RaftNode | undefined;
  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'strongroom-feed-')); });
  afterEach(async () => {
    await node?.close();
    node = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  it('follows from an index: the retained window first, then each batch as it applies, with no gap and no repeat', async () => {
    node = await soloNode(join(dir, 'n'));
    const feed = new CommitFeed();
    feed.attach(node);
    for (let i = 0; i < 20; i++) await write(node, `before/${i}`);
    const first = feed.window().first as number;

    const controller = new AbortController();
    const seen: string[] = [];
    const indexes: number[] = [];
    const reading = (async () => {
      for await (const batch of feed.follow(first, controller.signal)) {
        seen.push(...keysOf(batch));
        indexes.push(...batch.map((c) => c.index));
        if (seen.length === 60) controller.abort();
      }
    })();
    // Writes while the reader is between the window and the live edge, and after.
    await Promise.all(Array.from({ length: 20 }, (_, i) => write(node!, `during/${i}`)));
    for (let i = 0; i < 20; i++) await write(node, `after/${i}`);
    await reading;

    expect(seen.slice(0, 20)).toEqual(Array.from({ length: 20 }, (_, i) => `before/${i}`));
    expect(seen.slice(20, 40).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `during/${i}`).sort());
    expect(seen.slice(40)).toEqual(Array.from({ length: 20 }, (_, i) => `after/${i}`));
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
    expect(new Set(indexes).size).toBe(indexes.length);
  });

  it('says when an index is no longer retained, and reads the window again after a restart', async () => {
    node = await soloNode(join(dir, 'n'), { maxEntries: 10 });
    const feed = new CommitFeed();
    feed.attach(node);
    for (let i = 0; i < 30; i++) await write(node, `k/${i}`);
    const { first, last } = feed.window();
    await expect(feed.follow(1).next()).rejects.toBeInstanceOf(ChangesNotRetainedError);
    const before = keysOf(await feed.read(first as number, 100));
    expect(before).toEqual(Array.from({ length: 10 }, (_, i) => `k/${20 + i}`));

    await node.close();
    node = await soloNode(join(dir, 'n'), { maxEntries: 10 });
    feed.attach(node);
    expect(feed.window()).toMatchObject({ first, last });
    expect(keysOf(await feed.read(first as number, 100))).toEqual(before);
  });

  it('tells subscribers of every batch, and a reader that the node underneath changed', async () => {
    node = await soloNode(join(dir, 'n'));
    const feed = new CommitFeed();
    feed.attach(node);
    const batches: string[][] = [];
    const off = feed.subscribe((changes) => { if (changes.length > 0) batches.push(keysOf([...changes])); });
    await write(node, 'a');
    await write(node, 'b');
    off();
    await write(node, 'c');
    expect(batches).toEqual([['a'], ['b']]);

    const reader = feed.follow(node.applied + 1);
    const next = reader.next();
    feed.attach(null);
    await expect(next).rejects.toBeInstanceOf(FeedSourceChangedError);
  });

  it('never yields, after the node underneath was replaced, a batch of the new node', async () => {
    node = await soloNode(join(dir, 'a'));
    const other = await soloNode(join(dir, 'b'));
    try {
      const feed = new CommitFeed();
      feed.attach(node);
      const reader = feed.follow(node.applied + 1);
      const first = reader.next();
      await write(node, 'from-a');
      expect(keysOf((await first).value as CommittedChange[])).toEqual(['from-a']);
      // The reader is parked at its yield while the feed moves to another node that writes.
      feed.attach(other);
      await write(other, 'from-b');
      await expect(reader.next()).rejects.toBeInstanceOf(FeedSourceChangedError);
    } finally {
      await other.close();
    }
  });

  it('lets the writers of a batch go on before its readers wake', async () => {
    node = await soloNode(join(dir, 'n'));
    const feed = new CommitFeed();
    feed.attach(node);
    const reader = feed.follow(node.applied + 1);
    const order: string[] = [];
    const read = reader.next().then(() => order.push('reader'));
    // A writer whose reply is many awaits away from its proposal, as an HTTP request's is.
    const written = write(node, 'w').then(async () => {
      for (let i = 0; i < 100; i++) await Promise.resolve();
      order.push('writer');
    });
    await Promise.all([read, written]);
    await reader.return(undefined);
    expect(order).toEqual(['writer', 'reader']);
  });

  it('keeps a slow reader whole: live batches past the bound are read again from the window', async () => {
    node = await soloNode(join(dir, 'n'));
    const feed = new CommitFeed();
    feed.attach(node);
    const from = node.applied + 1;
    const reader = feed.follow(from);
    const first = reader.next(); // subscribed and caught up, then parked
    await write(node, 'k/0');
    const seen = keysOf((await first).value as CommittedChange[]);
    // Far more batches than a reader may have waiting, written while it does not read.
    for (let i = 1; i < 1500; i++) await write(node, `k/${i}`);
    while (seen.length < 1500) {
      const { value } = await reader.next();
      seen.push(...keysOf(value as CommittedChange[]));
    }
    await reader.return(undefined);
    expect(seen).toEqual(Array.from({ length: 1500 }, (_, i) => `k/${i}`));
  });
});

