import type { Readable } from 'node:stream';
import { BadRequestError, getJson, KeyedMutex, putJson, type Clock, type LogicalStorage, type Logger, type TimerHandle } from '@strongroom/core';
import { secretsOf, type SnapshotConfig } from './config';
import { freshStatus, type SnapshotStatus } from './status';
import { openTarget as defaultOpenTarget } from './targets';
import type { SnapshotTarget, StoredSnapshot } from './targets/target';

const CONFIG_PREFIX = 'core/snapshot-auto/config/';
const STATUS_PREFIX = 'core/snapshot-auto/status/';
/** How long stopping, or deleting a configuration, waits for aborted work to unwind. */
const STOP_WAIT_MS = 5_000;
/** How long settling an interrupted attempt may wait for its destination's listing. */
const RECOVER_WAIT_MS = 30_000;
/** Retrying an attempt that could not even be recorded: first after this, doubling up to the interval. */
const RETRY_FIRST_MS = 5_000;

export interface SchedulerOptions {
  /** The barrier: configurations hold credentials. */
  storage: LogicalStorage;
  clock: Clock;
  logger: Logger;
  /** The same stream `sys/storage/raft/snapshot` returns. */
  source: () => Promise<Readable>;
  openTarget?: (config: SnapshotConfig) => SnapshotTarget;
  /** Told of each attempt that ran to its end (metrics; must not throw or block). */
  observer?: SnapshotObserver;
}

/** One finished attempt of configuration `config`, for whoever keeps metrics. */
export interface SnapshotObserver {
  attempted(config: string, outcome: { durationMs: number; bytes: number; failed: boolean; at: number }): void;
  /** The configuration was deleted: what was kept for it can go. */
  removed?(config: string): void;
}

interface Job {
  timer: TimerHandle | null;
  run: Promise<void> | null;
  abort: AbortController | null;
  /** Attempts in a row that failed before they could be recorded (storage refused the write). */
  unrecorded: number;
}

/** `{file_prefix}-{Unix ns}.snap`, the names Vault gives its automated snapshots. */
export function snapshotName(filePrefix: string, ms: number): string {
  return `${filePrefix}-${BigInt(ms) * 1_000_000n}.snap`;
}

function snapshotStamp(filePrefix: string, name: string): bigint | null {
  if (!name.startsWith(`${filePrefix}-`)) return null;
  const m = /^(\d+)\.snap$/.exec(name.slice(filePrefix.length + 1));
  return m ? BigInt(m[1] as string) : null;
}

/** Resolves after `ms`, when `work` settles, or when `cut` is aborted, whichever is first. */
async function atMost(work: Promise<unknown>, ms: number, cut?: AbortSignal): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let onCut: (() => void) | undefined;
  await Promise.race([
    work.then(() => undefined, () => undefined),
    new Promise<void>((r) => {
      if (cut?.aborted) return r();
      timer = setTimeout(r, ms);
      onCut = () => r();
      cut?.addEventListener('abort', onCut, { once: true });
    }),
  ]);
  clearTimeout(timer);
  if (onCut) cut?.removeEventListener('abort', onCut);
}

/** The destination a configuration writes to, to tell two configurations that would share files. */
function destinationOf(target: SnapshotTarget): string {
  return target.url('');
}

/**
 * Runs every configuration on its interval, on the active node only. The schedule lives in
 * storage with the configuration: the next start is written before an attempt begins, and an
 * attempt still marked as running when a node becomes active was cut short by a restart or a
 * leader change. Such an attempt counts as done if its snapshot is in the destination, and is
 * run again at once otherwise, so no interval is skipped and none gets two snapshots.
 */
export class SnapshotScheduler {
  private readonly storage: LogicalStorage;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly source: () => Promise<Readable>;
  private readonly openTarget: (config: SnapshotConfig) => SnapshotTarget;
  private readonly observer: SnapshotObserver | undefined;
  private readonly jobs = new Map<string, Job>();
  /** Serializes the read-modify-write of one configuration's records. */
  private readonly lock = new KeyedMutex();
  private active = false;
  /** Aborted by `stop`: what waits on a destination for the active term gives up with it. */
  private term = new AbortController();
  private starting: Promise<void> = Promise.resolve();
  /** Configurations whose interrupted attempt is still being settled: not armed until it is. */
  private readonly recovering = new Set<string>();

  constructor(options: SchedulerOptions) {
    this.storage = options.storage;
    this.clock = options.clock;
    this.logger = options.logger;
    this.source = options.source;
    this.openTarget = options.openTarget ?? defaultOpenTarget;
    this.observer = options.observer;
  }

  /** Returns at once: settling interrupted attempts may wait on a slow destination. */
  async start(): Promise<void> {
    this.active = true;
    this.term = new AbortController();
    this.starting = this.resume().catch((err: unknown) => this.logger.error('automated snapshots: loading the schedules failed', { error: String(err) }));
  }

  /** Settles every configuration at once, so one slow destination holds up only its own. */
  private async resume(): Promise<void> {
    const names = await this.names();
    for (const name of names) this.recovering.add(name);
    await Promise.all(names.map(async (name) => {
      try {
        if (this.active) await this.recover(name);
      } catch (err) {
        this.logger.error('automated snapshot: settling an interrupted attempt failed', { config: name, error: String(err) });
      } finally {
        this.recovering.delete(name);
        this.arm(name);
      }
    }));
  }

  /** Stops timers and aborts attempts in progress; their status stays "running" for the next active node. */
  async stop(): Promise<void> {
    this.active = false;
    this.term.abort();
    const work: Promise<unknown>[] = [this.starting];
    for (const job of this.jobs.values()) {
      job.timer?.cancel();
      job.abort?.abort();
      if (job.run) work.push(job.run);
    }
    // A write that ignores its abort (a hung connection) must not keep the node from stepping
    // down: its attempt stays marked as running, and the next active node settles it.
    await atMost(Promise.allSettled(work), STOP_WAIT_MS);
    this.jobs.clear();
    this.recovering.clear();
  }

  names(): Promise<string[]> {
    return this.storage.list(CONFIG_PREFIX);
  }

  config(name: string): Promise<SnapshotConfig | null> {
    return getJson<SnapshotConfig>(this.storage, CONFIG_PREFIX + name);
  }

  status(name: string): Promise<SnapshotStatus | null> {
    return getJson<SnapshotStatus>(this.storage, STATUS_PREFIX + name);
  }

  /**
   * Creates or updates a configuration: `build` gets the stored one (or null) and returns the
   * new one, under the configuration's lock, so concurrent updates and deletes do not interleave.
   * A new configuration is first due one interval from now; a shorter interval brings the next
   * start forward.
   */
  async save(name: string, build: (existing: SnapshotConfig | null) => SnapshotConfig): Promise<void> {
    await this.lock.run(name, async () => {
      const config = build(await this.config(name));
      await this.refuseSharedDestination(config);
      const now = this.clock.now();
      const due = now + config.interval * 1000;
      const status = (await this.status(name)) ?? freshStatus(due);
      status.next = Math.min(status.next, due);
      await this.storage.txn([
        { type: 'put', key: CONFIG_PREFIX + name, value: Buffer.from(JSON.stringify(config)) },
        { type: 'put', key: STATUS_PREFIX + name, value: Buffer.from(JSON.stringify(status)) },
      ]);
    });
    this.arm(name);
  }

  /** Two configurations writing the same files would delete each other's snapshots through `retain`. */
  private async refuseSharedDestination(config: SnapshotConfig): Promise<void> {
    let own: SnapshotTarget;
    try {
      own = this.openTarget(config);
    } catch (err) {
      throw new BadRequestError(`the configuration cannot be used: ${describe(err, config)}`);
    }
    const mine = destinationOf(own);
    own.close();
    for (const other of await this.names()) {
      if (other === config.name) continue;
      const c = await this.config(other);
      if (!c || c.file_prefix !== config.file_prefix) continue;
      const target = this.openTarget(c);
      const same = destinationOf(target) === mine;
      target.close();
      if (same) throw new BadRequestError(`configuration "${other}" already writes snapshots with file_prefix "${config.file_prefix}" to the same place; use another path_prefix or file_prefix`);
    }
  }

  /** Deletes a configuration and its status; snapshots already written stay where they are. */
  async remove(name: string): Promise<void> {
    const job = this.jobs.get(name);
    if (job) {
      this.jobs.delete(name);
      job.timer?.cancel();
      job.abort?.abort();
      if (job.run) await atMost(job.run, STOP_WAIT_MS);
    }
    await this.lock.run(name, () => this.storage.txn([
      { type: 'delete', key: CONFIG_PREFIX + name },
      { type: 'delete', key: STATUS_PREFIX + name },
    ]));
    this.observer?.removed?.(name);
  }

  /** Sets the timer for the configuration's next start, unless an attempt is running (it re-arms when done). */
  private arm(name: string, retryInMs?: number): void {
    if (!this.active || this.recovering.has(name)) return;
    let job = this.jobs.get(name);
    if (!job) {
      job = { timer: null, run: null, abort: null, unrecorded: 0 };
      this.jobs.set(name, job);
    }
    if (job.run) return;
    job.timer?.cancel();
    job.timer = null;
    const current = job;
    void this.status(name).then((status) => {
      if (!status || !this.active || current.run || this.jobs.get(name) !== current) return;
      current.timer?.cancel();
      const due = Math.max(status.next, retryInMs === undefined ? 0 : this.clock.now() + retryInMs);
      current.timer = this.clock.setTimer(due - this.clock.now(), () => this.fire(name, current));
    }).catch((err: unknown) => this.logger.error('automated snapshot: reading the schedule failed', { config: name, error: String(err) }));
  }

  private fire(name: string, job: Job): void {
    job.timer = null;
    if (!this.active || job.run || this.jobs.get(name) !== job) return;
    const abort = new AbortController();
    job.abort = abort;
    let retryInMs: number | undefined;
    job.run = this.attempt(name, abort.signal)
      .then(() => { job.unrecorded = 0; })
      .catch((err: unknown) => {
        // Storage refused the attempt's record (this node is stepping down, say): try again
        // later rather than at once, since `next` was not moved on.
        job.unrecorded++;
        retryInMs = RETRY_FIRST_MS * 2 ** Math.min(job.unrecorded - 1, 10);
        this.logger.error('automated snapshot: could not record the attempt', { config: name, error: String(err) });
      })
      .finally(() => {
        job.run = null;
        job.abort = null;
        if (this.jobs.get(name) === job) this.arm(name, retryInMs);
      });
  }

  /** One attempt, if it is due (a long interval's timer may fire early: timers are capped). */
  private async attempt(name: string, signal: AbortSignal): Promise<void> {
    const begun = await this.lock.run(name, async () => {
      const [config, status] = await Promise.all([this.config(name), this.status(name)]);
      const now = this.clock.now();
      if (!config || !status || status.next > now || signal.aborted) return null;
      const file = snapshotName(config.file_prefix, now);
      let target: SnapshotTarget | null = null;
      let failure = '';
      try {
        target = this.openTarget(config);
      } catch (err) {
        failure = describe(err, config);
      }
      status.current = { start: now, name: file, url: target?.url(file) ?? '' };
      const next = status.next + config.interval * 1000;
      status.next = next > now ? next : now + config.interval * 1000;
      await putJson(this.storage, STATUS_PREFIX + name, status);
      return { config, target, file, failure };
    });
    if (!begun) return;
    const startedAt = performance.now();
    const { config, target, file } = begun;
    let size = 0;
    let error = begun.failure;
    if (target) {
      let data: Readable | null = null;
      try {
        data = await this.source();
        size = await target.write(file, data, signal);
        error = await this.applyRetention(config, target);
      } catch (err) {
        error = describe(err, config);
      } finally {
        // A writer that failed before reading leaves the stream, and the file behind it, open.
        data?.destroy();
        target.close();
      }
    }
    if (signal.aborted) return;
    const url = target?.url(file) ?? '';
    if (error) this.logger.warn('automated snapshot failed', { config: name, error });
    else this.logger.info('automated snapshot written', { config: name, url, bytes: size });
    this.observer?.attempted(name, { durationMs: performance.now() - startedAt, bytes: size, failed: error !== '', at: this.clock.now() });
    await this.finish(name, { url, size, error });
  }

  /** Records an attempt's outcome, unless the configuration was deleted meanwhile. */
  private finish(name: string, outcome: { url: string; size: number; error: string }): Promise<void> {
    return this.lock.run(name, async () => {
      const status = await this.status(name);
      if (!status?.current) return;
      status.lastStart = status.current.start;
      status.lastEnd = this.clock.now();
      status.lastError = outcome.error;
      status.consecutiveErrors = outcome.error ? status.consecutiveErrors + 1 : 0;
      if (!outcome.error || outcome.size > 0) {
        status.lastUrl = outcome.url;
        status.lastSize = outcome.size;
      }
      status.current = null;
      await putJson(this.storage, STATUS_PREFIX + name, status);
    });
  }

  /** Deletes the oldest snapshots beyond `retain`; returns an error text, or '' when all went well. */
  private async applyRetention(config: SnapshotConfig, target: SnapshotTarget): Promise<string> {
    try {
      const stamped = (await target.list())
        .map((s) => ({ name: s.name, stamp: snapshotStamp(config.file_prefix, s.name) }))
        .filter((s): s is { name: string; stamp: bigint } => s.stamp !== null)
        .sort((a, b) => (a.stamp < b.stamp ? 1 : a.stamp > b.stamp ? -1 : 0));
      for (const old of stamped.slice(config.retain)) await target.remove(old.name);
      return '';
    } catch (err) {
      return `the snapshot was written, but deleting the oldest beyond retain failed: ${describe(err, config)}`;
    }
  }

  /** Settles an attempt that an earlier active node left running (see the class comment). */
  private async recover(name: string): Promise<void> {
    const [config, status] = await Promise.all([this.config(name), this.status(name)]);
    const current = status?.current;
    if (!config || !status || !current) return;
    const term = this.term.signal;
    let written: StoredSnapshot | undefined;
    let target: SnapshotTarget | null = null;
    try {
      target = this.openTarget(config);
      // The configuration may have moved since: only its old destination can say.
      if (target.url(current.name) === current.url) {
        let listing: StoredSnapshot[] | null = null;
        await atMost(target.list().then((l) => { listing = l; }), RECOVER_WAIT_MS, term);
        written = (listing as StoredSnapshot[] | null)?.find((s) => s.name === current.name);
      }
    } catch {
      // The destination cannot say: take the snapshot again rather than risk skipping it.
    } finally {
      target?.close();
    }
    // Stepped down while the destination was asked: the attempt stays running for the next active node.
    if (term.aborted) return;
    if (written) {
      await this.finish(name, { url: current.url, size: written.size, error: '' });
      return;
    }
    await this.finish(name, { url: current.url, size: 0, error: 'interrupted: the active node stopped before the snapshot was written; it is taken again' });
    await this.lock.run(name, async () => {
      const s = await this.status(name);
      if (!s) return;
      s.next = Math.min(s.next, this.clock.now());
      await putJson(this.storage, STATUS_PREFIX + name, s);
    });
  }
}

/** An error as the status and the log show it: never with a credential in it. */
function describe(err: unknown, config: SnapshotConfig): string {
  let text = err instanceof Error ? err.message || err.name : String(err);
  for (const secret of secretsOf(config)) text = text.split(secret).join('[redacted]');
  return text;
}
