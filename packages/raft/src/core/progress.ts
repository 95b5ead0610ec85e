import type { Progress } from './types';

/**
 * The leader's view of one follower (or learner), with the flow control of etcd-io/raft:
 *  - probe: we do not know where the follower's log matches ours; send one append, then wait for
 *    its answer (or a heartbeat answer) before sending another.
 *  - replicate: the follower is matching; stream appends optimistically, at most `maxInflight`
 *    unacknowledged ones at a time.
 *  - snapshot: the follower needs entries we compacted; nothing is sent until the snapshot is
 *    reported done or failed, or the follower answers an append.
 */
export class PeerProgress {
  match = 0;
  next: number;
  state: Progress['state'] = 'probe';
  learner: boolean;
  /** probe: an append is outstanding, so wait before sending the next. */
  probeSent = false;
  /** snapshot: the index of the snapshot being sent. */
  pendingSnapshot = 0;
  ticksSinceContact = 0;
  /**
   * Whether the peer has answered this leader since it took the lead or added the peer. Until
   * then `ticksSinceContact` counts from the moment this progress was made, not from any answer,
   * so a peer that is down or unreachable looks in touch for a while.
   */
  answered = false;
  /**
   * The leader tick at which it sent the newest heartbeat this peer answered. The peer ignores
   * votes for an election timeout after receiving that heartbeat, so the leader's lease through
   * this peer lasts an election timeout from the *send*, not from the answer.
   */
  leaseAckTick = -Infinity;
  /** The leader's commit index in the newest append sent to this peer. */
  commitSent = 0;
  /** replicate: last index of each unacknowledged append, oldest first. */
  private inflights: number[] = [];
  private readonly maxInflight: number;

  constructor(next: number, learner: boolean, maxInflight: number) {
    this.next = next;
    this.learner = learner;
    this.maxInflight = Math.max(1, maxInflight);
  }

  becomeProbe(): void {
    // After a snapshot succeeded, the follower holds at least the snapshot: start after it.
    this.next = this.state === 'snapshot' ? Math.max(this.match + 1, this.pendingSnapshot + 1) : this.match + 1;
    this.state = 'probe';
    this.reset();
  }

  becomeReplicate(): void {
    this.next = this.match + 1;
    this.state = 'replicate';
    this.reset();
  }

  becomeSnapshot(index: number): void {
    this.state = 'snapshot';
    this.reset();
    this.pendingSnapshot = index;
  }

  private reset(): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.inflights = [];
  }

  /** An acknowledgement up to `index`; false when it tells us nothing new (stale or duplicate). */
  maybeUpdate(index: number): boolean {
    const updated = this.match < index;
    if (updated) {
      this.match = index;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /**
   * A rejection of the append whose previous index was `rejected`; `hint` is where the logs may
   * match. False when the rejection is stale (it answers an append sent before we moved on).
   */
  maybeDecrTo(rejected: number, hint: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, hint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return this.inflights.length >= this.maxInflight;
      case 'snapshot':
        return true;
    }
  }

  /** An append was sent; `lastIndex` is its last entry's index, or null when it carried none. */
  sentAppend(lastIndex: number | null): void {
    if (this.state === 'replicate') {
      if (lastIndex === null) return;
      this.next = lastIndex + 1;
      this.inflights.push(lastIndex);
    } else if (this.state === 'probe') {
      this.probeSent = true;
    }
  }

  /** Frees the inflight slots of appends acknowledged by an answer up to `index`. */
  freeInflightsTo(index: number): void {
    let n = 0;
    while (n < this.inflights.length && this.inflights[n]! <= index) n++;
    if (n > 0) this.inflights.splice(0, n);
  }

  /** A heartbeat answer while the window is full: let one more append through, so a lost append cannot stall us. */
  freeFirstInflight(): void {
    this.inflights.shift();
  }

  inflightFull(): boolean {
    return this.inflights.length >= this.maxInflight;
  }

  toStatus(): Progress {
    return { match: this.match, next: this.next, state: this.state, ticksSinceContact: this.ticksSinceContact, answered: this.answered, learner: this.learner };
  }
}
