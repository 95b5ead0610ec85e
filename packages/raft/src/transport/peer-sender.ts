import { Metadata, type Client, type ClientWritableStream, type MethodDefinition, type ServiceError } from '@grpc/grpc-js';
import type { Clock, Logger, TimerHandle } from '@strongroom/base';
import type { Message, NodeId } from '../core/types';
import { encodeMessage, encodedSizeBound, type WireBatch, type WireMessage } from './codec';
import { FROM_HEADER, TO_HEADER } from './raft-proto';

/** Counters the senders and the transport share; GrpcTransport.stats() reports a copy. */
export interface TransportStats {
  /** Messages handed to gRPC. A message may still be lost with its connection. */
  sent: number;
  /** gRPC writes: each carries every message queued for one peer during one task (see GrpcTransport.schedule). */
  batches: number;
  /** Messages handed to handlers.message. */
  received: number;
  dropped: {
    /** The peer's queue was full; the newest message is the one dropped. */
    queueFull: number;
    /** The peer's stream had just failed and the sender was waiting before redialling. */
    peerDown: number;
    /** No address is known for the message's `to`. */
    unknownPeer: number;
    /** Arrived here but addressed to another node. */
    misaddressed: number;
    /** Larger alone than maxMessageBytes. */
    tooLarge: number;
    /** Arrived with an enum value this node does not know. */
    malformed: number;
  };
}

export function emptyStats(): TransportStats {
  return {
    sent: 0,
    batches: 0,
    received: 0,
    dropped: { queueFull: 0, peerDown: 0, unknownPeer: 0, misaddressed: 0, tooLarge: 0, malformed: 0 },
  };
}

/** What every PeerSender of one transport shares. */
export interface SenderContext {
  readonly selfId: NodeId;
  readonly method: MethodDefinition<WireBatch, object>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly stats: TransportStats;
  readonly maxQueuedMessages: number;
  readonly maxBatchBytes: number;
  readonly reconnect: { initialMs: number; maxMs: number };
  /** Asks for flush() to be called at the end of the current task. */
  schedule(peer: PeerSender): void;
  unreachable(id: NodeId): void;
}

/**
 * Everything one node sends to one peer: a queue and one long-lived client stream, over one
 * gRPC client (one HTTP/2 connection). Messages leave in the order they were queued, and only
 * the newest stream of a sender is read by the receiver, so they never arrive out of order.
 *
 * States: idle (no stream; the next flush dials), open (a stream exists; writes go out, or wait
 * for 'drain' under backpressure), backing off (the stream failed; messages are dropped, not
 * queued, until the retry timer fires, since the node was told the peer is unreachable and will
 * resend what matters). The wait doubles from reconnect.initialMs to reconnect.maxMs and starts
 * over once a peer accepts a stream (it answers with response headers).
 */
export class PeerSender {
  private queue: Message[] = [];
  private call: ClientWritableStream<WireBatch> | null = null;
  private waitingForDrain = false;
  private retry: TimerHandle | null = null;
  private backoffMs = 0;
  /** Set when messages were dropped for a full queue; reported from flush, never from send. */
  private reportUnreachable = false;

  constructor(
    readonly id: NodeId,
    readonly address: string,
    private readonly client: Client,
    private readonly ctx: SenderContext,
  ) {}

  /** Returns whether the peer needs a flush. */
  enqueue(m: Message): boolean {
    if (this.retry !== null) {
      this.ctx.stats.dropped.peerDown++;
      return false;
    }
    if (this.queue.length >= this.ctx.maxQueuedMessages) {
      // Dropping the newest keeps what is queued a prefix of what was sent, as Raft expects;
      // the node learns of it through `unreachable` and falls back to probing.
      this.ctx.stats.dropped.queueFull++;
      this.reportUnreachable = true;
      return true;
    }
    this.queue.push(m);
    return true;
  }

  /** Writes what is queued, in batches that stay under maxBatchBytes. */
  flush(): void {
    if (this.reportUnreachable) {
      this.reportUnreachable = false;
      this.ctx.unreachable(this.id);
    }
    if (this.queue.length === 0 || this.waitingForDrain || this.retry !== null) return;
    const call = this.call ?? this.open();
    const { stats, maxBatchBytes } = this.ctx;
    const queue = this.queue;
    let i = 0;
    while (i < queue.length) {
      const batch: WireMessage[] = [];
      let bytes = 0;
      for (; i < queue.length; i++) {
        const m = queue[i]!;
        const size = encodedSizeBound(m);
        if (size > maxBatchBytes) {
          stats.dropped.tooLarge++;
          this.ctx.logger.warn('raft message larger than the gRPC message limit dropped', { to: this.id, type: m.type, bytes: size });
          continue;
        }
        if (bytes + size > maxBatchBytes) break;
        batch.push(encodeMessage(m));
        bytes += size;
      }
      if (batch.length === 0) break;
      stats.sent += batch.length;
      stats.batches++;
      if (!call.write({ messages: batch })) {
        this.waitingForDrain = true;
        call.once('drain', () => {
          if (this.call !== call) return;
          this.waitingForDrain = false;
          this.ctx.schedule(this);
        });
        break;
      }
    }
    if (i === queue.length) queue.length = 0;
    else queue.splice(0, i);
  }

  /** Whether the last stream failed and the retry timer has not fired yet. */
  get backingOff(): boolean {
    return this.retry !== null;
  }

  /**
   * Opens the stream now rather than with the first message, so that the peer learns at once
   * that this node is up (and, if it was backing off from us, dials back without waiting).
   */
  dial(): void {
    if (this.call === null && this.retry === null) this.open();
  }

  /** Ends the stream at once, dropping what is queued; the sender is not used afterwards. */
  close(): void {
    this.retry?.cancel();
    this.retry = null;
    this.queue.length = 0;
    const call = this.call;
    this.call = null;
    call?.cancel();
    this.client.close();
  }

  private open(): ClientWritableStream<WireBatch> {
    const { method, selfId } = this.ctx;
    const metadata = new Metadata();
    metadata.set(FROM_HEADER, selfId);
    metadata.set(TO_HEADER, this.id);
    const call = this.client.makeClientStreamRequest<WireBatch, object>(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      metadata,
      {},
      (err) => this.ended(call, err),
    );
    call.on('metadata', () => {
      if (this.call === call) this.backoffMs = 0;
    });
    this.call = call;
    return call;
  }

  /** The stream ended without our asking (close() forgets the call first): the peer is unreachable. */
  private ended(call: ClientWritableStream<WireBatch>, err: ServiceError | null): void {
    if (this.call !== call) return;
    this.call = null;
    this.waitingForDrain = false;
    this.ctx.stats.dropped.peerDown += this.queue.length;
    this.queue.length = 0;
    const { initialMs, maxMs } = this.ctx.reconnect;
    this.backoffMs = Math.min(Math.max(this.backoffMs * 2, initialMs), maxMs);
    this.ctx.logger.debug('raft stream to peer ended', { peer: this.id, address: this.address, error: err?.details, retryInMs: this.backoffMs });
    this.retry = this.ctx.clock.setTimer(this.backoffMs, () => {
      this.retry = null;
    });
    this.ctx.unreachable(this.id);
  }
}
