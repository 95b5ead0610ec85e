import { Client, Metadata, connectivityState, credentials, status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { systemClock, type Clock, type TimerHandle, type TxnOp } from '@strongroom/base';
import { CLUSTER_SERVER_NAME } from '@strongroom/raft';
import { ReplicationCallError, ReplicationUnavailableError, fromServiceError, type ReplicationWireError } from './errors';
import { decodeOp, replicationService, type WireKeyValues, type WireWalMessage, type WireWalOp } from './replication-proto';
import type { ActivateRequest, ActivateResult, ForwardRequest, ForwardResult, KeyValue, MerkleDiffRequest, MerkleDiffResult, PingReply, PingRequest, StreamWalsRequest, WalEntry, WalStreamMessage } from './types';

export interface ReplicationClientTls {
  /** The primary's cluster CA (PEM): its cluster certificate must chain to it. */
  ca: string;
  /** The secondary's client certificate and key (PEM), from its activation material. */
  cert: string;
  key: string;
}

export interface ReplicationClientOptions {
  clock?: Clock;
  /** Connecting, and Activate and Ping, fail after this long. Default 5 s. */
  timeoutMs?: number;
  /** A MerkleDiff page fails after this long: the primary compares whole trees. Default 2 min. */
  diffTimeoutMs?: number;
  /** The largest MerkleDiff page asked for (bytes, about). Default 4 MiB, kept under maxMessageBytes. */
  diffPageBytes?: number;
  /** A WAL stream with no message (heartbeats included) for this long fails. Default 10 s. */
  silenceMs?: number;
  /** Largest message accepted. Default 64 MiB, as the cluster listener's. */
  maxMessageBytes?: number;
}

const DEFAULTS = { timeoutMs: 5_000, diffTimeoutMs: 120_000, diffPageBytes: 4 * 1024 * 1024, silenceMs: 10_000, maxMessageBytes: 64 * 1024 * 1024 };
/**
 * HTTP/2's default window (64 KiB) lets that much of the WAL stream be in flight per round trip:
 * on a link of 160 ms that is a few hundred KB/s, less than one busy primary writes. A secondary
 * far away needs a window of about the bytes the primary writes in one round trip.
 */
const FLOW_CONTROL_WINDOW_BYTES = 16 * 1024 * 1024;
/** As Raft's: a primary that died without closing its socket is noticed in about 10 s. */
const KEEPALIVE = { 'grpc.keepalive_time_ms': 5_000, 'grpc.keepalive_timeout_ms': 5_000 } as const;

/**
 * A secondary's connection to one address of a primary (its cluster address), over mutual
 * TLS: the primary's certificate is checked against its cluster CA under CLUSTER_SERVER_NAME,
 * and the secondary presents its own. Every failure is a ReplicationWireError; an address
 * that does not answer fails within timeoutMs with ReplicationUnavailableError.
 */
export class ReplicationClient {
  private readonly client: Client;
  private readonly clock: Clock;
  private readonly options: typeof DEFAULTS;

  constructor(readonly address: string, tls: ReplicationClientTls, options: ReplicationClientOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.options = {
      timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
      diffTimeoutMs: options.diffTimeoutMs ?? DEFAULTS.diffTimeoutMs,
      diffPageBytes: options.diffPageBytes ?? DEFAULTS.diffPageBytes,
      silenceMs: options.silenceMs ?? DEFAULTS.silenceMs,
      maxMessageBytes: options.maxMessageBytes ?? DEFAULTS.maxMessageBytes,
    };
    this.client = new Client(address, credentials.createSsl(Buffer.from(tls.ca), Buffer.from(tls.key), Buffer.from(tls.cert)), {
      'grpc.ssl_target_name_override': CLUSTER_SERVER_NAME,
      'grpc.default_authority': CLUSTER_SERVER_NAME,
      ...KEEPALIVE,
      'grpc.max_receive_message_length': this.options.maxMessageBytes,
      'grpc.max_send_message_length': this.options.maxMessageBytes,
      'grpc.enable_retries': 0,
      'grpc-node.flow_control_window': FLOW_CONTROL_WINDOW_BYTES,
      // Its own connection, so that close() closes it and a new client really dials anew.
      'grpc.use_local_subchannel_pool': 1,
    });
  }

  async activate(request: ActivateRequest): Promise<ActivateResult> {
    const answer = await this.unary(replicationService().activate, request, this.options.timeoutMs);
    return { clusterId: answer.clusterId, clusterAddresses: answer.clusterAddresses, lastWal: answer.lastWal };
  }

  async ping(request?: PingRequest): Promise<PingReply> {
    const sent = request ?? { nodeId: '', apiAddress: '', clusterAddress: '', timeMs: 0, lastRttMs: 0 };
    const answer = await this.unary(replicationService().ping, { ...sent, lastRemoteWal: sent.lastRemoteWal ?? 0 }, this.options.timeoutMs);
    return {
      clusterId: answer.clusterId, active: answer.active, activeClusterAddress: answer.activeClusterAddress || null, timeMs: answer.timeMs,
      lastWal: answer.lastWal, walSource: answer.walSource, pathsFilter: parseFilter(answer.pathsFilter),
    };
  }

  /** A forwarded write, answered once the primary applied it (or refused it: its answer as it is). */
  async forward(request: ForwardRequest, timeoutMs: number): Promise<ForwardResult> {
    const answer = await this.unary(replicationService().forward, {
      operation: request.operation, path: request.path, dataJson: JSON.stringify(request.data), namespace: request.namespace ?? '',
      remoteAddress: request.remoteAddress ?? '',
    }, timeoutMs);
    let body: unknown;
    if (answer.bodyJson !== '') {
      try {
        body = JSON.parse(answer.bodyJson);
      } catch {
        throw malformed('forwarded answer');
      }
    }
    return { status: answer.status, ...(body !== undefined ? { body } : {}), lastWal: answer.lastWal };
  }

  /**
   * The primary's answer to `request` (the secondary's leaf hashes), one page per call: a
   * primary holding many keys differs from a new secondary in every leaf, more than one
   * message may carry. Each page reflects at least the lastWal it carries, and the first
   * page's is the lowest. A primary that does not page answers in one.
   */
  async *merkleDiff(request: Omit<MerkleDiffRequest, 'page'>): AsyncGenerator<MerkleDiffResult> {
    // Room under the message cap for what the primary's estimate of a page leaves out.
    const maxBytes = Math.min(this.options.diffPageBytes, Math.floor(this.options.maxMessageBytes / 2));
    let from = 0;
    for (;;) {
      const answer = await this.unary(replicationService().merkleDiff, { trees: request.trees, pageFrom: from, pageMaxBytes: maxBytes }, this.options.diffTimeoutMs);
      const leaves = answer.leaves.map((l) => ({ tree: l.tree, leaf: l.leaf, entries: l.entries.map((e) => ({ key: e.key, hash: e.hash })) }));
      const next = Number(answer.nextPage ?? 0);
      if (next !== 0 && next <= from) throw malformed('Merkle diff page (it does not move forward)');
      yield { lastWal: answer.lastWal, leaves, ...(next !== 0 ? { next } : {}) };
      if (next === 0) return;
      from = next;
    }
  }

  /**
   * The primary's WAL from request.fromIndex on, as it commits, with heartbeats, until the
   * primary ends it (after notRetained), `signal` aborts (the iteration just ends), or it
   * fails (a ReplicationWireError; ReplicationUnavailableError when the primary went quiet
   * for silenceMs or its connection died). Breaking out of the loop cancels the call.
   */
  async *streamWals(request: StreamWalsRequest, signal?: AbortSignal): AsyncGenerator<WalStreamMessage> {
    await this.ready(signal);
    const method = replicationService().streamWals;
    const call = this.client.makeServerStreamRequest(method.path, method.requestSerialize, method.responseDeserialize, request, new Metadata(), {});
    yield* this.read(call, decodeWalMessage, signal, this.options.silenceMs);
  }

  /** The primary's current value of each key, in pages; see streamWals for the ending. */
  async *merkleSync(keys: string[], signal?: AbortSignal): AsyncGenerator<KeyValue[]> {
    await this.ready(signal);
    const method = replicationService().merkleSync;
    const call = this.client.makeServerStreamRequest(method.path, method.requestSerialize, method.responseDeserialize, { keys }, new Metadata(), {});
    yield* this.read(call, decodeKeyValues, signal, null);
  }

  close(): void {
    this.client.close();
  }

  private async *read<W, T>(call: ClientReadableStream<W>, decode: (wire: W) => T, signal: AbortSignal | undefined, silenceMs: number | null): AsyncGenerator<T> {
    let silent = false;
    let timer: TimerHandle | null = null;
    // Armed only while waiting for the primary, not while the reader works on a message.
    const arm = () => {
      if (silenceMs !== null) {
        timer = this.clock.setTimer(silenceMs, () => {
          silent = true;
          call.cancel();
        });
      }
    };
    const disarm = () => {
      timer?.cancel();
      timer = null;
    };
    const abort = () => call.cancel();
    signal?.addEventListener('abort', abort);
    // The status of a call cancelled after the loop let go of the stream still arrives as an
    // 'error' event; with no listener left, Node would throw it.
    call.on('error', () => {});
    try {
      arm();
      for await (const wire of call as AsyncIterable<W>) {
        disarm();
        yield decode(wire);
        arm();
      }
    } catch (err) {
      if (signal?.aborted) return;
      if (silent) throw new ReplicationUnavailableError(this.address, `no message for ${silenceMs} ms`);
      throw this.typed(err);
    } finally {
      disarm();
      signal?.removeEventListener('abort', abort);
      call.cancel();
    }
  }

  private async unary<Req, Res>(method: { path: string; requestSerialize: (r: Req) => Buffer; responseDeserialize: (b: Buffer) => Res }, request: Req, timeoutMs: number): Promise<Res> {
    await this.ready();
    return new Promise<Res>((resolve, reject) => {
      this.client.makeUnaryRequest<Req, Res>(method.path, method.requestSerialize, method.responseDeserialize, request, new Metadata(), { deadline: this.clock.now() + timeoutMs }, (err, answer) =>
        err ? reject(this.typed(err)) : resolve(answer as Res),
      );
    });
  }

  /**
   * Waits until the connection is up, or fails with ReplicationUnavailableError after
   * timeoutMs: a call made while connecting to an address that swallows packets would wait
   * for the connection attempt (20 s or more). A connection that failed outright (refused,
   * TLS) is left to the call, which fails at once with gRPC's reason.
   */
  private async ready(signal?: AbortSignal): Promise<void> {
    const channel = this.client.getChannel();
    const deadline = this.clock.now() + this.options.timeoutMs;
    for (;;) {
      if (signal?.aborted) return;
      const state = channel.getConnectivityState(true);
      if (state === connectivityState.READY || state === connectivityState.TRANSIENT_FAILURE) return;
      if (state === connectivityState.SHUTDOWN) throw new ReplicationUnavailableError(this.address, 'the client is closed');
      if (this.clock.now() >= deadline) throw new ReplicationUnavailableError(this.address, `could not connect within ${this.options.timeoutMs} ms`);
      await new Promise<void>((resolve) => channel.watchConnectivityState(state, new Date(deadline), () => resolve()));
    }
  }

  private typed(err: unknown): ReplicationWireError {
    if (isServiceError(err)) return fromServiceError(err, this.address);
    if (err instanceof ReplicationCallError) return err;
    return new ReplicationCallError(status.INTERNAL, `the call to ${this.address} failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as Partial<ServiceError>).code === 'number' && 'metadata' in err;
}

function malformed(what: string): ReplicationCallError {
  return new ReplicationCallError(status.INTERNAL, `the primary sent a malformed ${what}`);
}

function decodeWalMessage(wire: WireWalMessage): WalStreamMessage {
  if (wire.message === 'batch' && wire.batch) {
    const entries: WalEntry[] = wire.batch.entries.map((e) => ({
      index: e.index,
      rootBefore: e.rootBefore,
      ops: e.ops.map(decodeWalOp),
    }));
    return { kind: 'batch', entries, lastWal: wire.batch.lastWal, ...(wire.batch.through ? { through: wire.batch.through } : {}) };
  }
  if (wire.message === 'heartbeat' && wire.heartbeat) return { kind: 'heartbeat', timeMs: wire.heartbeat.timeMs, lastWal: wire.heartbeat.lastWal };
  if (wire.message === 'notRetained' && wire.notRetained) return { kind: 'notRetained', lastWal: wire.notRetained.lastWal };
  throw malformed('WAL message');
}

function parseFilter(text: string): PingReply['pathsFilter'] {
  if (text === '') return null;
  try {
    const f = JSON.parse(text) as { mode?: unknown; paths?: unknown };
    if ((f.mode === 'allow' || f.mode === 'deny') && Array.isArray(f.paths)) return { mode: f.mode, paths: f.paths.filter((p): p is string => typeof p === 'string') };
  } catch {
    // a malformed filter is shown as none
  }
  return null;
}

function decodeWalOp(wire: WireWalOp): TxnOp {
  const op = decodeOp(wire);
  if (op === undefined) throw malformed('WAL operation');
  return op;
}

function decodeKeyValues(wire: WireKeyValues): KeyValue[] {
  return wire.entries.map((e) => {
    if (e.key === '') throw malformed('key page');
    return { key: e.key, value: e.value ?? null };
  });
}
