import type { Message, NodeId } from '../../types';
import type { Random } from '../../../test-support/seeded-random';

export interface NetworkFaults {
  /** Probability that a message is lost. */
  drop: number;
  /** Probability that a message is delivered twice. */
  duplicate: number;
  /** Each delivery is delayed by a uniform 0..maxDelay ticks, which also reorders messages. */
  maxDelay: number;
}

interface InFlight {
  m: Message;
  /** Tick at which it becomes deliverable. */
  at: number;
}

/**
 * An in-memory network driven by a seeded random source. Links can be cut one way or both ways
 * (a cut also swallows messages already in flight on that link); losses of `snapshot` messages
 * are reported through `onSnapshotLost`, as a real runtime would report a failed stream.
 */
export class SimNetwork {
  faults: NetworkFaults;
  /** Scenario hook: messages for which it returns true are lost. */
  dropIf: ((m: Message) => boolean) | null = null;
  private queue: InFlight[] = [];
  /** Cut links: sender -> receivers it cannot reach. */
  private readonly cut = new Map<NodeId, Set<NodeId>>();

  constructor(
    private readonly rng: Random,
    faults: Partial<NetworkFaults> = {},
  ) {
    this.faults = { drop: 0, duplicate: 0, maxDelay: 0, ...faults };
  }

  send(m: Message, now: number, onSnapshotLost: (m: Message) => void): void {
    if (this.dropIf?.(m) === true || (this.faults.drop > 0 && this.rng.next() < this.faults.drop)) {
      if (m.type === 'snapshot') onSnapshotLost(m);
      return;
    }
    this.queue.push({ m, at: now + this.delay() });
    if (this.faults.duplicate > 0 && this.rng.next() < this.faults.duplicate) this.queue.push({ m, at: now + this.delay() });
  }

  private delay(): number {
    return this.faults.maxDelay > 0 ? this.rng.int(this.faults.maxDelay + 1) : 0;
  }

  /** Removes and returns the messages deliverable at `now`, shuffled (messages sent in one batch may overtake each other). */
  takeDue(now: number): Message[] {
    const due: Message[] = [];
    const rest: InFlight[] = [];
    for (const f of this.queue) {
      if (f.at <= now) due.push(f.m);
      else rest.push(f);
    }
    if (due.length === 0) return due;
    this.queue = rest;
    if (this.faults.maxDelay > 0) {
      for (let i = due.length - 1; i > 0; i--) {
        const j = this.rng.int(i + 1);
        [due[i], due[j]] = [due[j]!, due[i]!];
      }
    }
    return due;
  }

  pending(): number {
    return this.queue.length;
  }

  isCut(from: NodeId, to: NodeId): boolean {
    return this.cut.get(from)?.has(to) === true;
  }

  cutOneWay(from: NodeId, to: NodeId): void {
    let receivers = this.cut.get(from);
    if (receivers === undefined) this.cut.set(from, (receivers = new Set()));
    receivers.add(to);
  }

  cutBoth(a: NodeId, b: NodeId): void {
    this.cutOneWay(a, b);
    this.cutOneWay(b, a);
  }

  /** Cuts every link between the two groups. */
  partition(groupA: readonly NodeId[], groupB: readonly NodeId[]): void {
    for (const a of groupA) for (const b of groupB) this.cutBoth(a, b);
  }

  heal(): void {
    this.cut.clear();
  }
}
