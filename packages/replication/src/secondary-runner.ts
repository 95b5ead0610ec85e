import type { TxnOp } from '@strongroom/base';
import type { Advert, RaftStorage } from '@strongroom/cluster';
import type { Clock, Logger } from '@strongroom/core';
import { appliedKey, encodeJson, kindLabel, PERFORMANCE_LINK_MARK_KEY, readApplied, type AppliedMark, type PathsFilter, type PrimaryLink, type ReplicationKind } from './role-state';
import type { SecondaryLive } from './role-runtime';
import { classifyKey } from './key-space';
import type { ReplicationClient } from './wire/replication-client';
import type { MerkleDiffRequest, MerkleDiffResult, WalEntry } from './wire/types';

/** What the secondary's stream needs of its node's Merkle index. */
export interface SecondaryMerkle {
  /** Resolves once the index reflects this node's change `index`. */
  caughtUp(index: number): Promise<void>;
  summary(): MerkleDiffRequest;
  /** Given the primary's entries of the leaves that differ: the keys to fetch and those to delete here. */
  plan(leaves: MerkleDiffResult['leaves']): Promise<{ fetch: string[]; remove: string[] }>;
}

/** What a performance secondary does beyond a DR one: it holds keys of its own, and its core serves. */
export interface SharedOnly {
  /** Whether a key this secondary holds is one the primary sends (else a Merkle sync never removes it). */
  isShared(key: string): boolean;
  /** The keys the stream or a Merkle sync just wrote: the core reloads what it holds from them. */
  changed(keys: string[]): Promise<void>;
}

export interface SecondaryRunnerOptions {
  kind: ReplicationKind;
  storage: RaftStorage;
  link: PrimaryLink;
  self: Advert;
  nodeId: string;
  merkle: SecondaryMerkle;
  /** This node's applied Raft index (what the Merkle index must reflect before a diff). */
  applied(): number;
  clock: Clock;
  logger: Logger;
  /** Opens a client to one of the primary's nodes. */
  connect(address: string, link: PrimaryLink): ReplicationClient;
  /** Called when the secondary fell out of the primary's window and synced by Merkle tree. */
  countMerkleSync(): Promise<void>;
  /** Performance secondaries only. */
  sharedOnly?: SharedOnly;
}

/** Between two pings of the primary while streaming; a few missed ones end the stream. */
const PING_EVERY_MS = 2_000;
const PING_DEADLINE_MS = 4_000;
/** Keys asked for per merkle-sync call, and written per Raft entry. */
const SYNC_PAGE_KEYS = 2_000;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;

/**
 * The secondary's half of DR replication, on the node that leads the secondary cluster: finds
 * the primary's active node, streams its WALs from the last one applied here and applies them
 * through this cluster's Raft, each batch in one entry together with the new applied mark (so a
 * leader change here neither replays nor skips anything). Falls back to a Merkle diff and sync
 * when its index has left the primary's window or belongs to another primary's log.
 */
export class SecondaryRunner {
  private stopped = false;
  private readonly abort = new AbortController();
  private running: Promise<void> | null = null;
  private live: SecondaryLive;
  private lastRemoteWal = 0;
  private client: ReplicationClient | null = null;
  private readonly heartbeats = new Map<string, { at: number; durationMs: number; skewMs: number; connected: boolean }>();
  /** The primary's index up to which this node has applied every change it was to receive (in memory: a forwarded write waits on it). */
  private through = 0;
  private readonly waiters = new Set<{ index: number; resolve: () => void }>();
  /** As an active node of the primary last told it (null: none); undefined until one has. */
  private filter: PathsFilter | null | undefined;
  private readonly name: string;

  constructor(private readonly options: SecondaryRunnerOptions) {
    this.name = `${kindLabel(options.kind)} secondary`;
    this.live = {
      state: 'idle', connectionState: 'connecting', lastRemoteWal: 0, primaryClusterAddr: options.link.cluster_addrs[0] ?? '',
      lastStart: new Date(options.clock.now()).toISOString(), primaries: [],
    };
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** The primary's paths filter for this secondary, as its last ping told. */
  pathsFilter(): PathsFilter | null {
    return this.filter ?? null;
  }

  /** The client to the primary's active node while the link is up. */
  activeClient(): ReplicationClient | null {
    return this.live.connectionState === 'ready' ? this.client : null;
  }

  /** Resolves true once this node has applied the primary's changes up to `index`, false after `ms`. */
  reached(index: number, ms: number): Promise<boolean> {
    if (this.through >= index) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { index, resolve: () => finish(true) };
      const timer = this.options.clock.setTimer(ms, () => finish(false));
      const finish = (ok: boolean) => {
        timer.cancel();
        this.waiters.delete(waiter);
        resolve(ok);
      };
      this.waiters.add(waiter);
    });
  }

  private advance(index: number): void {
    if (index <= this.through) return;
    this.through = index;
    for (const w of [...this.waiters]) if (w.index <= index) w.resolve();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.client?.close();
    await this.running;
  }

  status(): SecondaryLive {
    const primaries = [...this.heartbeats.entries()].map(([address, h]) => ({
      api_address: this.options.link.api_addr, cluster_address: address,
      connection_status: h.connected && this.options.clock.now() - h.at < 10_000 ? 'connected' : 'disconnected',
      last_heartbeat: new Date(h.at).toISOString(), last_heartbeat_duration_ms: h.durationMs, clock_skew_ms: h.skewMs,
    }));
    return { ...this.live, lastRemoteWal: this.lastRemoteWal, primaries };
  }

  private async loop(): Promise<void> {
    let backoff = RETRY_MIN_MS;
    const mark = await readApplied(this.options.storage, this.options.kind).catch(() => null);
    if (mark && mark.wal_source === this.options.link.wal_source) this.lastRemoteWal = mark.last_wal ?? mark.index;
    while (!this.stopped) {
      try {
        const { client, address } = await this.connectActive();
        this.client = client;
        this.live.primaryClusterAddr = address;
        this.live.connectionState = 'ready';
        backoff = RETRY_MIN_MS;
        await this.follow(client, address);
      } catch (err) {
        if (this.stopped) break;
        this.live.state = 'idle';
        this.live.connectionState = 'disconnected';
        for (const h of this.heartbeats.values()) h.connected = false;
        this.options.logger.warn(`${this.name}: the link to the primary failed; retrying`, { err: (err as Error).message });
        this.client?.close();
        this.client = null;
        await sleep(backoff, this.abort.signal);
        backoff = Math.min(backoff * 2, RETRY_MAX_MS);
      }
    }
  }

  /** Tries the known addresses in order, following a standby's pointer to its active node. */
  private async connectActive(): Promise<{ client: ReplicationClient; address: string }> {
    const errors: string[] = [];
    for (const first of this.options.link.cluster_addrs) {
      let address = first;
      for (let hop = 0; hop < 3; hop++) {
        const client = this.options.connect(address, this.options.link);
        try {
          const pong = await this.ping(client, address);
          if (pong.clusterId !== this.options.link.cluster_id) throw new Error(`${address} belongs to another replication set`);
          if (pong.active) return { client, address };
          client.close();
          if (!pong.activeClusterAddress) throw new Error(`${address} is a standby and knows no active node yet`);
          address = pong.activeClusterAddress;
        } catch (err) {
          client.close();
          errors.push(`${address}: ${(err as Error).message}`);
          break;
        }
      }
    }
    throw new Error(`no active node of the primary answered (${errors.join('; ')})`);
  }

  private async ping(client: ReplicationClient, address: string) {
    const sent = this.options.clock.now();
    const previous = this.heartbeats.get(address);
    const pong = await client.ping({
      nodeId: this.options.nodeId, apiAddress: this.options.self.api, clusterAddress: this.options.self.cluster, timeMs: sent,
      lastRttMs: previous?.durationMs ?? 0, lastRemoteWal: this.lastRemoteWal,
    });
    const now = this.options.clock.now();
    const rtt = now - sent;
    this.heartbeats.set(address, { at: now, durationMs: rtt, skewMs: Math.round(pong.timeMs - (sent + rtt / 2)), connected: true });
    if (pong.active) this.filter = pong.pathsFilter ?? null;
    return pong;
  }

  /** Streams from the mark; a Merkle sync first when the mark is not of this primary's log, or left its window. */
  private async follow(client: ReplicationClient, address: string): Promise<void> {
    let fellBehind = false;
    while (!this.stopped) {
      const mark = await readApplied(this.options.storage, this.options.kind);
      if (!mark || mark.wal_source !== this.options.link.wal_source) {
        await this.merkleSync(client, address);
        if (fellBehind) await this.options.countMerkleSync();
        continue;
      }
      if (this.filterChangedSince(mark)) {
        // Not fallen behind: the data of the last sync answers to an older filter.
        await this.merkleSync(client, address);
        continue;
      }
      this.lastRemoteWal = mark.last_wal ?? mark.index;
      this.advance(mark.last_wal ?? mark.index);
      this.live.state = 'stream-wals';
      this.options.logger.info(`${this.name}: streaming the primary's WALs`, { from_index: mark.index + 1 });
      const outcome = await this.stream(client, address, mark);
      if (outcome === 'not-retained') {
        fellBehind = true;
        await this.merkleSync(client, address);
        // The primary also ends the streams of a secondary whose filter changed: that sync is
        // not one of falling behind its window.
        if (!this.filterChangedSince(mark)) await this.options.countMerkleSync();
        fellBehind = false;
      }
    }
  }

  /**
   * Whether the primary has told a paths filter other than the one this node's last Merkle sync
   * began with. The primary's active node also ends the streams of a secondary whose filter
   * changes, but it keeps that in memory; this holds across its leader changes and restarts. A
   * mark written before marks carried the filter compares with nothing.
   */
  private filterChangedSince(mark: AppliedMark): boolean {
    return this.options.kind === 'performance' && mark.paths_filter !== undefined && this.filter !== undefined && JSON.stringify(this.filter) !== mark.paths_filter;
  }

  private async stream(client: ReplicationClient, address: string, start: AppliedMark): Promise<'not-retained' | 'filter-changed' | 'ended'> {
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    this.abort.signal.addEventListener('abort', onAbort);
    let pingFailure: Error | null = null;
    let filterChanged = false;
    const pinger = setInterval(() => {
      this.ping(client, address).then((pong) => {
        if (!pong.active) throw new Error('the primary node is no longer active');
        if (this.filterChangedSince(mark)) {
          filterChanged = true;
          stop.abort();
        }
      }).catch((err: unknown) => {
        pingFailure = err as Error;
        stop.abort();
      });
    }, PING_EVERY_MS);
    let mark = start;
    try {
      for await (const message of client.streamWals({
        fromIndex: mark.index + 1, primaryClusterId: this.options.link.cluster_id, walSource: this.options.link.wal_source,
        nodeId: this.options.nodeId, apiAddress: this.options.self.api, clusterAddress: this.options.self.cluster,
      }, stop.signal)) {
        if (message.kind === 'notRetained') return 'not-retained';
        if (message.kind === 'batch' && message.entries.length > 0) mark = await this.apply(mark, message.entries);
        if (message.kind === 'batch' && message.through) this.advance(message.through);
      }
      if (pingFailure) throw pingFailure;
      if (this.stopped) return 'ended';
      if (filterChanged) return 'filter-changed';
      throw new Error('the primary ended the stream');
    } catch (err) {
      if (pingFailure) throw pingFailure;
      throw err;
    } finally {
      clearInterval(pinger);
      this.abort.signal.removeEventListener('abort', onAbort);
    }
  }

  /** One Raft entry: the batch's writes and the new mark, if the mark is still the one this node read. */
  private async apply(mark: AppliedMark, entries: readonly WalEntry[]): Promise<AppliedMark> {
    const ops: TxnOp[] = [];
    let last = mark.index;
    for (const entry of entries) {
      if (entry.index <= last) continue;
      last = entry.index;
      for (const op of entry.ops) if (classifyKey(op.key) !== null) ops.push(op);
    }
    if (last === mark.index) return mark;
    const next: AppliedMark = { wal_source: mark.wal_source, index: last, ...(mark.paths_filter !== undefined ? { paths_filter: mark.paths_filter } : {}) };
    const key = appliedKey(this.options.kind);
    const done = await this.options.storage.checkAndSet([{ key, value: encodeJson(mark) }], [...ops, ...this.markOps(next)]);
    if (!done) throw new Error('the applied WAL mark changed under this node (another leader applied meanwhile)');
    await this.tellChanged(ops.map((op) => op.key));
    this.lastRemoteWal = last;
    this.advance(last);
    return next;
  }

  /**
   * merkle-diff: compare leaves; merkle-sync: fetch what differs; page by page of the answer.
   * Then the mark is the first page's last_wal: every page reflects at least that one, and
   * streaming from it replays the rest.
   */
  private async merkleSync(client: ReplicationClient, address: string): Promise<void> {
    this.live.state = 'merkle-diff';
    await this.options.merkle.caughtUp(this.options.applied());
    // One summary serves every page: a leaf that changed here since (a performance secondary's own
    // tokens) is planned from its entries now, and the primary answers whole leaves.
    const summary = this.options.merkle.summary();
    let filter: string | undefined;
    if (this.options.kind === 'performance') {
      // The filter of now, asked right before the diff: its pages are answered with it or a newer one.
      const pong = await this.ping(client, address);
      if (!pong.active) throw new Error('the primary node is no longer active');
      filter = JSON.stringify(pong.pathsFilter ?? null);
    }
    let lastWal: number | undefined;
    const done = { fetch: 0, remove: 0, pages: 0 };
    for await (const page of client.merkleDiff(summary)) {
      if (lastWal === undefined) {
        lastWal = page.lastWal;
        // A Merkle sync costs far more than streaming: operators want to see each one.
        this.options.logger.info(`${this.name}: Merkle sync with the primary`, { last_wal: lastWal });
      }
      const plan = await this.plan(page.leaves);
      this.live.state = 'merkle-sync';
      await this.syncPlan(client, plan);
      // A stop ends the fetches quietly: a sync cut short must not be marked done.
      if (this.stopped) throw new Error('stopped during a Merkle sync');
      done.fetch += plan.fetch.length;
      done.remove += plan.remove.length;
      done.pages++;
      this.live.state = 'merkle-diff';
    }
    if (lastWal === undefined) throw new Error('the primary answered the Merkle diff with no page');
    this.options.logger.info(`${this.name}: Merkle sync with the primary done`, { ...done, last_wal: lastWal });
    const next: AppliedMark = { wal_source: this.options.link.wal_source, index: lastWal, last_wal: lastWal, ...(filter !== undefined ? { paths_filter: filter } : {}) };
    await this.options.storage.txn(this.markOps(next));
    this.lastRemoteWal = lastWal;
    this.advance(lastWal);
  }

  /** Deletes what the plan removes, writes the primary's current values of what it fetches. */
  private async syncPlan(client: ReplicationClient, plan: { fetch: string[]; remove: string[] }): Promise<void> {
    for (let i = 0; i < plan.remove.length; i += SYNC_PAGE_KEYS) {
      await this.options.storage.txn(plan.remove.slice(i, i + SYNC_PAGE_KEYS).map((key): TxnOp => ({ type: 'delete', key })));
    }
    for (let i = 0; i < plan.fetch.length; i += SYNC_PAGE_KEYS) {
      for await (const page of client.merkleSync(plan.fetch.slice(i, i + SYNC_PAGE_KEYS), this.abort.signal)) {
        const ops: TxnOp[] = [];
        for (const kv of page) {
          if (classifyKey(kv.key) === null) continue;
          ops.push(kv.value ? { type: 'put', key: kv.key, value: Buffer.from(kv.value) } : { type: 'delete', key: kv.key });
        }
        if (ops.length > 0) await this.options.storage.txn(ops);
      }
    }
    await this.tellChanged([...plan.remove, ...plan.fetch]);
  }

  /**
   * The mark, and for a performance secondary its copy that the DR stream carries: a promoted DR
   * secondary of this cluster resumes from it, and it moves with the data it describes.
   */
  private markOps(next: AppliedMark): TxnOp[] {
    const value = encodeJson(next);
    const ops: TxnOp[] = [{ type: 'put', key: appliedKey(this.options.kind), value }];
    if (this.options.kind === 'performance') ops.push({ type: 'put', key: PERFORMANCE_LINK_MARK_KEY, value });
    return ops;
  }

  /**
   * A performance secondary keeps keys of its own (tokens, leases, local mounts) in both trees:
   * only the shared tree is compared, and only shared keys are removed.
   */
  private async plan(leaves: MerkleDiffResult['leaves']): Promise<{ fetch: string[]; remove: string[] }> {
    const only = this.options.sharedOnly;
    if (!only) return this.options.merkle.plan(leaves);
    const plan = await this.options.merkle.plan(leaves.filter((l) => l.tree === 'replicated'));
    return { fetch: plan.fetch, remove: plan.remove.filter((key) => only.isShared(key)) };
  }

  private async tellChanged(keys: string[]): Promise<void> {
    const only = this.options.sharedOnly;
    if (!only || keys.length === 0) return;
    await only.changed(keys).catch((err: unknown) => {
      this.options.logger.warn(`${this.name}: the core could not reload what replication changed`, { err: (err as Error).message });
    });
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });
}
