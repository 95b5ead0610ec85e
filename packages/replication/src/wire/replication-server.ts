import type { X509Certificate } from 'node:crypto';
import { status, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { silentLogger, systemClock, type Clock, type Logger } from '@strongroom/base';
import { parseCertificates } from '@strongroom/raft';
import { readPeerIdentity, type PeerIdentity } from '../tls/peer-identity';
import { CredentialRefusedError, ReplicationCallError, toStatus } from './errors';
import {
  encodeOp, opBytes, replicationService,
  type WireActivateRequest, type WireActivateResponse, type WireKeyValues, type WireMerkleDiffRequest, type WireMerkleDiffResponse,
  type WirePingRequest, type WirePingResponse, type WireStreamWalsRequest, type WireWalEntry, type WireWalMessage, type WireMerkleSyncRequest,
  type WireForwardRequest, type WireForwardResponse,
} from './replication-proto';
import type {
  ActivateRequest, ActivateResult, ForwardRequest, ForwardResult, KeyValue, MerkleDiffRequest, MerkleDiffResult, PingRequest, PingResult, StreamWalsRequest, WalEntry, WalStreamItem,
} from './types';

/**
 * What the primary does for each call. Each method learns who called (the secondary id and
 * certificate fingerprint, from a certificate a trusted replication CA signed); checking that
 * the credential is still valid (not revoked, not used twice) is the handler's. A typed error
 * of ./errors thrown here reaches the secondary as the same class; any other error reaches it
 * as an internal error without its message, and is logged here.
 */
export interface ReplicationHandler {
  activate(request: ActivateRequest, caller: PeerIdentity): Promise<ActivateResult>;
  ping(request: PingRequest, caller: PeerIdentity): Promise<PingResult>;
  /**
   * The WAL from request.fromIndex on, then new entries as they commit, until `signal` aborts.
   * Yielding notRetained ends the stream. Batches may be of any size: the wire cuts them.
   */
  streamWals(request: StreamWalsRequest, caller: PeerIdentity, signal: AbortSignal): AsyncIterable<WalStreamItem>;
  /** The primary's last_wal, for the heartbeats of an idle stream. */
  lastWal(): number;
  merkleDiff(request: MerkleDiffRequest, caller: PeerIdentity): Promise<MerkleDiffResult>;
  /** The current value of each key, in any number of pages of any size: the wire cuts them. */
  merkleSync(keys: string[], caller: PeerIdentity, signal: AbortSignal): AsyncIterable<KeyValue[]>;
  /** A performance secondary's forwarded write; refused for a DR secondary. */
  forward(request: ForwardRequest, caller: PeerIdentity): Promise<ForwardResult>;
}

/** Where the service is served: a ClusterNode, or a GrpcTransport in tests. */
export interface ReplicationHost {
  addService(definition: ServiceDefinition, implementation: UntypedServiceImplementation): void;
  trustClientCas(pems: string[]): void;
}

export interface ReplicationServerOptions {
  handler: ReplicationHandler;
  clock?: Clock;
  logger?: Logger;
  /** A heartbeat goes out on a WAL stream after this long without a message. Default 1 s. */
  heartbeatMs?: number;
  /** Batches and key pages are cut at this many bytes (an entry larger than that goes alone). Default 4 MiB. */
  maxPageBytes?: number;
}

const DEFAULT_HEARTBEAT_MS = 1_000;
const DEFAULT_MAX_PAGE_BYTES = 4 * 1024 * 1024;
/** Bounds on what a secondary may ask for in one call. */
const MAX_SYNC_KEYS = 100_000;
const MAX_DIFF_TREES = 16;
const MAX_DIFF_LEAVES = 1 << 20;
const MAX_HASH_BYTES = 64;
/** A forwarded write's path and data, as a client's request body is bounded by the API. */
const MAX_FORWARD_PATH = 4096;
const MAX_FORWARD_DATA_BYTES = 32 * 1024 * 1024;
/** The framing of an entry, beyond its operations. */
const ENTRY_BYTES = 64;

/**
 * The primary's side of proto/replication.proto, served on the cluster address through a
 * ReplicationHost. Only callers whose certificate a currently trusted replication CA signed
 * get through (trustCas): TLS checks the chain when a connection opens, and each call checks
 * it again, so that a CA no longer trusted stops its open connections too.
 */
export class ReplicationServer {
  private readonly handler: ReplicationHandler;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly heartbeatMs: number;
  private readonly maxPageBytes: number;
  private trusted: { pems: string[]; certs: X509Certificate[] } = { pems: [], certs: [] };
  private host: ReplicationHost | null = null;

  constructor(options: ReplicationServerOptions) {
    this.handler = options.handler;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
    this.maxPageBytes = options.maxPageBytes ?? DEFAULT_MAX_PAGE_BYTES;
  }

  /** Serves the Replication service on `host`, once. */
  register(host: ReplicationHost): void {
    if (this.host !== null) throw new Error('a ReplicationServer is registered once');
    this.host = host;
    host.addService(replicationService().definition, this.implementation());
    host.trustClientCas(this.trusted.pems);
  }

  /** Replaces the replication CAs (PEM) whose secondaries may call: empty when this cluster is no primary. */
  trustCas(pems: string[]): void {
    const certs = pems.flatMap((pem) => parseCertificates(pem));
    this.host?.trustClientCas(pems);
    this.trusted = { pems: [...pems], certs };
  }

  private implementation(): UntypedServiceImplementation {
    return {
      Activate: (call: ServerUnaryCall<WireActivateRequest, WireActivateResponse>, callback: sendUnaryData<WireActivateResponse>) =>
        this.unary(call, callback, async (caller) => {
          const { nodeId, apiAddress, clusterAddress } = call.request;
          const result = await this.handler.activate({ nodeId, apiAddress, clusterAddress }, caller);
          return { clusterId: result.clusterId, clusterAddresses: result.clusterAddresses, lastWal: result.lastWal };
        }),
      Ping: (call: ServerUnaryCall<WirePingRequest, WirePingResponse>, callback: sendUnaryData<WirePingResponse>) =>
        this.unary(call, callback, async (caller) => {
          const { nodeId, apiAddress, clusterAddress, timeMs, lastRttMs, lastRemoteWal } = call.request;
          const result = await this.handler.ping({
            nodeId, apiAddress, clusterAddress, timeMs: Number(timeMs), lastRttMs: Number(lastRttMs), lastRemoteWal: Number(lastRemoteWal ?? 0),
          }, caller);
          return {
            clusterId: result.clusterId, active: result.active, activeClusterAddress: result.activeClusterAddress ?? '', timeMs: this.clock.now(),
            lastWal: result.lastWal, walSource: result.walSource, pathsFilter: result.pathsFilter ? JSON.stringify(result.pathsFilter) : '',
          };
        }),
      StreamWals: (call: ServerWritableStream<WireStreamWalsRequest, WireWalMessage>) => void this.serveWals(call),
      MerkleDiff: (call: ServerUnaryCall<WireMerkleDiffRequest, WireMerkleDiffResponse>, callback: sendUnaryData<WireMerkleDiffResponse>) =>
        this.unary(call, callback, async (caller) => {
          const { lastWal, leaves, next } = await this.handler.merkleDiff(checkDiffRequest(call.request), caller);
          return { lastWal, leaves, nextPage: next ?? 0 };
        }),
      MerkleSync: (call: ServerWritableStream<WireMerkleSyncRequest, WireKeyValues>) => void this.serveSync(call),
      Forward: (call: ServerUnaryCall<WireForwardRequest, WireForwardResponse>, callback: sendUnaryData<WireForwardResponse>) =>
        this.unary(call, callback, async (caller) => {
          const result = await this.handler.forward(checkForwardRequest(call.request), caller);
          return { status: result.status, bodyJson: result.body === undefined ? '' : JSON.stringify(result.body), lastWal: result.lastWal };
        }),
    };
  }

  /** The caller, or a CredentialRefusedError when no trusted replication CA signed its certificate. */
  private identify(call: ServerUnaryCall<unknown, unknown> | ServerWritableStream<unknown, unknown>): PeerIdentity {
    const caller = readPeerIdentity(call, this.trusted.certs);
    if (caller === null) throw new CredentialRefusedError('unknown');
    return caller;
  }

  private unary<Res>(call: ServerUnaryCall<unknown, Res>, callback: sendUnaryData<Res>, run: (caller: PeerIdentity) => Promise<Res>): void {
    let caller: PeerIdentity;
    try {
      caller = this.identify(call);
    } catch (err) {
      callback(this.failure(call, err));
      return;
    }
    run(caller).then(
      (answer) => callback(null, answer),
      (err: unknown) => callback(this.failure(call, err, caller)),
    );
  }

  private failure(call: { getPath(): string }, err: unknown, caller?: PeerIdentity): ReturnType<typeof toStatus> {
    const answer = toStatus(err);
    if (answer.code === status.INTERNAL) {
      this.logger.error('a replication call failed', { method: call.getPath(), secondary: caller?.secondaryId, error: err instanceof Error ? err.message : String(err) });
    } else {
      this.logger.debug('a replication call was refused', { method: call.getPath(), secondary: caller?.secondaryId, reason: answer.details });
    }
    return answer;
  }

  private async serveWals(call: ServerWritableStream<WireStreamWalsRequest, WireWalMessage>): Promise<void> {
    await this.serveStream(call, async (caller, signal, write) => {
      const { fromIndex, primaryClusterId, walSource, nodeId, apiAddress, clusterAddress } = call.request;
      const items = this.handler.streamWals({ fromIndex, primaryClusterId, walSource, nodeId, apiAddress, clusterAddress }, caller, signal)[Symbol.asyncIterator]();
      // A next() still pending when the secondary goes away may fail later, with no one waiting.
      const pull = () => {
        const next = items.next();
        next.catch(() => {});
        return next;
      };
      try {
        let next = pull();
        while (!signal.aborted) {
          const result = await this.orIdle(next);
          if (result === 'idle') {
            await write({ heartbeat: { timeMs: this.clock.now(), lastWal: this.handler.lastWal() } });
            continue;
          }
          if (result.done) return;
          const item = result.value;
          if (item.kind === 'notRetained') {
            await write({ notRetained: { lastWal: item.lastWal } });
            return;
          }
          const through = item.through ?? 0;
          // A batch of no entries still tells how far the stream went (all its changes left out).
          if (item.entries.length === 0 && through > 0) await write({ batch: { entries: [], lastWal: item.lastWal, through } });
          for (const entries of this.pages(item.entries, entryBytes)) {
            const last = entries[entries.length - 1] as WalEntry;
            // Only the last page of a batch covers everything up to `through`.
            const covered = last === item.entries[item.entries.length - 1] ? through : 0;
            await write({ batch: { entries: entries.map(encodeEntry), lastWal: item.lastWal, through: covered } });
          }
          next = pull();
        }
      } finally {
        // Not awaited: a generator waiting for new entries finishes once it sees `signal`.
        items.return?.().catch(() => {});
      }
    });
  }

  private async serveSync(call: ServerWritableStream<WireMerkleSyncRequest, WireKeyValues>): Promise<void> {
    await this.serveStream(call, async (caller, signal, write) => {
      const keys = checkSyncKeys(call.request.keys);
      for await (const page of this.handler.merkleSync(keys, caller, signal)) {
        for (const entries of this.pages(page, (kv) => Buffer.byteLength(kv.key) + (kv.value?.length ?? 0) + ENTRY_BYTES)) {
          await write({ entries: entries.map((kv) => (kv.value === null ? { key: kv.key } : { key: kv.key, value: kv.value })) });
        }
        if (signal.aborted) return;
      }
    });
  }

  /**
   * Runs a server-streaming call: identifies the caller, gives `run` a signal that aborts when
   * the secondary goes away and a write that waits while the secondary is not reading, then
   * ends the call with OK or with the status of what `run` threw.
   */
  private async serveStream<Req, Res>(call: ServerWritableStream<Req, Res>, run: (caller: PeerIdentity, signal: AbortSignal, write: (message: Res) => Promise<void>) => Promise<void>): Promise<void> {
    const gone = new AbortController();
    const abort = () => gone.abort();
    call.on('cancelled', abort);
    call.on('error', abort);
    call.on('close', abort);
    let caller: PeerIdentity | undefined;
    try {
      caller = this.identify(call);
      await run(caller, gone.signal, (message) => write(call, message, gone.signal));
      if (!gone.signal.aborted) call.end();
    } catch (err) {
      if (!gone.signal.aborted) call.emit('error', this.failure(call, err, caller));
    } finally {
      gone.abort();
    }
  }

  /** The next item, or 'idle' after heartbeatMs without one; `next` stays pending in that case. */
  private orIdle<T>(next: Promise<T>): Promise<T | 'idle'> {
    let timer: { cancel(): void } | undefined;
    const idle = new Promise<'idle'>((resolve) => {
      timer = this.clock.setTimer(this.heartbeatMs, () => resolve('idle'));
    });
    return Promise.race([next, idle]).finally(() => timer?.cancel());
  }

  /** `items` cut into runs of at most maxPageBytes; an item larger than that is a run of its own. */
  private *pages<T>(items: T[], size: (item: T) => number): Generator<T[]> {
    let page: T[] = [];
    let bytes = 0;
    for (const item of items) {
      const n = size(item);
      if (page.length > 0 && bytes + n > this.maxPageBytes) {
        yield page;
        page = [];
        bytes = 0;
      }
      page.push(item);
      bytes += n;
    }
    if (page.length > 0) yield page;
  }
}

function entryBytes(entry: WalEntry): number {
  return entry.ops.reduce((sum, op) => sum + opBytes(op), ENTRY_BYTES + entry.rootBefore.length);
}

function encodeEntry(entry: WalEntry): WireWalEntry {
  return { index: entry.index, rootBefore: entry.rootBefore, ops: entry.ops.map(encodeOp) };
}

/** Writes one message, waiting for 'drain' while the secondary reads slower than we send. */
function write<Res>(call: ServerWritableStream<unknown, Res>, message: Res, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  if (call.write(message)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    call.on('drain', done);
    signal.addEventListener('abort', done);
  });
}

function invalid(message: string): ReplicationCallError {
  return new ReplicationCallError(status.INVALID_ARGUMENT, message);
}

function checkSyncKeys(keys: string[]): string[] {
  if (keys.length > MAX_SYNC_KEYS) throw invalid(`keys: at most ${MAX_SYNC_KEYS} keys per call`);
  if (keys.some((k) => k === '')) throw invalid('keys: a key must not be empty');
  return keys;
}

function checkForwardRequest(request: WireForwardRequest): ForwardRequest {
  if (!['create', 'update', 'delete', 'patch'].includes(request.operation)) throw invalid('operation: a forwarded write is create, update, delete or patch');
  if (request.path === '' || request.path.length > MAX_FORWARD_PATH) throw invalid(`path: 1 to ${MAX_FORWARD_PATH} characters`);
  if (request.dataJson.length > MAX_FORWARD_DATA_BYTES) throw invalid('data_json: too large');
  let data: unknown = {};
  if (request.dataJson !== '') {
    try {
      data = JSON.parse(request.dataJson);
    } catch {
      throw invalid('data_json: not JSON');
    }
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw invalid('data_json: not a JSON object');
  return {
    operation: request.operation, path: request.path, data: data as Record<string, unknown>,
    ...(request.namespace !== '' ? { namespace: request.namespace } : {}), ...(request.remoteAddress !== '' ? { remoteAddress: request.remoteAddress } : {}),
  };
}

function checkDiffRequest(request: WireMerkleDiffRequest): MerkleDiffRequest {
  if (request.trees.length > MAX_DIFF_TREES) throw invalid(`trees: at most ${MAX_DIFF_TREES} trees per call`);
  let leaves = 0;
  for (const t of request.trees) {
    if (t.tree === '') throw invalid('trees: a tree must have a name');
    leaves += t.leafHashes.length;
    if (t.leafHashes.some((h) => h.length > MAX_HASH_BYTES)) throw invalid(`trees: a leaf hash is at most ${MAX_HASH_BYTES} bytes`);
  }
  if (leaves > MAX_DIFF_LEAVES) throw invalid(`trees: at most ${MAX_DIFF_LEAVES} leaf hashes per call`);
  const pageFrom = Number(request.pageFrom ?? 0);
  const pageMaxBytes = Number(request.pageMaxBytes ?? 0);
  // Positions run over the leaves of the trees asked about, so a page can start no further.
  if (pageFrom > leaves) throw invalid(`page_from: at most the number of leaf hashes sent (${leaves})`);
  const trees = request.trees.map((t) => ({ tree: t.tree, leafHashes: t.leafHashes }));
  return pageMaxBytes > 0 ? { trees, page: { from: pageFrom, maxBytes: pageMaxBytes } } : { trees };
}
