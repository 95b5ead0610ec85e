import type { Advert, RaftStorage } from '@strongroom/cluster';
import { MemoryStorage, silentLogger, systemClock, type TxnOp } from '@strongroom/core';
import type { Check } from '@strongroom/raft';
import { readApplied, type PrimaryLink } from './role-state';
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
    expect(await readApplied(storage, 'performance')).toEqual({ wal_source: 'w1', index: 6 });
    // The copy a DR secondary of this cluster resumes from, with the data it describes.
    expect(JSON.parse(storage.data.get('core/replication-performance-link-applied')?.toString() ?? 'null')).toEqual({ wal_source: 'w1', index: 6 });
    expect(await readApplied(storage, 'dr')).toBeNull();
    expect(runner.pathsFilter()).toEqual({ mode: 'deny', paths: ['hidden/'] });
  } finally {
    await runner.stop();
  }
});
