import type { Advert, RaftStorage } from '@strongroom/cluster';
import { MemoryStorage, silentLogger, systemClock, type TxnOp } from '@strongroom/core';
import type { Check } from '@strongroom/raft';
import { appliedKey, readApplied, type PrimaryLink } from './role-state';
import { SecondaryRunner, type SecondaryMerkle } from './secondary-runner';
import type { ReplicationClient } from './wire/replication-client';
import type { KeyValue, MerkleDiffResult, WalStreamMessage } from './wire/types';

class Store extends MemoryStorage {
  async checkAndSet(_checks: readonly Check[], ops: readonly TxnOp[]): Promise<boolean> {
    await this.txn([...ops]);
    return true;
  }
}

const LINK: PrimaryLink = { cluster_id: 'c1', wal_source: 'w1', cluster_addrs: ['127.0.0.1:3'], api_addr: 'http://127.0.0.1:4', ca_cert: 'ca', cert: 'cert', key: 'key' };
const put = (key: string, value = 'new'): TxnOp => ({ type: 'put', key, value: Buffer.from(value) });

/** A primary that answers one Merkle diff in `pages`, then streams `messages` from where asked and waits until the runner stops. */
function fakePrimary(pages: MerkleDiffResult[], values: Record<string, string>, messages: WalStreamMessage[], streamedFrom: number[]) {
  const client = {
    ping: async () => ({ clusterId: 'c1', walSource: 'w1', active: true, activeClusterAddress: null, lastWal: 9, timeMs: Date.now(), pathsFilter: { mode: 'deny', paths: ['hidden/'] } }),
    merkleDiff: async function* (): AsyncGenerator<MerkleDiffResult> {
      yield* pages;
    },
    merkleSync: async function* (keys: string[]): AsyncGenerator<KeyValue[]> {
      yield keys.map((key) => ({ key, value: values[key] === undefined ? null : Buffer.from(values[key] as string) }));
    },
    streamWals: async function* (request: { fromIndex: number }, signal: AbortSignal): AsyncGenerator<WalStreamMessage> {
      streamedFrom.push(request.fromIndex);
      yield* messages;
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    },
    close: () => {},
  };
  return client as unknown as ReplicationClient;
}

it('a performance secondary syncs and streams only shared keys, keeps its own, tells the core, and knows how far it got', async () => {
  const storage = new Store();
  // Its own token and local mount, and shared data the primary no longer sends it (a newly denied mount).
  for (const key of ['sys/token/id/mine', 'logical/local-mount/x', 'logical/hidden/y']) await storage.put(key, Buffer.from('old'));
  const changed: string[][] = [];
  const merkle: SecondaryMerkle = {
    caughtUp: async () => {},
    summary: () => ({ trees: [] }),
    // What planning over the answer gives: fetch what the primary listed, remove what this node holds beside it
    // (in the local tree its token; in the shared tree's leaf 3, which the primary holds empty, the rest).
    plan: async (leaves) => ({
      fetch: leaves.flatMap((l) => l.entries.map((e) => e.key)),
      remove: [
        ...(leaves.some((l) => l.tree === 'local') ? ['sys/token/id/mine'] : []),
        ...(leaves.some((l) => l.tree === 'replicated' && l.leaf === 3) ? ['logical/local-mount/x', 'logical/hidden/y'] : []),
      ],
    }),
  };
  const streamedFrom: number[] = [];
  const runner = new SecondaryRunner({
    kind: 'performance', storage: storage as unknown as RaftStorage, link: LINK, self: { api: 'a', cluster: 'c' } as Advert, nodeId: 'n1',
    merkle, applied: () => 0, clock: systemClock, logger: silentLogger, countMerkleSync: async () => {},
    connect: () => fakePrimary(
      [
        { lastWal: 4, leaves: [{ tree: 'replicated', leaf: 1, entries: [{ key: 'logical/kv/a', hash: Buffer.alloc(32) }] }], next: 2 },
        // A later page reflects a later WAL: streaming from the first page's covers both.
        { lastWal: 5, leaves: [{ tree: 'local', leaf: 2, entries: [] }, { tree: 'replicated', leaf: 3, entries: [] }] },
      ],
      { 'logical/kv/a': 'synced' },
      [
        { kind: 'batch', entries: [{ index: 6, rootBefore: Buffer.alloc(0), ops: [put('logical/kv/b')] }], lastWal: 9, through: 7 },
        { kind: 'batch', entries: [], lastWal: 9, through: 9 },
      ],
      streamedFrom,
    ),
    sharedOnly: {
      isShared: (key) => !key.startsWith('sys/token/') && !key.startsWith('logical/local-mount/'),
      changed: async (keys) => {
        changed.push([...keys].sort());
      },
    },
  });
  const far = runner.reached(9, 20_000);
  const tooFar = runner.reached(10, 50);
  runner.start();
  try {
    await expect(far).resolves.toBe(true);
    await expect(tooFar).resolves.toBe(false);
    expect([...storage.data.keys()].filter((k) => !k.startsWith('core/local/')).sort()).toEqual([
      'core/replication-performance-link-applied', 'logical/kv/a', 'logical/kv/b', 'logical/local-mount/x', 'sys/token/id/mine',
    ]);
    expect(storage.data.get('logical/kv/a')?.toString()).toBe('synced');
    // The core hears of each page's keys as they land, then of the stream's.
    expect(changed).toEqual([['logical/kv/a'], ['logical/hidden/y'], ['logical/kv/b']]);
    expect(streamedFrom).toEqual([5]);
    // With the filter the sync began under, which the stream's marks carry on.
    const filter = JSON.stringify({ mode: 'deny', paths: ['hidden/'] });
    expect(await readApplied(storage, 'performance')).toEqual({ wal_source: 'w1', index: 6, paths_filter: filter });
    // The copy a DR secondary of this cluster resumes from, with the data it describes.
    expect(JSON.parse(storage.data.get('core/replication-performance-link-applied')?.toString() ?? 'null')).toEqual({ wal_source: 'w1', index: 6, paths_filter: filter });
    expect(await readApplied(storage, 'dr')).toBeNull();
    expect(runner.pathsFilter()).toEqual({ mode: 'deny', paths: ['hidden/'] });
  } finally {
    await runner.stop();
  }
});

describe('a paths filter changed since the last Merkle sync began', () => {
  const OLD = { mode: 'deny', paths: ['old/'] };
  const NOW = { mode: 'deny', paths: ['hidden/'] };

  /** A primary telling `told.filter` on each ping, answering every diff with one page at `lastWal`, streaming nothing. */
  function primary(told: { filter: unknown }, lastWal: number) {
    const seen = { diffs: 0, streamedFrom: [] as number[] };
    const client = {
      ping: async () => ({ clusterId: 'c1', walSource: 'w1', active: true, activeClusterAddress: null, lastWal, timeMs: Date.now(), pathsFilter: told.filter }),
      merkleDiff: async function* (): AsyncGenerator<MerkleDiffResult> {
        seen.diffs++;
        yield { lastWal, leaves: [] };
      },
      merkleSync: async function* (): AsyncGenerator<KeyValue[]> {},
      streamWals: async function* (request: { fromIndex: number }, signal: AbortSignal): AsyncGenerator<WalStreamMessage> {
        seen.streamedFrom.push(request.fromIndex);
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      },
      close: () => {},
    };
    return { client: client as unknown as ReplicationClient, seen };
  }

  function runner(storage: Store, client: ReplicationClient, counted: { n: number }, warnings: string[] = []) {
    return new SecondaryRunner({
      kind: 'performance', storage: storage as unknown as RaftStorage, link: LINK, self: { api: 'a', cluster: 'c' } as Advert, nodeId: 'n1',
      merkle: { caughtUp: async () => {}, summary: () => ({ trees: [] }), plan: async () => ({ fetch: [], remove: [] }) },
      applied: () => 0, clock: systemClock, logger: { ...silentLogger, warn: (message) => { warnings.push(message); } }, countMerkleSync: async () => { counted.n++; },
      connect: () => client,
      sharedOnly: { isShared: () => true, changed: async () => {} },
    });
  }

  async function until(cond: () => boolean, ms = 15_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('syncs before streaming when the mark holds another filter, and streams at once from a mark that holds none', async () => {
    // A mark from a sync under the old filter (the primary's leader changed before it could end the sync).
    const storage = new Store();
    await storage.put(appliedKey('performance'), Buffer.from(JSON.stringify({ wal_source: 'w1', index: 5, paths_filter: JSON.stringify(OLD) })));
    const { client, seen } = primary({ filter: NOW }, 8);
    const counted = { n: 0 };
    const r = runner(storage, client, counted);
    r.start();
    try {
      await until(() => seen.streamedFrom.length > 0);
      expect(seen.diffs).toBe(1);
      expect(seen.streamedFrom).toEqual([9]);
      expect(await readApplied(storage, 'performance')).toEqual({ wal_source: 'w1', index: 8, last_wal: 8, paths_filter: JSON.stringify(NOW) });
      // Not counted as having fallen behind the primary's window.
      expect(counted.n).toBe(0);
    } finally {
      await r.stop();
    }

    // A mark written before marks carried the filter: nothing to compare, so no sync.
    const older = new Store();
    await older.put(appliedKey('performance'), Buffer.from(JSON.stringify({ wal_source: 'w1', index: 5 })));
    const second = primary({ filter: NOW }, 8);
    const r2 = runner(older, second.client, counted);
    r2.start();
    try {
      await until(() => second.seen.streamedFrom.length > 0);
      expect(second.seen.diffs).toBe(0);
      expect(second.seen.streamedFrom).toEqual([6]);
    } finally {
      await r2.stop();
    }
  });

  it('ends its stream and syncs when a ping tells another filter than the one its last sync began with', async () => {
    const storage = new Store();
    const told = { filter: OLD as unknown };
    const { client, seen } = primary(told, 3);
    const counted = { n: 0 };
    const warnings: string[] = [];
    const r = runner(storage, client, counted, warnings);
    r.start();
    try {
      // The first sync (no mark yet), under the old filter, then streaming.
      await until(() => seen.streamedFrom.length === 1);
      expect(seen.diffs).toBe(1);
      expect((await readApplied(storage, 'performance'))?.paths_filter).toBe(JSON.stringify(OLD));
      told.filter = NOW;
      // The next ping (every 2 s) tells the new filter: the stream ends, a sync runs, streaming resumes.
      await until(() => seen.streamedFrom.length === 2);
      expect(seen.diffs).toBe(2);
      expect((await readApplied(storage, 'performance'))?.paths_filter).toBe(JSON.stringify(NOW));
      expect(counted.n).toBe(0);
      // The runner ended its own stream: the link did not fail.
      expect(warnings).toEqual([]);
    } finally {
      await r.stop();
    }
  });
});

it('counts a sync after not_retained as falling behind, unless the filter changed', async () => {
  const counts: number[] = [];
  for (const changed of [false, true]) {
    const storage = new Store();
    const before = { mode: 'deny', paths: ['old/'] };
    const after = changed ? { mode: 'deny', paths: ['hidden/'] } : before;
    await storage.put(appliedKey('performance'), Buffer.from(JSON.stringify({ wal_source: 'w1', index: 5, paths_filter: JSON.stringify(before) })));
    let streams = 0;
    let diffs = 0;
    const client = {
      // The primary answers with the filter of now: the old one until the stream is ended.
      ping: async () => ({ clusterId: 'c1', walSource: 'w1', active: true, activeClusterAddress: null, lastWal: 8, timeMs: Date.now(), pathsFilter: streams === 0 ? before : after }),
      merkleDiff: async function* (): AsyncGenerator<MerkleDiffResult> {
        diffs++;
        yield { lastWal: 8, leaves: [] };
      },
      merkleSync: async function* (): AsyncGenerator<KeyValue[]> {},
      streamWals: async function* (_request: unknown, signal: AbortSignal): AsyncGenerator<WalStreamMessage> {
        if (streams++ === 0) {
          yield { kind: 'notRetained' } as WalStreamMessage;
          return;
        }
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      },
      close: () => {},
    } as unknown as ReplicationClient;
    const counted = { n: 0 };
    const r = new SecondaryRunner({
      kind: 'performance', storage: storage as unknown as RaftStorage, link: LINK, self: { api: 'a', cluster: 'c' } as Advert, nodeId: 'n1',
      merkle: { caughtUp: async () => {}, summary: () => ({ trees: [] }), plan: async () => ({ fetch: [], remove: [] }) },
      applied: () => 0, clock: systemClock, logger: silentLogger, countMerkleSync: async () => { counted.n++; },
      connect: () => client,
      sharedOnly: { isShared: () => true, changed: async () => {} },
    });
    r.start();
    const deadline = Date.now() + 15_000;
    while (streams < 2) {
      if (Date.now() > deadline) throw new Error('the runner did not stream again');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await r.stop();
    expect(diffs).toBe(1);
    counts.push(counted.n);
  }
  expect(counts).toEqual([1, 0]);
});

it('a Merkle sync that a stop cuts short is not marked done', async () => {
  const storage = new Store();
  let fetching!: () => void;
  const fetchStarted = new Promise<void>((resolve) => { fetching = resolve; });
  const client = {
    ping: async () => ({ clusterId: 'c1', walSource: 'w1', active: true, activeClusterAddress: null, lastWal: 4, timeMs: Date.now(), pathsFilter: null }),
    merkleDiff: async function* (): AsyncGenerator<MerkleDiffResult> {
      yield { lastWal: 4, leaves: [{ tree: 'replicated', leaf: 1, entries: [{ key: 'logical/kv/a', hash: Buffer.alloc(32) }] }] };
    },
    // As the wire client does: an aborted fetch ends without an error.
    merkleSync: async function* (_keys: string[], signal: AbortSignal): AsyncGenerator<KeyValue[]> {
      fetching();
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    },
    streamWals: async function* (): AsyncGenerator<WalStreamMessage> {},
    close: () => {},
  } as unknown as ReplicationClient;
  const r = new SecondaryRunner({
    kind: 'performance', storage: storage as unknown as RaftStorage, link: LINK, self: { api: 'a', cluster: 'c' } as Advert, nodeId: 'n1',
    merkle: { caughtUp: async () => {}, summary: () => ({ trees: [] }), plan: async (leaves) => ({ fetch: leaves.flatMap((l) => l.entries.map((e) => e.key)), remove: [] }) },
    applied: () => 0, clock: systemClock, logger: silentLogger, countMerkleSync: async () => {},
    connect: () => client,
    sharedOnly: { isShared: () => true, changed: async () => {} },
  });
  r.start();
  await fetchStarted;
  await r.stop();
  expect(await readApplied(storage, 'performance')).toBeNull();
});
