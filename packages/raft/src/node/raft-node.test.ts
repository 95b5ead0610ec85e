import { createReadStream } from 'node:fs';
import { readFile, rm, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { FakeClock } from '@strongroom/base';
import { encodeTxn } from './command';
import { WalLogStore } from './wal-log-store';
import { MemoryNetwork } from './memory-transport';
import { RaftNode, type RaftNodeOptions } from './raft-node';
import { SnapshotReader } from './snapshot-file';
import { StateMachine } from './state-machine';
import { FAST, tempDir, waitFor } from './test-support/cluster';

const put = (key: string, value: string) => encodeTxn([{ type: 'put', key, value: Buffer.from(value) }]);

describe('RaftNode on a single-node cluster', () => {
  let dir: string;
  const open: RaftNode[] = [];

  async function start(extra: Partial<RaftNodeOptions> = {}): Promise<RaftNode> {
    const node = await RaftNode.open({
      id: 'n1',
      dataDir: dir,
      transport: new MemoryNetwork().transport('n1'),
      bootstrap: { voters: ['n1'], learners: [] },
      address: 'n1.example:8201',
      ...FAST,
      ...extra,
    });
    open.push(node);
    return node;
  }

  beforeEach(async () => {
    dir = await tempDir();
  });
  afterEach(async () => {
    for (const node of open.splice(0)) await node.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('leads at once, applies proposals, announces its address and keeps everything across a restart', async () => {
    const node = await start();
    const leaders: Array<[string | null, boolean]> = [];
    node.onLeaderChange((leader, self) => leaders.push([leader, self]));
    expect(await node.propose(put('a/b', '1'))).toBe(true);
    expect(leaders).toEqual([['n1', true]]);
    await node.readBarrier();
    expect((await node.get('a/b'))?.toString()).toBe('1');
    await waitFor(() => node.status().addresses['n1'] === 'n1.example:8201', 'the address');
    await node.close();

    const again = await start({ address: undefined });
    await again.readBarrier();
    expect((await again.get('a/b'))?.toString()).toBe('1');
    expect(await again.list('')).toEqual(['a/']);
    // Known from the replicated map, not from this run's options.
    expect(again.status().addresses).toEqual({ n1: 'n1.example:8201' });
  });

  it('scans its applied data with the index it reflects', async () => {
    const node = await start();
    expect(await node.propose(put('a/b', '1'))).toBe(true);
    const scan = await node.scan();
    expect(await node.propose(put('a/c', '2'))).toBe(true);
    const keys: string[] = [];
    for await (const batch of scan.records) for (const [key] of batch) keys.push(key);
    expect(keys).toEqual(['a/b']);
    expect(scan.index).toBeLessThan(node.applied);
  });

  it('shares one log write among many concurrent proposals (group commit)', async () => {
    const node = await start();
    await node.readBarrier();
    const before = node.stats().persists;
    const results = await Promise.all(Array.from({ length: 500 }, (_, i) => node.propose(put(`k/${i}`, String(i)))));
    expect(results.every(Boolean)).toBe(true);
    const writes = node.stats().persists - before;
    // Proposals made in one turn of the event loop share the next Ready: a handful of fsyncs, not 500.
    expect(writes).toBeLessThanOrEqual(5);
    expect((await node.list('k/')).length).toBe(500);
  });

  it('snapshots every N entries, truncates the log, and restarts from the snapshot', async () => {
    const node = await start({ snapshotThreshold: 50, snapshotIntervalMs: 0, snapshotTrailing: 10 });
    for (let round = 0; round < 6; round++) {
      await Promise.all(Array.from({ length: 40 }, (_, i) => node.propose(put(`k/${round * 40 + i}`, 'v'))));
    }
    await waitFor(() => node.stats().snapshotsTaken >= 2, 'snapshots');
    const snap = await node.snapshot();
    expect(snap.index).toBe(node.applied);
    expect(node.status().firstIndex).toBeGreaterThan(snap.index - 10 - 1);
    await node.close();

    expect((await readdir(join(dir, 'snapshots'))).filter((n) => n.endsWith('.snap'))).toHaveLength(2);
    const log = await WalLogStore.open(join(dir, 'wal'));
    const stored = await log.load();
    await log.close();
    expect(stored.snapshot?.index).toBe(snap.index);
    expect(stored.entries.length).toBe(0);

    // Even without its state machine (a machine crash can roll it back) the node recovers from snapshot + log.
    await rm(join(dir, 'state'), { recursive: true, force: true });
    const again = await start();
    await again.readBarrier();
    expect((await again.list('k/')).length).toBe(240);
    expect(await again.propose(put('after', 'restart'))).toBe(true);
  });

  it('spreads automatic snapshots by up to half the threshold, drawn from the random source', async () => {
    // 40 entries plus 0.5 of half of 40: the first snapshot waits for 50 applied entries.
    const node = await start({ snapshotThreshold: 40, snapshotIntervalMs: 0, snapshotTrailing: 5, raft: { random: () => 0.5 } });
    await node.readBarrier();
    while (node.applied < 49) await node.propose(put(`k/${node.applied}`, 'v'));
    await new Promise((r) => setTimeout(r, 50));
    expect(node.applied).toBe(49);
    expect(node.stats().snapshotsTaken).toBe(0);
    await node.propose(put('k/50', 'v'));
    await waitFor(() => node.stats().snapshotsTaken === 1, 'the first snapshot');
    expect((await node.snapshot()).index).toBeGreaterThanOrEqual(50);
  });

  it('checks the snapshot threshold once per interval, each wait drawn between one and two intervals', async () => {
    const clock = new FakeClock();
    // random 0.5: a threshold of 40 becomes 50 entries, an interval of 1000 ms a wait of 1500.
    const node = await start({ clock, snapshotThreshold: 40, snapshotIntervalMs: 1000, raft: { random: () => 0.5 } });
    await node.readBarrier();
    const writeAll = (from: number) => Promise.all(Array.from({ length: 60 }, (_, i) => node.propose(put(`k/${from + i}`, 'v'))));
    await writeAll(0);
    await clock.advance(1400);
    expect(node.stats().snapshotsTaken).toBe(0);
    await clock.advance(100);
    await waitFor(() => node.stats().snapshotsTaken === 1, 'the snapshot at the first check');
    const first = (await node.snapshot()).index;

    // The next check is another 1500 ms on; past the threshold already, it still waits for it.
    await writeAll(100);
    await clock.advance(1400);
    expect(node.stats().snapshotsTaken).toBe(1);
    await clock.advance(100);
    await waitFor(() => node.stats().snapshotsTaken === 2, 'the snapshot at the second check');
    expect((await node.snapshot()).index).toBeGreaterThan(first);
  });

  it('does not snapshot at a check that finds fewer entries than the threshold', async () => {
    const clock = new FakeClock();
    const node = await start({ clock, snapshotThreshold: 40, snapshotIntervalMs: 1000, raft: { random: () => 0.5 } });
    await node.readBarrier();
    await Promise.all(Array.from({ length: 20 }, (_, i) => node.propose(put(`k/${i}`, 'v'))));
    await clock.advance(5000);
    expect(node.stats().snapshotsTaken).toBe(0);
  });

  it('compacts the log at a checkpoint, copying nothing, once the entries applied pass the byte limit', async () => {
    const clock = new FakeClock();
    const options = { clock, snapshotThreshold: 1_000_000, snapshotIntervalMs: 3_600_000, snapshotMaxLogBytes: 4096, snapshotTrailing: 2 };
    const node = await start(options);
    await node.readBarrier();
    const value = 'v'.repeat(200);
    for (let i = 0; i < 10; i++) await node.propose(put(`k/${i}`, value));
    expect(node.stats().checkpoints).toBe(0);
    for (let i = 10; i < 30; i++) await node.propose(put(`k/${i}`, value));
    await waitFor(() => node.stats().checkpoints >= 1, 'the checkpoint past the byte limit');
    await waitFor(() => node.status().firstIndex > 10, 'the log compacted at the checkpoint');
    expect(node.stats().snapshotsTaken).toBe(0);
    expect((await readdir(join(dir, 'snapshots'))).filter((n) => n.endsWith('.snap'))).toEqual([]);

    // A restart needs no snapshot file: the state machine was made durable through the checkpoint.
    await node.close();
    open.splice(open.indexOf(node), 1);
    const again = await start(options);
    await again.readBarrier();
    expect(again.status().firstIndex).toBeGreaterThan(10);
    for (const i of [0, 15, 29]) expect((await again.get(`k/${i}`))?.toString()).toBe(value);
  });

  it('draws each byte limit between the configured one and half again as much, so members do not all compact at once', async () => {
    const value = 'v'.repeat(200);
    // Two nodes, one drawing the lowest limit (4096 bytes) and one near the highest (about 6100).
    const low = await start({ dataDir: `${dir}/low`, clock: new FakeClock(), snapshotThreshold: 1_000_000, snapshotIntervalMs: 3_600_000, snapshotMaxLogBytes: 4096, raft: { random: () => 0 } });
    const high = await start({ dataDir: `${dir}/high`, clock: new FakeClock(), snapshotThreshold: 1_000_000, snapshotIntervalMs: 3_600_000, snapshotMaxLogBytes: 4096, raft: { random: () => 0.99 } });
    for (const node of [high, low]) {
      await node.readBarrier();
      // About 4.8 KB of entries: past the low limit, short of the high one.
      for (let i = 0; i < 22; i++) await node.propose(put(`k/${i}`, value));
    }
    await waitFor(() => low.stats().checkpoints >= 1, 'the checkpoint past the low limit');
    // The high node had the same entries first; give a checkpoint it should not make time to show.
    await new Promise((r) => setTimeout(r, 200));
    expect(high.stats().checkpoints).toBe(0);
    for (let i = 22; i < 32; i++) await high.propose(put(`k/${i}`, value));
    await waitFor(() => high.stats().checkpoints >= 1, 'the checkpoint past the high limit');
  });

  it('writes a snapshot stream that verifies and holds the data', async () => {
    const node = await start();
    await node.propose(put('x', '1'));
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    const meta = await node.writeSnapshot(out);
    expect(meta.index).toBeLessThanOrEqual(node.applied);
    const reader = new SnapshotReader((async function* () { yield Buffer.concat(chunks); })());
    const keys: string[] = [];
    expect((await reader.header()).conf).toEqual({ voters: ['n1'], learners: [] });
    for await (const batch of reader.records()) for (const [k] of batch) keys.push(k.toString());
    expect(keys).toEqual(['dx']);
  });

  it('streams a snapshot straight from the state, at one point of the log, without writing a snapshot file', async () => {
    const node = await start();
    await Promise.all(Array.from({ length: 300 }, (_, i) => node.propose(put(`before/${String(i).padStart(3, '0')}`, 'v'.repeat(16384)))));
    // Nobody reads yet: the stream stalls after its first buffers while writes go on.
    const out = new PassThrough({ highWaterMark: 1 });
    const written = node.writeSnapshot(out);
    await waitFor(() => out.readableLength > 0, 'the first bytes');
    await node.propose(put('after', 'not in the snapshot'));
    await node.propose(put('before/000', 'changed after the snapshot'));
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    const meta = await written;
    const reader = new SnapshotReader((async function* () { yield Buffer.concat(chunks); })());
    expect((await reader.header()).index).toBe(meta.index);
    const records = new Map<string, string>();
    for await (const batch of reader.records()) for (const [k, v] of batch) records.set(k.toString(), v.toString());
    expect(records.size).toBe(300);
    expect(records.get('dbefore/000')).toBe('v'.repeat(16384));
    expect(records.has('dafter')).toBe(false);
    expect((await readdir(join(dir, 'snapshots'))).filter((n) => n.endsWith('.snap'))).toEqual([]);
    expect(node.stats().snapshotsTaken).toBe(0);
  });

  it('streams the newest snapshot file rather than scanning when it holds the state as applied now', async () => {
    const node = await start();
    await node.propose(put('x', '1'));
    // The leader records its own address meanwhile: until it is applied, a file can fall behind.
    let meta = await node.snapshot();
    await waitFor(async () => {
      meta = await node.snapshot();
      return node.applied === meta.index;
    }, 'a snapshot file of the state as applied');
    const file = await readFile(join(dir, 'snapshots', `snapshot-${String(meta.index).padStart(16, '0')}-${meta.term}.snap`));
    const view = jest.spyOn(StateMachine.prototype, 'view');
    const take = async (): Promise<Buffer> => {
      const out = new PassThrough();
      const chunks: Buffer[] = [];
      out.on('data', (c: Buffer) => chunks.push(c));
      await node.writeSnapshot(out);
      return Buffer.concat(chunks);
    };
    try {
      expect((await take()).equals(file)).toBe(true);
      expect(view).not.toHaveBeenCalled();
      expect(node.applied).toBe(meta.index);
      // One more write, and the file no longer is the state: a view is scanned.
      await node.propose(put('y', '2'));
      const keys: string[] = [];
      for await (const batch of new SnapshotReader(PassThrough.from([await take()])).records()) for (const [k] of batch) keys.push(k.toString());
      expect(keys).toEqual(['dx', 'dy']);
      expect(view).toHaveBeenCalledTimes(1);
    } finally {
      view.mockRestore();
    }
  });

  it('fails only the stream when its view cannot be taken, not the node', async () => {
    const node = await start();
    const view = jest.spyOn(StateMachine.prototype, 'view').mockImplementationOnce(() => {
      throw new Error('no view today');
    });
    try {
      await expect(node.writeSnapshot(new PassThrough())).rejects.toThrow('no view today');
    } finally {
      view.mockRestore();
    }
    expect(await node.propose(put('still', 'working'))).toBe(true);
    expect((await node.get('still'))?.toString()).toBe('working');
  });

  it('restores a snapshot over the current data', async () => {
    const node = await start();
    await node.propose(put('keep/me', 'from the snapshot'));
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    out.on('data', (c: Buffer) => chunks.push(c));
    await node.writeSnapshot(out);
    await node.propose(put('keep/me', 'changed'));
    await node.propose(put('gone', 'after the snapshot'));
    const changes: unknown[] = [];
    node.onApply((c) => changes.push(...c));
    await node.restoreSnapshot(PassThrough.from([Buffer.concat(chunks)]));
    expect((await node.get('keep/me'))?.toString()).toBe('from the snapshot');
    expect(await node.get('gone')).toBeNull();
    expect(changes).toContainEqual(expect.objectContaining({ restored: true }));
    await expect(node.restoreSnapshot(PassThrough.from([Buffer.from('garbage')]))).rejects.toMatchObject({ code: 'raft_snapshot_invalid' });
  });

  it('runs on a fake clock: ticks only move when the clock does', async () => {
    const clock = new FakeClock();
    const net = new MemoryNetwork();
    const node = await RaftNode.open({
      id: 'n1', dataDir: dir, transport: net.transport('n1'), clock, bootstrap: { voters: ['n1'], learners: [] }, proposalTimeoutMs: 1000,
    });
    open.push(node);
    expect(clock.pendingTimers()).toBe(1);
    expect(await node.propose(put('k', 'v'))).toBe(true);
    await clock.advance(1000);
    expect(clock.pendingTimers()).toBe(1);
  });

  it('rejects work once closed', async () => {
    const node = await start();
    await node.close();
    await expect(node.propose(put('k', 'v'))).rejects.toMatchObject({ code: 'raft_node_closed' });
    await expect(node.readBarrier()).rejects.toMatchObject({ code: 'raft_node_closed' });
  });

  it('reads the snapshot file it streams through createReadStream', async () => {
    const node = await start();
    const meta = await node.snapshot();
    const files = (await readdir(join(dir, 'snapshots'))).filter((n) => n.endsWith('.snap'));
    expect(files).toHaveLength(1);
    const header = await new SnapshotReader(createReadStream(join(dir, 'snapshots', files[0]!))).verify();
    expect(header.index).toBe(meta.index);
  });
});
