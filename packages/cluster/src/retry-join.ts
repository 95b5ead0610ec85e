import { readFile } from 'node:fs/promises';
import type { Clock, Logger, TimerHandle } from '@strongroom/core';

/** One `retry_join` entry of the raft storage block. */
export interface RetryJoinLeader {
  leaderApiAddr: string;
  leaderCaCertFile?: string;
  leaderClientCertFile?: string;
  leaderClientKeyFile?: string;
  leaderTlsServername?: string;
}

/** How this node calls a leader's API over HTTPS: the leader's CA, a client certificate, the name to check. */
export interface LeaderTls {
  ca?: string;
  cert?: string;
  key?: string;
  servername?: string;
}

/** `new`: no cluster and no join under way; `pending`: a join waits for the unseal; `member`: nothing left to do. */
export type JoinState = 'new' | 'pending' | 'member';

export interface RetryJoinOptions {
  leaders: RetryJoinLeader[];
  state: () => Promise<JoinState>;
  /** One join attempt, the same as `sys/storage/raft/join`; the signal aborts it at shutdown. */
  join: (leaderApiAddr: string, tls: LeaderTls, signal: AbortSignal) => Promise<void>;
  clock: Clock;
  logger: Logger;
  /** Between rounds of attempts: doubles after each failed round, from min to max. */
  minDelayMs?: number;
  maxDelayMs?: number;
}

export const RETRY_JOIN_MIN_DELAY_MS = 2_000;
export const RETRY_JOIN_MAX_DELAY_MS = 30_000;

/**
 * Keeps a new node trying the configured leaders, each in turn, until one gives it a join;
 * then waits while that join is pending (the operator unseals), and starts over if the join is
 * abandoned (wrong keys, a challenge expired, the leader lost). A node that is a member, or was
 * initialized itself, ends the loop. Each failure is logged with the leader and the cause only:
 * the files' contents never leave this module except to the join.
 */
export class RetryJoin {
  private readonly minDelayMs: number;
  private readonly maxDelayMs: number;
  private delayMs: number;
  private timer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(private readonly options: RetryJoinOptions) {
    this.minDelayMs = options.minDelayMs ?? RETRY_JOIN_MIN_DELAY_MS;
    this.maxDelayMs = Math.max(this.minDelayMs, options.maxDelayMs ?? RETRY_JOIN_MAX_DELAY_MS);
    this.delayMs = this.minDelayMs;
  }

  start(): void {
    this.schedule(0);
  }

  /** Ends the loop; an attempt in flight is aborted and awaited. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.abort.abort();
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = this.options.clock.setTimer(ms, () => {
      this.running = this.round()
        .catch((err: unknown) => {
          // Only the state check can get here (attempts catch their own); try again later.
          this.options.logger.warn('retry_join: could not read this node\'s state; trying again', { err: (err as Error).message });
          this.schedule(this.minDelayMs);
        })
        .finally(() => {
          this.running = null;
        });
    });
  }

  private async round(): Promise<void> {
    const { logger, leaders } = this.options;
    let state = await this.options.state();
    if (this.stopped) return;
    if (state === 'member') {
      logger.info('retry_join: this node belongs to a cluster; nothing to join');
      return;
    }
    if (state === 'pending') {
      this.delayMs = this.minDelayMs;
      this.schedule(this.minDelayMs);
      return;
    }
    for (const leader of leaders) {
      try {
        await this.options.join(leader.leaderApiAddr, await readTls(leader), this.abort.signal);
        this.delayMs = this.minDelayMs;
        this.schedule(this.minDelayMs);
        return;
      } catch (err) {
        if (this.stopped) return;
        logger.warn('retry_join: could not join through this leader', { leader_api_addr: leader.leaderApiAddr, err: (err as Error).message });
      }
      // The node may have been initialized or joined by hand meanwhile.
      state = await this.options.state();
      if (this.stopped) return;
      if (state !== 'new') {
        this.schedule(0);
        return;
      }
    }
    logger.info('retry_join: no leader took this node yet; trying again', { retry_in_ms: this.delayMs });
    this.schedule(this.delayMs);
    this.delayMs = Math.min(this.delayMs * 2, this.maxDelayMs);
  }
}

/** Read at each attempt, so that files replaced on disk (renewed certificates) are picked up. */
async function readTls(leader: RetryJoinLeader): Promise<LeaderTls> {
  const tls: LeaderTls = {};
  const read = async (file: string, what: string): Promise<string> => {
    try {
      return await readFile(file, 'utf8');
    } catch (err) {
      throw new Error(`cannot read the ${what} file "${file}": ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  if (leader.leaderCaCertFile) tls.ca = await read(leader.leaderCaCertFile, 'leader_ca_cert_file');
  if (leader.leaderClientCertFile) tls.cert = await read(leader.leaderClientCertFile, 'leader_client_cert_file');
  if (leader.leaderClientKeyFile) tls.key = await read(leader.leaderClientKeyFile, 'leader_client_key_file');
  if (leader.leaderTlsServername) tls.servername = leader.leaderTlsServername;
  return tls;
}
