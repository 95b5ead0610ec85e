import { randomBytes } from 'node:crypto';
import { call, sleep } from '../node-api';

/**
 * A steady KV v2 write load whose every write is a canary: `<mount>/canary-<seq>` holding its
 * seq and a random nonce. Only writes the server acknowledged (a 2xx) are recorded, with where
 * and when; a failed write is not retried under the same seq, so every recorded seq is one the
 * cluster promised to keep. The target address can change while it runs (a failover).
 */

export interface Ack {
  seq: number;
  nonce: string;
  addr: string;
  at: number;
}

export const CANARY_MOUNT = 'drill';

export function canaryPath(seq: number): string {
  return `${CANARY_MOUNT}/data/canary-${seq}`;
}

export class CanaryLoad {
  readonly acks: Ack[] = [];
  failures = 0;
  private next: number;
  private target: string | null = null;
  private workers: Promise<void>[] = [];
  private running = false;

  constructor(private readonly token: string, private readonly concurrency: number, firstSeq = 1) {
    this.next = firstSeq;
  }

  get nextSeq(): number {
    return this.next;
  }

  /** Where writes go from now on; null holds them (nothing is sent, nothing counted as failed). */
  point(addr: string | null): void {
    this.target = addr;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.workers = Array.from({ length: this.concurrency }, () => this.work());
  }

  /** Stops taking new seqs and waits for the writes in flight to be answered (or to time out). */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
    this.workers = [];
  }

  /** The first acknowledged write sent to `addr` at or after `since`, once there is one. */
  firstAckOn(addr: string, since: number): Ack | undefined {
    return this.acks.find((a) => a.addr === addr && a.at >= since);
  }

  private async work(): Promise<void> {
    while (this.running) {
      const addr = this.target;
      if (addr === null) {
        await sleep(50);
        continue;
      }
      const seq = this.next++;
      const nonce = randomBytes(12).toString('hex');
      const ok = await call(addr, 'POST', canaryPath(seq), { token: this.token, body: { data: { seq, nonce } }, timeoutMs: 5_000 })
        .then((r) => r.status >= 200 && r.status < 300, () => false);
      if (ok) {
        this.acks.push({ seq, nonce, addr, at: Date.now() });
      } else {
        this.failures++;
        // A refused or dead node answers at once: a short pause keeps the load from spinning.
        await sleep(100);
      }
    }
  }
}
