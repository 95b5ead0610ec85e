import {
  Client,
  Metadata,
  Server,
  credentials,
  experimental,
  status,
  type ChannelCredentials,
  type ChannelOptions,
  type sendUnaryData,
  type ServerCredentials,
  type ServerDuplexStream,
  type ServerReadableStream,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { silentLogger, systemClock, type Clock, type Logger } from '@strongroom/base';
import type { Message, NodeId } from '../core/types';
import { CLUSTER_SERVER_NAME } from '../tls/cluster-name';
import { decodeMessage, type WireBatch, type WireSnapshotChunk } from './codec';
import { SnapshotSendError } from './errors';
import { CallChannel, MemberCallError, serveCalls, type CallHandler } from './member-calls';
import { PeerSender, emptyStats, type SenderContext, type TransportStats } from './peer-sender';
import { FROM_HEADER, TO_HEADER, raftService, type WireCallRequests, type WireCallResponses } from './raft-proto';
import { ServerTrust, isIssuedByAny, parseCertificates } from './server-trust';
import { receiveSnapshot } from './snapshot-receiver';
import { streamSnapshot } from './snapshot-sender';
import type { Transport, TransportHandlers } from './transport';

export interface GrpcTransportOptions {
  id: NodeId;
  /** host:port to listen on. Port 0 takes a free port; `address` and `port` tell which. */
  listen: string;
  /**
   * PEM. `ca` holds the certificates a peer's certificate must chain to (more than one while
   * the cluster CA is being renewed); `cert` and `key` are presented both to the peers that dial
   * this node and to those it dials. See createClusterTls.
   */
  tls: { ca: string; cert: string; key: string };
  clock?: Clock;
  logger?: Logger;
  /** Largest gRPC message sent or accepted: a batch, or a snapshot chunk. Default 64 MiB, at least 64 KiB. */
  maxMessageBytes?: number;
  /** Messages waiting for one peer; beyond that the newest are dropped. Default 10 000. */
  maxQueuedMessages?: number;
  /** Wait before redialling a peer whose stream failed. Default 50 ms doubling to 2 s. */
  reconnect?: { initialMs: number; maxMs: number };
  /** sendSnapshot fails when no chunk left and no answer came for this long. Default 30 s. */
  snapshotIdleTimeoutMs?: number;
  /**
   * Serves the calls other members make with `call` (asked anew for each call, so it can be
   * set after start); null or absent answers each call with an error.
   */
  callHandler?: () => CallHandler | null;
  /** More gRPC services served on the same listener (see addService). */
  services?: ExtraService[];
  /** PEM CAs whose client certificates are accepted besides `tls.ca`'s (see trustClientCas). */
  clientCas?: string[];
}

/** A gRPC service served beside Raft's, on the cluster listener. */
export interface ExtraService {
  definition: ServiceDefinition;
  implementation: UntypedServiceImplementation;
}

const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const DEFAULT_MAX_QUEUED_MESSAGES = 10_000;
const DEFAULT_RECONNECT = { initialMs: 50, maxMs: 2_000 };
const DEFAULT_SNAPSHOT_IDLE_TIMEOUT_MS = 30_000;
const MIN_MAX_MESSAGE_BYTES = 64 * 1024;
const SNAPSHOT_CHUNK_BYTES = 256 * 1024;
/** Room for a chunk's own framing, so that a chunk of chunkBytes fits in maxMessageBytes. */
const CHUNK_FRAMING_BYTES = 64;
/**
 * A ping after 5 s without traffic, and a connection whose ping goes unanswered for 5 s is
 * closed: a peer that died without closing its socket (power loss, partition) is noticed in
 * about 10 s on both ends, instead of when TCP gives up minutes later.
 */
const KEEPALIVE = { 'grpc.keepalive_time_ms': 5_000, 'grpc.keepalive_timeout_ms': 5_000 } as const;

/**
 * The Transport of a cluster node over gRPC with mutual TLS (proto/raft.proto).
 *
 * Sending: send() only queues, per peer, and one flush at the end of the current task writes each
 * peer's queue as one batch on that peer's long-lived stream (see PeerSender for ordering, the bounded
 * queue and reconnection). Receiving: each batch's messages go to handlers.message in order,
 * except those whose `to` is not this node, which are dropped and counted.
 *
 * Security: every connection is TLS 1.2+ with certificates on both sides chained to `tls.ca`;
 * a peer without one is refused during the handshake, before any message is read. Servers are
 * verified against CLUSTER_SERVER_NAME, not against their address. The listener may also serve
 * other services (addService) to clients of other CAs (trustClientCas); Raft's own services
 * refuse every caller whose certificate the cluster CA did not sign.
 *
 * Contract: setPeer and send work before start() (messages go out, none come in); start() at
 * most once, and not after close(). After close(), send/setPeer/removePeer are no-ops and
 * sendSnapshot rejects; no handler is called anew, though a snapshot handler already running
 * sees its data stream fail and is left to settle.
 */
export class GrpcTransport implements Transport {
  private readonly id: NodeId;
  private readonly listen: string;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly maxMessageBytes: number;
  private readonly snapshotIdleTimeoutMs: number;
  private readonly serverCredentials: ServerCredentials;
  private readonly channelCredentials: ChannelCredentials;
  private readonly channelOptions: ChannelOptions;
  private readonly counters = emptyStats();
  private readonly senderContext: SenderContext;
  private readonly peers = new Map<NodeId, PeerSender>();
  private dirty = new Set<PeerSender>();
  private flushing = false;
  /** Ends the newest incoming stream of each sender; only that one is read. */
  private readonly inbound = new Map<NodeId, () => void>();
  /** Aborted by close(): cancels the snapshots being sent. */
  private readonly closing = new AbortController();
  private server: Server | null = null;
  private handlers: TransportHandlers | null = null;
  private readonly callHandler: () => CallHandler | null;
  /** Streams of calls to other members, by address. */
  private readonly callChannels = new Map<string, CallChannel>();
  private boundPort: number | null = null;
  private closed = false;
  private readonly trust: ServerTrust;
  /** The certificates of `tls.ca`: only a client chained to one of them may use Raft's services. */
  private readonly clusterCas: ReturnType<typeof parseCertificates>;
  private readonly services: ExtraService[];

  constructor(options: GrpcTransportOptions) {
    this.id = options.id;
    this.listen = options.listen;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.maxMessageBytes = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    if (!(this.maxMessageBytes >= MIN_MAX_MESSAGE_BYTES)) throw new RangeError(`maxMessageBytes must be at least ${MIN_MAX_MESSAGE_BYTES}`);
    this.snapshotIdleTimeoutMs = options.snapshotIdleTimeoutMs ?? DEFAULT_SNAPSHOT_IDLE_TIMEOUT_MS;
    this.callHandler = options.callHandler ?? (() => null);
    const reconnect = options.reconnect ?? DEFAULT_RECONNECT;
    const { ca, cert, key } = options.tls;
    this.clusterCas = parseCertificates(ca);
    this.services = [...(options.services ?? [])];
    this.trust = new ServerTrust({ ca, cert, key }, options.clientCas ?? []);
    // The provider, not createSsl, so that the client CAs can change while the server listens.
    // The arguments are given as grpc-js 1.14 uses them (identity first, whatever their names
    // say); one provider serves both, so the order cannot go wrong. true: a client without a
    // certificate chained to a trusted CA is refused during the handshake.
    this.serverCredentials = experimental.createCertificateProviderServerCredentials(this.trust, this.trust, true);
    this.channelCredentials = credentials.createSsl(Buffer.from(ca), Buffer.from(key), Buffer.from(cert));
    this.channelOptions = {
      'grpc.ssl_target_name_override': CLUSTER_SERVER_NAME,
      'grpc.default_authority': CLUSTER_SERVER_NAME,
      ...KEEPALIVE,
      // gRPC's own redial pacing, kept in step with ours: its default grows to two minutes.
      'grpc.initial_reconnect_backoff_ms': reconnect.initialMs,
      'grpc.max_reconnect_backoff_ms': reconnect.maxMs,
      'grpc.max_send_message_length': this.maxMessageBytes,
      'grpc.max_receive_message_length': this.maxMessageBytes,
      // Retries would copy every message of a stream into a replay buffer, for a replay that
      // Raft does not want: a lost message is resent by the core, not by the transport.
      'grpc.enable_retries': 0,
      // A connection per client, not one shared process-wide, so that closing a client closes
      // its connection, and a snapshot's connection is not the one heartbeats wait behind.
      'grpc.use_local_subchannel_pool': 1,
    };
    this.senderContext = {
      selfId: this.id,
      method: raftService().stream,
      clock: this.clock,
      logger: this.logger,
      stats: this.counters,
      maxQueuedMessages: options.maxQueuedMessages ?? DEFAULT_MAX_QUEUED_MESSAGES,
      maxBatchBytes: this.maxMessageBytes,
      reconnect,
      schedule: (peer) => this.schedule(peer),
      unreachable: (id) => this.unreachable(id),
    };
  }

  async start(handlers: TransportHandlers): Promise<void> {
    if (this.server !== null || this.closed) throw new Error('GrpcTransport.start may be called once, before close');
    this.handlers = handlers;
    const server = new Server({
      ...KEEPALIVE,
      'grpc.max_send_message_length': this.maxMessageBytes,
      'grpc.max_receive_message_length': this.maxMessageBytes,
    });
    server.addService(raftService().definition, {
      Stream: (call: ServerReadableStream<WireBatch, object>, callback: sendUnaryData<object>) => {
        if (this.admitMember(call, callback)) this.serveStream(call, callback);
      },
      InstallSnapshot: (call: ServerReadableStream<WireSnapshotChunk, object>, callback: sendUnaryData<object>) => {
        if (!this.admitMember(call, callback)) return;
        receiveSnapshot(call, callback, {
          selfId: this.id,
          handle: (m, data) => handlers.snapshot(m, data),
          misaddressed: () => this.counters.dropped.misaddressed++,
        });
      },
      Calls: (call: ServerDuplexStream<WireCallRequests, WireCallResponses>) => {
        if (this.admitMember(call, (err) => call.emit('error', err))) serveCalls(call, this.callHandler, this.maxMessageBytes);
      },
    });
    for (const s of this.services) server.addService(s.definition, s.implementation);
    this.server = server;
    try {
      this.boundPort = await new Promise<number>((resolve, reject) => {
        server.bindAsync(this.listen, this.serverCredentials, (err, port) => (err === null ? resolve(port) : reject(err)));
      });
    } catch (err) {
      server.forceShutdown();
      throw err;
    }
    for (const peer of this.peers.values()) peer.dial();
  }

  /** Serves one more gRPC service on this transport's listener, before or after start(). */
  addService(definition: ServiceDefinition, implementation: UntypedServiceImplementation): void {
    if (this.server === null) this.services.push({ definition, implementation });
    else this.server.addService(definition, implementation);
  }

  /**
   * Replaces the CAs (PEM) whose client certificates are accepted besides the cluster's. New
   * connections are checked against the new list; established ones are not cut, so a service
   * that stops trusting a CA checks each call's certificate itself. Raft's services accept
   * only the cluster's own certificates whatever this list holds.
   */
  trustClientCas(pems: string[]): void {
    this.trust.setClientCas(pems);
  }

  /** The port listened on; known once start() resolved. */
  get port(): number {
    if (this.boundPort === null) throw new Error('GrpcTransport is not started');
    return this.boundPort;
  }

  /** `listen` with the bound port: what to give peers when this node listens on 127.0.0.1:0. */
  get address(): string {
    return `${this.listen.slice(0, this.listen.lastIndexOf(':'))}:${this.port}`;
  }

  setPeer(id: NodeId, address: string): void {
    if (this.closed || this.peers.get(id)?.address === address) return;
    this.removePeer(id);
    const client = new Client(address, this.channelCredentials, this.channelOptions);
    const peer = new PeerSender(id, address, client, this.senderContext);
    this.peers.set(id, peer);
    if (this.boundPort !== null) peer.dial();
  }

  /**
   * Asks the member listening at `address` (host:port of its cluster listener) to handle
   * `payload` with its call handler, over a stream of this transport's own, with the cluster's
   * mutual TLS. Rejects with MemberCallError when no answer comes; the call may have run.
   */
  call(address: string, payload: Buffer): Promise<Buffer> {
    if (this.closed) return Promise.reject(new MemberCallError('the transport is closed', address));
    let channel = this.callChannels.get(address);
    if (!channel) {
      // Calls go to whichever member leads; a stream to one that no longer does is let go once idle.
      for (const [other, idle] of this.callChannels) {
        if (idle.waiting === 0) {
          idle.close();
          this.callChannels.delete(other);
        }
      }
      channel = new CallChannel(address, new Client(address, this.channelCredentials, this.channelOptions), raftService().calls, this.maxMessageBytes);
      this.callChannels.set(address, channel);
    }
    return channel.call(payload);
  }

  removePeer(id: NodeId): void {
    const peer = this.peers.get(id);
    if (peer === undefined) return;
    this.peers.delete(id);
    this.dirty.delete(peer);
    peer.close();
  }

  send(messages: Message[]): void {
    if (this.closed) return;
    for (const m of messages) {
      const peer = this.peers.get(m.to);
      if (peer === undefined) this.counters.dropped.unknownPeer++;
      else if (peer.enqueue(m)) this.schedule(peer);
    }
  }

  async sendSnapshot(m: Message, data: () => AsyncIterable<Buffer>): Promise<void> {
    if (this.closed) throw new SnapshotSendError(m.to, 'closed', 'the transport was closed');
    const peer = this.peers.get(m.to);
    if (peer === undefined) throw new SnapshotSendError(m.to, 'unknownPeer', 'no address is known for this node');
    const client = new Client(peer.address, this.channelCredentials, this.channelOptions);
    try {
      await streamSnapshot(m, data(), {
        client,
        method: raftService().installSnapshot,
        chunkBytes: Math.min(SNAPSHOT_CHUNK_BYTES, this.maxMessageBytes - CHUNK_FRAMING_BYTES),
        idleTimeoutMs: this.snapshotIdleTimeoutMs,
        clock: this.clock,
        signal: this.closing.signal,
      });
    } finally {
      client.close();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort();
    for (const peer of this.peers.values()) peer.close();
    this.peers.clear();
    for (const channel of this.callChannels.values()) channel.close();
    this.callChannels.clear();
    this.dirty.clear();
    this.inbound.clear();
    this.handlers = null;
    // Not tryShutdown: peers keep their streams open, so a graceful shutdown would wait for them.
    this.server?.forceShutdown();
  }

  /** Counters since construction (a copy). */
  stats(): TransportStats {
    return { ...this.counters, dropped: { ...this.counters.dropped } };
  }

  /**
   * What is sent during one task (a Ready's messages are sent in one call) leaves as one write per
   * peer at the end of that task, not a turn of the event loop later: a turn of a busy leader
   * holds every request that arrived meanwhile, and the followers would wait that long to start
   * writing the entries (grpc-js itself puts the bytes on the socket one turn after the write).
   */
  private schedule(peer: PeerSender): void {
    this.dirty.add(peer);
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => this.flush());
  }

  private flush(): void {
    this.flushing = false;
    // Swapped first: a handler called from a flush may send, and that belongs to the next flush.
    const dirty = this.dirty;
    this.dirty = new Set();
    for (const peer of dirty) peer.flush();
  }

  private unreachable(id: NodeId): void {
    try {
      this.handlers?.unreachable(id);
    } catch (err) {
      this.logger.error('raft unreachable handler threw', { peer: id, error: err });
    }
  }

  private serveStream(call: ServerReadableStream<WireBatch, object>, callback: sendUnaryData<object>): void {
    const from = headerValue(call.metadata, FROM_HEADER);
    const to = headerValue(call.metadata, TO_HEADER);
    if (from === undefined || to === undefined) {
      callback({ code: status.INVALID_ARGUMENT, details: `the ${FROM_HEADER} and ${TO_HEADER} headers are required` });
      return;
    }
    if (to !== this.id) {
      // The sender has this node's address under another id: refusing makes it report the
      // peer unreachable instead of streaming into the wrong node.
      callback({ code: status.FAILED_PRECONDITION, details: `this is node ${this.id}, not ${to}` });
      return;
    }
    // A sender opens a new stream only after giving up its previous one, whose last batches may
    // still be in flight; reading both could deliver them out of order, so the older is ended.
    let answered = false;
    const answer = (code: status): void => {
      if (this.inbound.get(from) === end) this.inbound.delete(from);
      if (answered) return;
      answered = true;
      if (code === status.OK) callback(null, {});
      else callback({ code, details: 'superseded by a newer stream from the same node' });
    };
    const end = (): void => answer(status.ABORTED);
    const previous = this.inbound.get(from);
    if (previous !== undefined) {
      this.logger.debug('raft stream superseded by a newer one from the same node', { peer: from });
      previous();
    }
    this.inbound.set(from, end);
    // The peer is up: if our stream to it failed, dial it again now, with a fresh client, rather
    // than once our backoff and gRPC's run out (up to two seconds each), which would keep a
    // restarted member from hearing its leader, and serving, for that long.
    const out = this.peers.get(from);
    if (out?.backingOff) {
      this.removePeer(from);
      this.setPeer(from, out.address);
    }
    call.on('data', (batch: WireBatch) => {
      if (this.inbound.get(from) === end) this.deliver(batch);
    });
    const finished = (): void => answer(status.OK);
    call.on('end', finished);
    call.on('cancelled', finished);
    call.on('error', finished);
    // Response headers tell the sender its stream was accepted (it then resets its backoff).
    call.sendMetadata(new Metadata());
  }

  /**
   * True when the caller presented a certificate of this cluster; otherwise answers the call
   * with PERMISSION_DENIED. The listener also accepts certificates of other CAs (trustClientCas)
   * for the other services it serves, and those callers are no members.
   */
  private admitMember(call: { getAuthContext(): { sslPeerCertificate?: { raw: Buffer } }; getPeer(): string }, refuse: (err: { code: status; details: string }) => void): boolean {
    const raw = call.getAuthContext().sslPeerCertificate?.raw;
    if (raw !== undefined && isIssuedByAny(raw, this.clusterCas)) return true;
    this.logger.warn('a Raft call from a certificate that is not the cluster\'s was refused', { peer: call.getPeer() });
    refuse({ code: status.PERMISSION_DENIED, details: 'the caller\'s certificate is not one of this cluster\'s' });
    return false;
  }

  private deliver(batch: WireBatch): void {
    const handlers = this.handlers;
    if (handlers === null) return;
    for (const w of batch.messages) {
      const m = decodeMessage(w);
      if (m === undefined) {
        this.counters.dropped.malformed++;
      } else if (m.to !== this.id) {
        this.counters.dropped.misaddressed++;
      } else {
        this.counters.received++;
        try {
          handlers.message(m);
        } catch (err) {
          this.logger.error('raft message handler threw', { from: m.from, type: m.type, error: err });
        }
      }
    }
  }
}

function headerValue(metadata: Metadata, key: string): string | undefined {
  const value = metadata.get(key)[0];
  return typeof value === 'string' ? value : undefined;
}
