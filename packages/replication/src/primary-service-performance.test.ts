import type { ClusterNode } from '@strongroom/cluster';
import { MemoryStorage, silentLogger, systemClock, type TxnOp } from '@strongroom/core';
import type { CommittedChange } from '@strongroom/base';
import { KindRouter } from './kind-router';
import { filterAllowsKey } from './paths-filter';
import { PrimaryService, type PrimaryMerkle } from './primary-service';
import type { PathsFilter, PrimaryState } from './role-state';
import type { PeerIdentity } from './tls/peer-identity';
import { CredentialRefusedError } from './wire/errors';
import type { ReplicationHandler } from './wire/replication-server';
import type { MerkleDiffRequest, WalStreamItem } from './wire/types';
import type { WalTracker } from './wal-tracker';

/** A commit feed that hands out the changes pushed to it, then waits for more (bounded by the test's abort). */
class FakeFeed {
  private readonly changes: CommittedChange[] = [];
  private wake: (() => void) | null = null;

  push(...changes: CommittedChange[]): void {
    this.changes.push(...changes);
    this.wake?.();
  }

  window() {
    return { first: 1, last: this.changes.at(-1)?.index, entries: this.changes.length, bytes: 0 };
  }

  async *follow(from: number, signal?: AbortSignal): AsyncGenerator<CommittedChange[]> {
    let next = from;
    while (!signal?.aborted) {
      const batch = this.changes.filter((c) => c.index >= next);
      if (batch.length > 0) {
        next = (batch.at(-1) as CommittedChange).index + 1;
        yield batch;
        continue;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        signal?.addEventListener('abort', () => resolve(), { once: true });
      });
    }
  }
}

const put = (key: string): TxnOp => ({ type: 'put', key, value: Buffer.from('v') });

/** Mount UUIDs the fake core knows: `kv` is shared, `mine` is a local mount, `hidden` is what the filter denies. */
const MOUNTS = new Map([
  ['kv', { uuid: 'kv', path: 'secret/', namespace: '' }],
  ['mine', { uuid: 'mine', path: 'local-kv/', namespace: '' }],
  ['hidden', { uuid: 'hidden', path: 'hidden/', namespace: '' }],
]);

function scopeOf(key: string): 'shared' | 'local' {
  return key.startsWith('sys/token/') || key.startsWith('logical/mine/') ? 'local' : 'shared';
}

function setup(filter?: PathsFilter) {
  const feed = new FakeFeed();
  const caller: PeerIdentity = { secondaryId: 'perf-west', fingerprint: 'f1' };
  const state: PrimaryState = {
    mode: 'primary', cluster_id: 'c1', wal_source: 'w1', primary_cluster_addr: '', ca_cert: 'ca', ca_key: 'k', jwt_key: 'j',
    secondaries: { 'perf-west': { id: 'perf-west', fingerprint: 'f1', issued_at: 0, expires_at: Infinity, activated: true } },
    ...(filter ? { paths_filters: { 'perf-west': filter } } : {}),
  };
  const storage = new MemoryStorage();
  const cluster = { feed, storage, leads: true, leaderInfo: () => null } as unknown as ClusterNode;
  const diffs: { page: MerkleDiffRequest['page']; allows: ((key: string) => boolean) | undefined }[] = [];
  const merkle: PrimaryMerkle = {
    caughtUp: async () => {},
    rootBefore: () => Buffer.alloc(0),
    // The index answers what `allows` lets through (answerDiff's own tests cover how).
    diff: async (theirs, allows) => {
      diffs.push({ page: theirs.page, allows });
      return { leaves: [{ tree: 'replicated', leaf: 1, entries: [] }], next: theirs.page ? theirs.page.from + 1 : null };
    },
  };
  const forwarded: unknown[] = [];
  const service = new PrimaryService({
    cluster, merkle, wal: { lastWal: 9 } as WalTracker, clock: systemClock, logger: silentLogger,
    state: () => state, recordActivation: async () => {},
    selector: (id) => {
      const f = state.paths_filters?.[id];
      const shared = (key: string) => scopeOf(key) === 'shared';
      return f ? (key) => shared(key) && filterAllowsKey(f, key, (uuid) => MOUNTS.get(uuid)) : shared;
    },
    forward: async (request) => {
      forwarded.push(request);
      return { status: 200, body: { data: { ok: true } } };
    },
  });
  return { feed, caller, state, service, storage, forwarded, diffs, cluster: cluster as { leads: boolean } };
}

/** Reads stream items until `enough` says so; the stream is then aborted. */
async function readUntil(items: AsyncIterable<WalStreamItem>, stop: AbortController, enough: (seen: WalStreamItem[]) => boolean): Promise<WalStreamItem[]> {
  const seen: WalStreamItem[] = [];
  for await (const item of items) {
    seen.push(item);
    if (enough(seen)) break;
  }
  stop.abort();
  return seen;
}

function keysOf(items: WalStreamItem[]): string[] {
  return items.flatMap((i) => (i.kind === 'batch' ? i.entries.flatMap((e) => e.ops.map((op) => op.key)) : []));
}

describe('a performance primary\'s stream', () => {
  it('sends only shared keys its filter allows, and says how far it went when it left every change out', async () => {
    const { feed, caller, service } = setup({ mode: 'deny', paths: ['hidden/'] });
    feed.push(
      { index: 1, ops: [put('core/mounts'), put('logical/kv/a'), put('logical/hidden/c'), put('logical/mine/b'), put('sys/token/id/t')] },
      { index: 2, ops: [put('sys/token/id/u')] },
    );
    const stop = new AbortController();
    const request = { fromIndex: 1, primaryClusterId: 'c1', walSource: 'w1', nodeId: '', apiAddress: '', clusterAddress: '' };
    const seen = await readUntil(service.streamWals(request, caller, stop.signal), stop, (s) => s.some((i) => i.kind === 'batch' && i.through === 2));
    expect(keysOf(seen)).toEqual(['core/mounts', 'logical/kv/a']);
    expect(seen.at(-1)).toMatchObject({ kind: 'batch', through: 2 });

    feed.push({ index: 3, ops: [put('sys/token/id/v')] });
    const stop2 = new AbortController();
    const more = await readUntil(service.streamWals({ ...request, fromIndex: 3 }, caller, stop2.signal), stop2, (s) => s.length >= 1);
    // A change left out entirely still moves the stream's mark: a forwarded write waits on it.
    expect(more).toEqual([{ kind: 'batch', entries: [], lastWal: 9, through: 3 }]);
  });

  it('ends with not_retained when the secondary must sync again (its filter changed)', async () => {
    const { feed, caller, service } = setup();
    feed.push({ index: 1, ops: [put('logical/kv/a')] });
    const stop = new AbortController();
    const request = { fromIndex: 1, primaryClusterId: 'c1', walSource: 'w1', nodeId: '', apiAddress: '', clusterAddress: '' };
    const seen: WalStreamItem[] = [];
    for await (const item of service.streamWals(request, caller, stop.signal)) {
      seen.push(item);
      if (seen.length === 1) service.resync('perf-west');
      if (seen.length > 5) break;
    }
    stop.abort();
    expect(seen.map((i) => i.kind)).toEqual(['batch', 'notRetained']);
  });

  it('starts streams with not_retained after a filter change until a Merkle sync begins, a change during one included', async () => {
    const { feed, caller, service } = setup();
    feed.push({ index: 1, ops: [put('logical/kv/a')] });
    const request = { fromIndex: 1, primaryClusterId: 'c1', walSource: 'w1', nodeId: '', apiAddress: '', clusterAddress: '' };
    const firstItem = async () => {
      const stop = new AbortController();
      return (await readUntil(service.streamWals(request, caller, stop.signal), stop, (items) => items.length >= 1)).map((i) => i.kind);
    };
    const diffPage = (from: number) => service.merkleDiff({ trees: [], page: { from, maxBytes: 100 } }, caller);
    // The secondary is between the pages of a sync when its filter changes: no stream of its runs.
    await diffPage(0);
    service.resync('perf-west');
    await diffPage(3);
    expect(await firstItem()).toEqual(['notRetained']);
    // A not_retained that reached no one (the secondary was gone) does not end the mark.
    expect(await firstItem()).toEqual(['notRetained']);
    // The sync that follows is answered with the filter of now; after it begins, streams run as usual.
    await diffPage(0);
    expect(await firstItem()).toEqual(['batch']);
  });

  it('does not send a secondary to sync twice for a filter set before its first sync began', async () => {
    const { feed, caller, service } = setup();
    feed.push({ index: 1, ops: [put('logical/kv/a')] });
    service.resync('perf-west');
    // Its first sync (the whole answer at once, as an older secondary asks) already has the filter.
    await service.merkleDiff({ trees: [] }, caller);
    const stop = new AbortController();
    const request = { fromIndex: 1, primaryClusterId: 'c1', walSource: 'w1', nodeId: '', apiAddress: '', clusterAddress: '' };
    const items = await readUntil(service.streamWals(request, caller, stop.signal), stop, (seen) => seen.length >= 1);
    expect(items.map((i) => i.kind)).toEqual(['batch']);
  });

  it('marks nothing on a standby, whose secondaries are not streaming from it', async () => {
    const { feed, caller, service, cluster } = setup();
    feed.push({ index: 1, ops: [put('logical/kv/a')] });
    const request = { fromIndex: 1, primaryClusterId: 'c1', walSource: 'w1', nodeId: '', apiAddress: '', clusterAddress: '' };
    cluster.leads = false;
    service.resync('perf-west');
    // It takes the lead later: the secondary's stream is not sent back to sync again for a change the old leader handled.
    cluster.leads = true;
    const stop = new AbortController();
    const items = await readUntil(service.streamWals(request, caller, stop.signal), stop, (seen) => seen.length >= 1);
    expect(items.map((i) => i.kind)).toEqual(['batch']);
  });

  it('answers a Merkle diff page by page, with what the secondary\'s filter allows', async () => {
    const { caller, service, diffs } = setup({ mode: 'deny', paths: ['hidden/'] });
    const answer = await service.merkleDiff({ trees: [], page: { from: 3, maxBytes: 100 } }, caller);
    expect(answer).toEqual({ lastWal: 9, leaves: [{ tree: 'replicated', leaf: 1, entries: [] }], next: 4 });
    const { page, allows } = diffs[0] ?? {};
    expect(page).toEqual({ from: 3, maxBytes: 100 });
    expect(['logical/kv/a', 'logical/hidden/c', 'logical/mine/b', 'sys/token/id/t'].filter((key) => allows?.(key))).toEqual(['logical/kv/a']);
    // The last page says no next.
    expect(await service.merkleDiff({ trees: [] }, caller)).toEqual({ lastWal: 9, leaves: [{ tree: 'replicated', leaf: 1, entries: [] }] });
  });

  it('gives in a Merkle sync only the values of keys the secondary may hold', async () => {
    const { caller, service, storage } = setup({ mode: 'allow', paths: ['secret/'] });
    for (const key of ['logical/kv/a', 'logical/hidden/c', 'sys/token/id/t']) await storage.put(key, Buffer.from('v'));
    const pages = [];
    for await (const page of service.merkleSync(['logical/kv/a', 'logical/hidden/c', 'sys/token/id/t'], caller)) pages.push(...page);
    expect(pages.map((kv) => kv.key)).toEqual(['logical/kv/a']);
  });

  it('runs a forwarded write and answers with its last WAL', async () => {
    const { caller, service, forwarded } = setup();
    const answer = await service.forward({ operation: 'update', path: 'secret/data/x', data: { data: { a: 1 } }, namespace: 'team/' }, caller);
    expect(answer).toEqual({ status: 200, body: { data: { ok: true } }, lastWal: 9 });
    expect(forwarded).toEqual([{ operation: 'update', path: 'secret/data/x', data: { data: { a: 1 } }, namespace: 'team/' }]);
  });

  it('lists each secondary with the WAL index its last ping said it applied, next to its own last WAL', async () => {
    const { caller, service, state } = setup();
    expect(service.secondaries(state)).toEqual([expect.objectContaining({ node_id: 'perf-west', last_remote_wal: 0 })]);
    await service.ping({ nodeId: 'n1', apiAddress: 'http://s', clusterAddress: 's:8201', timeMs: 0, lastRttMs: 3, lastRemoteWal: 7 }, caller);
    expect(service.secondaries(state)).toEqual([expect.objectContaining({ node_id: 'perf-west', connection_status: 'connected', last_remote_wal: 7 })]);
    expect(service.lastWal()).toBe(9);
  });
});

describe('the shared replication service', () => {
  it('hands each call to the kind whose state issued the caller\'s certificate', async () => {
    const dr = setup();
    const perf = setup();
    const router = new KindRouter({ lastWal: 9 } as WalTracker);
    const drState: PrimaryState = { ...dr.state, secondaries: { 'perf-west': { ...dr.state.secondaries['perf-west']!, fingerprint: 'other' } } };
    router.serve('dr', { forward: async () => ({ status: 418, lastWal: 1 }) } as unknown as ReplicationHandler, () => drState);
    router.serve('performance', perf.service, () => perf.state);
    // Same id in both kinds: the certificate's fingerprint tells them apart.
    await expect(router.forward({ operation: 'update', path: 'p', data: {} }, { secondaryId: 'perf-west', fingerprint: 'f1' })).resolves.toMatchObject({ status: 200 });
    await expect(router.forward({ operation: 'update', path: 'p', data: {} }, { secondaryId: 'perf-west', fingerprint: 'other' })).resolves.toMatchObject({ status: 418 });
    await expect(router.forward({ operation: 'update', path: 'p', data: {} }, { secondaryId: 'perf-west', fingerprint: 'nobody' })).rejects.toBeInstanceOf(CredentialRefusedError);
  });
});
