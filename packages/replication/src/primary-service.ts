import type { CommittedChange, TxnOp } from '@strongroom/base';
import type { ClusterNode } from '@strongroom/cluster';
import type { Clock, Logger } from '@strongroom/core';
import { ChangesNotRetainedError } from '@strongroom/raft';
import type { PrimaryState } from './role-state';
import { classifyKey } from './key-space';
import type { PeerIdentity } from './tls/peer-identity';
import { CredentialRefusedError, NotActiveError, NotPrimaryError, WrongClusterError } from './wire/errors';
import type { ReplicationHandler } from './wire/replication-server';
import type {
  ActivateRequest, ActivateResult, ForwardRequest, ForwardResult, KeyValue, MerkleDiffRequest, MerkleDiffResult, PingRequest, PingResult, StreamWalsRequest, WalEntry, WalStreamItem,
} from './wire/types';
import type { WalTracker } from './wal-tracker';

/** What the primary's service needs of its node's Merkle index. */
export interface PrimaryMerkle {
  caughtUp(index: number): Promise<void>;
  /** One page of the leaves whose hash differs from the secondary's, with this node's entries in each; `allows`: the secondary may hold only those keys (see answerDiff). */
  diff(theirs: MerkleDiffRequest, allows?: (key: string) => boolean): Promise<{ leaves: MerkleDiffResult['leaves']; next: number | null }>;
  rootBefore(index: number): Buffer | undefined;
}
export interface PrimaryServiceOptions {
  cluster: ClusterNode;
  state: () => PrimaryState | null;
  merkle: PrimaryMerkle;
  wal: WalTracker;
  clock: Clock;
  logger: Logger;
  /** Spends a secondary's activation (its first call with the certificate issued with the token). */
  recordActivation(id: string, fingerprint: string, where: { api_address: string; cluster_address: string; node_id: string }): Promise<void>;
  /**
   * Performance only: the keys a secondary may receive (the shared ones its paths filter
   * allows), asked once per change. Without it (DR), every replicated key.
   */
  selector?: (secondaryId: string) => (key: string) => boolean;
  /** Performance only: runs a forwarded write on this node's core; without it, Forward is refused. */
  forward?: (request: ForwardRequest) => Promise<{ status: number; body?: unknown }>;
}

/** A secondary not heard from for this long is shown disconnected. */
const CONNECTED_WITHIN_MS = 10_000;
/** Entries per batch handed to the wire (which cuts by bytes). */
const BATCH_ENTRIES = 512;

interface SecondaryLink {
  lastHeartbeat: number;
  /** The secondary's applied WAL index, as its last ping said. */
  remoteWal: number;
  durationMs: number;
  skewMs: number;
  streams: number;
  nodeId: string;
  apiAddress: string;
  clusterAddress: string;
  stop: Set<() => void>;
  /** Ends each stream with not_retained: the secondary syncs by Merkle tree (its filter changed). */
  resync: Set<() => void>;
  /**
   * The filter changed since the secondary's last Merkle sync began: until another begins, its
   * streams start with not_retained. A sync running at the change may have pages answered with
   * the filter before, and a stream ended at the change may have had no one left to tell.
   */
  resyncDue: boolean;
}

/**
 * The primary's half of one kind of replication, on every node of the primary (a standby points the
 * secondary at its active node): activation, pings, the WAL stream from the commit feed's
 * window, and the two Merkle calls.
 */
export class PrimaryService implements ReplicationHandler {
  private readonly links = new Map<string, SecondaryLink>();

  constructor(private readonly options: PrimaryServiceOptions) {}

  private requireCaller(caller: PeerIdentity, activated = true): PrimaryState {
    const state = this.options.state();
    if (!state) throw new NotPrimaryError();
    const record = state.secondaries[caller.secondaryId];
    if (!record || record.fingerprint !== caller.fingerprint) throw new CredentialRefusedError('revoked');
    if (activated && !record.activated) throw new CredentialRefusedError('unknown');
    return state;
  }

  private requireActive(): void {
    if (!this.options.cluster.leads) throw new NotActiveError(this.activeClusterAddress());
  }

  private activeClusterAddress(): string | null {
    const leader = this.options.cluster.leaderInfo();
    return leader && !leader.self ? leader.clusterAddress.replace(/^https?:\/\//, '') : null;
  }

  private link(id: string): SecondaryLink {
    let link = this.links.get(id);
    if (!link) {
      link = { lastHeartbeat: 0, remoteWal: 0, durationMs: 0, skewMs: 0, streams: 0, nodeId: '', apiAddress: '', clusterAddress: '', stop: new Set(), resync: new Set(), resyncDue: false };
      this.links.set(id, link);
    }
    return link;
  }

  lastWal(): number {
    return this.options.wal.lastWal;
  }

  async activate(request: ActivateRequest, caller: PeerIdentity): Promise<ActivateResult> {
    const before = this.requireCaller(caller, false);
    this.requireActive();
    const record = before.secondaries[caller.secondaryId];
    if (record?.activated) throw new CredentialRefusedError('used');
    if (record && record.expires_at < this.options.clock.now()) throw new CredentialRefusedError('revoked');
    await this.options.recordActivation(caller.secondaryId, caller.fingerprint, {
      api_address: request.apiAddress, cluster_address: request.clusterAddress, node_id: request.nodeId,
    }).catch(() => {
      throw new CredentialRefusedError('used');
    });
    const state = this.requireCaller(caller);
    return { clusterId: state.cluster_id, clusterAddresses: [], lastWal: this.options.wal.lastWal };
  }

  async ping(request: PingRequest, caller: PeerIdentity): Promise<PingResult> {
    const state = this.requireCaller(caller, false);
    const now = this.options.clock.now();
    const link = this.link(caller.secondaryId);
    link.lastHeartbeat = now;
    link.durationMs = request.lastRttMs;
    if (request.lastRemoteWal !== undefined) link.remoteWal = request.lastRemoteWal;
    if (request.timeMs > 0) link.skewMs = Math.round(request.timeMs - now);
    if (request.nodeId) link.nodeId = request.nodeId;
    if (request.apiAddress) link.apiAddress = request.apiAddress;
    if (request.clusterAddress) link.clusterAddress = request.clusterAddress;
    const active = this.options.cluster.leads;
    return {
      clusterId: state.cluster_id, walSource: state.wal_source, active, activeClusterAddress: active ? null : this.activeClusterAddress(), lastWal: this.options.wal.lastWal,
      pathsFilter: state.paths_filters?.[caller.secondaryId] ?? null,
    };
  }

  /** The WAL from `fromIndex` on, live after the window; ends on not_retained, revocation or loss of the lead. */
  async *streamWals(request: StreamWalsRequest, caller: PeerIdentity, signal: AbortSignal): AsyncGenerator<WalStreamItem> {
    const state = this.requireCaller(caller);
    this.requireActive();
    if (request.primaryClusterId !== '' && request.primaryClusterId !== state.cluster_id) throw new WrongClusterError(state.cluster_id);
    if (request.walSource !== state.wal_source || request.fromIndex < 1) {
      yield { kind: 'notRetained', lastWal: this.options.wal.lastWal };
      return;
    }
    const link = this.link(caller.secondaryId);
    if (link.resyncDue) {
      yield { kind: 'notRetained', lastWal: this.options.wal.lastWal };
      return;
    }
    link.streams++;
    const stop = new AbortController();
    const end = () => stop.abort();
    let resync = false;
    const restart = () => {
      resync = true;
      stop.abort();
    };
    link.stop.add(end);
    link.resync.add(restart);
    const allows = this.allowsFor(caller.secondaryId);
    signal.addEventListener('abort', end);
    // Revocation and loss of the lead end the stream, checked between batches and on a timer.
    const watch = setInterval(() => {
      const current = this.options.state();
      if (!current || !current.secondaries[caller.secondaryId] || !this.options.cluster.leads) stop.abort();
    }, 500);
    try {
      for await (const changes of this.options.cluster.feed.follow(request.fromIndex, stop.signal)) {
        let entries: WalEntry[] = [];
        let through = 0;
        let leftOut = false;
        for (const change of changes) {
          if ('restored' in change) {
            yield { kind: 'notRetained', lastWal: this.options.wal.lastWal };
            return;
          }
          through = change.index;
          const entry = await this.entryOf(change, allows);
          if (!entry) {
            leftOut ||= change.ops.some((op) => classifyKey(op.key) !== null);
            continue;
          }
          entries.push(entry);
          if (entries.length >= BATCH_ENTRIES) {
            yield { kind: 'batch', entries, lastWal: this.options.wal.lastWal, ...(this.options.selector ? { through } : {}) };
            entries = [];
            leftOut = false;
          }
        }
        // A filtered stream says how far it went even when it left out every change (a forwarded write waits for that).
        if (entries.length > 0 || (leftOut && this.options.selector)) {
          yield { kind: 'batch', entries, lastWal: this.options.wal.lastWal, ...(this.options.selector ? { through } : {}) };
        }
        if (stop.signal.aborted) break;
      }
      if (resync) {
        yield { kind: 'notRetained', lastWal: this.options.wal.lastWal };
        return;
      }
      if (!signal.aborted) {
        const current = this.options.state();
        if (!current || !current.secondaries[caller.secondaryId]) throw new CredentialRefusedError('revoked');
        if (!this.options.cluster.leads) throw new NotActiveError(this.activeClusterAddress());
      }
    } catch (err) {
      if (err instanceof ChangesNotRetainedError) {
        yield { kind: 'notRetained', lastWal: this.options.wal.lastWal };
        return;
      }
      throw err;
    } finally {
      clearInterval(watch);
      link.streams--;
      link.stop.delete(end);
      link.resync.delete(restart);
      signal.removeEventListener('abort', end);
    }
  }

  /** What this secondary may receive: every replicated key for DR, a narrower set for performance. */
  private allowsFor(secondaryId: string): (key: string) => boolean {
    const narrower = this.options.selector?.(secondaryId);
    return narrower ? (key) => classifyKey(key) !== null && narrower(key) : (key) => classifyKey(key) !== null;
  }

  private async entryOf(change: CommittedChange, allows: (key: string) => boolean): Promise<WalEntry | null> {
    if ('restored' in change) return null;
    const ops = change.ops.filter((op) => allows(op.key)) as TxnOp[];
    if (ops.length === 0) return null;
    // The root before this entry is known once the index has applied the one before it.
    await this.options.merkle.caughtUp(change.index - 1).catch(() => undefined);
    return { index: change.index, ops, rootBefore: this.options.merkle.rootBefore(change.index) ?? Buffer.alloc(0) };
  }

  async merkleDiff(request: MerkleDiffRequest, caller: PeerIdentity): Promise<MerkleDiffResult> {
    this.requireCaller(caller);
    this.requireActive();
    // A sync begins: every page of it is answered with the filter of its time, and a change after this marks the link again.
    if (!request.page || request.page.from === 0) this.link(caller.secondaryId).resyncDue = false;
    // The entries reflect at least what last_wal says: streaming from it replays the rest.
    const lastWal = this.options.wal.lastWal;
    await this.options.merkle.caughtUp(this.options.cluster.feed.window().last ?? 0);
    // A filtered secondary is told only what it may hold.
    const allows = this.options.selector ? this.allowsFor(caller.secondaryId) : undefined;
    const { leaves, next } = await this.options.merkle.diff(request, allows);
    return { lastWal, leaves, ...(next !== null ? { next } : {}) };
  }

  async *merkleSync(keys: string[], caller: PeerIdentity): AsyncGenerator<KeyValue[]> {
    this.requireCaller(caller);
    this.requireActive();
    const allows = this.allowsFor(caller.secondaryId);
    let page: KeyValue[] = [];
    for (const key of keys) {
      if (!allows(key)) continue;
      page.push({ key, value: await this.options.cluster.storage.get(key) });
      if (page.length >= 256) {
        yield page;
        page = [];
      }
    }
    if (page.length > 0) yield page;
  }

  /** Performance: runs a secondary's forwarded write here, and answers with the last_wal that includes it. */
  async forward(request: ForwardRequest, caller: PeerIdentity): Promise<ForwardResult> {
    this.requireCaller(caller);
    this.requireActive();
    const run = this.options.forward;
    if (!run) throw new CredentialRefusedError('unknown');
    const reply = await run(request);
    return { status: reply.status, ...(reply.body !== undefined ? { body: reply.body } : {}), lastWal: this.options.wal.lastWal };
  }

  /**
   * Ends the secondary's streams with not_retained, so that it syncs by Merkle tree (what it may
   * hold changed), and starts each later one so until that sync begins. Only the active node
   * streams, so a standby marks nothing: one that takes the lead later must not make its
   * secondaries sync again.
   */
  resync(id: string): void {
    if (this.options.cluster.leads) this.link(id).resyncDue = true;
    for (const restart of this.links.get(id)?.resync ?? []) restart();
  }

  disconnect(id: string): void {
    const link = this.links.get(id);
    if (!link) return;
    for (const stop of link.stop) stop();
    this.links.delete(id);
  }

  /** `secondaries[]` of the primary's status. */
  secondaries(state: PrimaryState): Array<Record<string, unknown>> {
    const now = this.options.clock.now();
    return Object.values(state.secondaries).filter((r) => r.activated).map((r) => {
      const link = this.links.get(r.id);
      const connected = !!link && now - link.lastHeartbeat < CONNECTED_WITHIN_MS;
      return {
        node_id: r.id, api_address: link?.apiAddress || r.api_address || '', cluster_address: link?.clusterAddress || r.cluster_address || '',
        connection_status: connected ? 'connected' : 'disconnected',
        last_heartbeat: link?.lastHeartbeat ? new Date(link.lastHeartbeat).toISOString() : '',
        last_heartbeat_duration_ms: link?.durationMs ?? 0, clock_skew_ms: link?.skewMs ?? 0,
        last_remote_wal: link?.remoteWal ?? 0,
      };
    });
  }
}
