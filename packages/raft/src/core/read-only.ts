import type { NodeId } from './types';

export interface PendingRead {
  context: string;
  /** The leader's commit index when the read arrived: the read may be served once applied reaches it. */
  index: number;
  acks: Set<NodeId>;
}

/**
 * Safe (heartbeat-confirmed) reads waiting at the leader, in arrival order. A heartbeat round
 * confirms leadership at the moment it was sent, so a quorum of answers to a later round also
 * confirms every earlier read: releasing one read releases all reads queued before it.
 */
export class ReadOnlyQueue {
  private queue: PendingRead[] = [];
  private byContext = new Map<string, PendingRead>();

  /** False when a read with this context is already waiting (the one answer will serve both callers). */
  add(context: string, index: number, self: NodeId): boolean {
    if (this.byContext.has(context)) return false;
    const read: PendingRead = { context, index, acks: new Set([self]) };
    this.queue.push(read);
    this.byContext.set(context, read);
    return true;
  }

  /** Records `from`'s answer to the round of `context`; the read, if it is still waiting. */
  ack(context: string, from: NodeId): PendingRead | undefined {
    const read = this.byContext.get(context);
    read?.acks.add(from);
    return read;
  }

  /** Removes and returns every read up to and including the one with `context`. */
  releaseThrough(context: string): PendingRead[] {
    const at = this.queue.findIndex((r) => r.context === context);
    if (at < 0) return [];
    const released = this.queue.splice(0, at + 1);
    for (const r of released) this.byContext.delete(r.context);
    return released;
  }

  /** The newest waiting read's context: heartbeats carry it so that a lost round is retried. */
  lastContext(): string | undefined {
    return this.queue[this.queue.length - 1]?.context;
  }

  clear(): void {
    this.queue = [];
    this.byContext.clear();
  }
}
