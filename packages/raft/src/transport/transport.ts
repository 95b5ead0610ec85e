import type { Message, NodeId } from '../core/types';

/** What a transport hands to the node that owns it. */
export interface TransportHandlers {
  /** A message arrived from a peer. Called in arrival order per peer; must not throw. */
  message(m: Message): void;
  /**
   * A peer is streaming a snapshot. `m` is the leader's `snapshot` message; `data` yields the
   * snapshot bytes in order. Resolve once the data is durably stored (the node then steps `m`
   * into its core); reject to make the sender's `sendSnapshot` fail.
   */
  snapshot(m: Message, data: AsyncIterable<Buffer>): Promise<void>;
  /** Sending to a peer failed (connection refused or dropped); the core slows down to probing. */
  unreachable(id: NodeId): void;
}

/**
 * Moves messages between the nodes of one cluster. Delivery is best effort: a message may be
 * lost, but messages from one node to another never arrive out of order, and Raft tolerates
 * the loss.
 */
export interface Transport {
  /** Starts accepting connections; resolves once listening. */
  start(handlers: TransportHandlers): Promise<void>;
  /** The peer's cluster address (host:port). Replaces an earlier one. */
  setPeer(id: NodeId, address: string): void;
  removePeer(id: NodeId): void;
  /** Queues messages for sending; never throws, never blocks on the network. */
  send(messages: Message[]): void;
  /**
   * Streams `m` to `m.to`, then the snapshot data in chunks. Resolves when the receiver has
   * stored it, rejects on any failure (the caller reports the snapshot as failed to the core).
   */
  sendSnapshot(m: Message, data: () => AsyncIterable<Buffer>): Promise<void>;
  /** Closes connections and the listener. Pending sends are dropped. */
  close(): Promise<void>;
}
