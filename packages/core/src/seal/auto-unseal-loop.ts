import type { Clock, TimerHandle } from '../clock';
import type { Logger } from '../logger';

export interface AutoUnsealLoopOptions {
  /** Whether there is anything to do: an auto seal, sealed, a wrapped root key at hand. */
  due: () => Promise<boolean>;
  /** One unseal through the auto seal. */
  unseal: () => Promise<unknown>;
  clock: Clock;
  logger: Logger;
  /** How often it looks while there is nothing to do (a node not yet initialized or joined). */
  idleMs?: number;
  /** Between failed attempts: doubles after each, from min to max. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

export const AUTO_UNSEAL_IDLE_MS = 1_000;
export const AUTO_UNSEAL_MIN_DELAY_MS = 1_000;
export const AUTO_UNSEAL_MAX_DELAY_MS = 30_000;

/**
 * Keeps a node with an auto seal unsealed without an operator: at start, after a restart, once
 * a join hands it the wrapped root key. An unsealer that cannot be reached is logged with its
 * cause and tried again with backoff; the server meanwhile answers seal-status as sealed.
 */
export class AutoUnsealLoop {
  private timer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private delayMs: number;
  private readonly idleMs: number;
  private readonly minDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(private readonly options: AutoUnsealLoopOptions) {
    this.idleMs = options.idleMs ?? AUTO_UNSEAL_IDLE_MS;
    this.minDelayMs = options.minDelayMs ?? AUTO_UNSEAL_MIN_DELAY_MS;
    this.maxDelayMs = Math.max(this.minDelayMs, options.maxDelayMs ?? AUTO_UNSEAL_MAX_DELAY_MS);
    this.delayMs = this.minDelayMs;
  }

  start(): void {
    if (this.timer || this.running) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.options.clock.setTimer(ms, () => {
      this.timer = null;
      this.running = this.round().finally(() => {
        this.running = null;
      });
    });
  }

  private async round(): Promise<void> {
    try {
      if (!(await this.options.due())) {
        this.schedule(this.idleMs);
        return;
      }
      await this.options.unseal();
      this.delayMs = this.minDelayMs;
      this.schedule(this.idleMs);
    } catch (err) {
      if (this.stopped) return;
      this.options.logger.error('auto-unseal failed; the node stays sealed and tries again', {
        err: (err as Error).message, retry_in_ms: this.delayMs,
      });
      this.schedule(this.delayMs);
      this.delayMs = Math.min(this.delayMs * 2, this.maxDelayMs);
    }
  }
}
