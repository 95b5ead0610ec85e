import { Worker } from 'node:worker_threads';
import { frameRecords, writeUtf8 } from './snapshot-file';

/** A contiguous run of keys: from `gte` up to `lt` (or the end of the keys when absent). */
export interface KeyRange {
  gte: string;
  lt?: string;
}

export interface ScanThreadOptions {
  /** Bytes a thread may frame ahead of what the stream has taken from it. */
  creditBytes: number;
  /** How long a thread may take to start, or to take its snapshot, before the scan fails. */
  timeoutMs: number;
}

interface ThreadData {
  classicLevel: string;
  location: string;
  creditBytes: number;
  batchRecords: number;
  batchBytes: number;
}

/** A thread's ranges, each with its place among all the ranges. */
type ThreadRanges = Array<KeyRange & { index: number }>;
type ToThread = { type: 'capture'; ranges: ThreadRanges } | { type: 'credit'; bytes: number } | { type: 'stop' };
type FromThread =
  | { type: 'ready' }
  | { type: 'captured' }
  | { type: 'chunk'; range: number; bytes: ArrayBuffer; length: number }
  | { type: 'end'; range: number }
  | { type: 'error'; message: string };

/** Records per read and bytes LevelDB gathers for one, as a single-thread view reads them. */
const BATCH_RECORDS = 1024;
const BATCH_BYTES = 1024 * 1024;
const YOUNG_GENERATION_MB = 4;
/** How long a stopped thread may take to release what it holds before it is ended. */
const STOP_GRACE_MS = 10_000;

/**
 * A scan thread's whole program, handed to the thread as source text after `writeUtf8`'s and
 * `frameRecords`'s: it uses nothing from this module, and frames records with the very function
 * the main thread's encoder uses. It opens the database the main thread shares, takes a LevelDB
 * snapshot when told to (while the main thread holds applies), then reads its ranges in key order
 * (given with the capture) and posts each batch framed, stopping while the main thread owes it
 * credit. It releases every
 * iterator, its snapshot and its handle before it ends, whether it finished, failed or was stopped.
 */
function threadProgram(frame: typeof frameRecords): void {
  // No optional chaining or other syntax a transpiler may turn into calls of its own helpers.
  const threads = require('node:worker_threads') as typeof import('node:worker_threads');
  const port = threads.parentPort as import('node:worker_threads').MessagePort;
  const data = threads.workerData as ThreadData;
  const { ClassicLevel } = require(data.classicLevel) as typeof import('classic-level');
  const db = new ClassicLevel<string, Buffer>(data.location, { keyEncoding: 'utf8', valueEncoding: 'buffer', multithreading: true, createIfMissing: false });
  let snapshot: ReturnType<typeof db.snapshot> | undefined;
  let it: ReturnType<typeof db.iterator<string, Buffer>> | undefined;
  let credit = data.creditBytes;
  let stopping = false;
  let wake: (() => void) | undefined;
  let released: Promise<void> | undefined;
  const poke = () => {
    const w = wake;
    wake = undefined;
    if (w) w();
  };
  const release = () => {
    if (!released) {
      stopping = true;
      poke();
      released = (async () => {
        if (it) await it.close().catch(() => undefined);
        if (snapshot) await snapshot.close().catch(() => undefined);
        await db.close().catch(() => undefined);
        port.close();
      })();
    }
    return released;
  };
  const fail = (err: unknown) => {
    if (!stopping) port.postMessage({ type: 'error', message: err instanceof Error ? err.message : String(err) });
    void release();
  };
  const run = async (ranges: ThreadRanges) => {
    for (const range of ranges) {
      const bounds = range.lt === undefined ? { gte: range.gte } : { gte: range.gte, lt: range.lt };
      it = db.iterator<string, Buffer>({ ...bounds, snapshot, highWaterMarkBytes: data.batchBytes });
      // The newest key passed on whose bytes are known: a re-read starts just after it.
      let after: Buffer | string | undefined;
      for (;;) {
        while (credit <= 0 && !stopping) await new Promise<void>((resolve) => { wake = resolve; });
        if (stopping) return;
        const batch: Array<[string | Buffer, Buffer]> = await it.nextv(data.batchRecords);
        if (stopping) return;
        if (batch.length === 0) break;
        for (let i = 0; i < batch.length; i++) {
          const key = batch[i]![0] as string;
          if (key.indexOf('\uFFFD') === -1) {
            after = key;
            continue;
          }
          // Bytes that are not UTF-8 decode to U+FFFD, which encodes back to other bytes: each
          // run of keys that may be such is read again as bytes, as a single-thread view does.
          let end = i + 1;
          while (end < batch.length && (batch[end]![0] as string).indexOf('\uFFFD') !== -1) end++;
          const from = after === undefined ? { gte: Buffer.from(range.gte, 'utf8') } : { gt: typeof after === 'string' ? Buffer.from(after, 'utf8') : after };
          const exact = await db.keys<Buffer>({ ...from, keyEncoding: 'buffer', snapshot, limit: end - i }).all();
          for (let j = i; j < end; j++) batch[j]![0] = exact[j - i]!;
          after = exact[exact.length - 1];
          i = end - 1;
        }
        const framed = frame(batch);
        // A small buffer may sit in Buffer's shared pool, which must not be transferred.
        let bytes: ArrayBuffer;
        if (framed.length >= 8192 && framed.byteOffset === 0) {
          bytes = framed.buffer as ArrayBuffer;
        } else {
          bytes = new ArrayBuffer(framed.length);
          new Uint8Array(bytes).set(framed);
        }
        credit -= framed.length;
        port.postMessage({ type: 'chunk', range: range.index, bytes, length: framed.length }, [bytes]);
      }
      const done = it;
      it = undefined;
      await done.close();
      port.postMessage({ type: 'end', range: range.index });
    }
  };
  port.on('message', (msg: ToThread) => {
    if (msg.type === 'credit') {
      credit += msg.bytes;
      poke();
    } else if (msg.type === 'stop') {
      void release();
    } else if (!stopping) {
      try {
        snapshot = db.snapshot();
      } catch (err) {
        fail(err);
        return;
      }
      port.postMessage({ type: 'captured' });
      run(msg.ranges).then(() => undefined, fail);
    }
  });
  db.open().then(() => port.postMessage({ type: 'ready' }), fail);
}

const THREAD_SOURCE = `${writeUtf8.toString()}\n${frameRecords.toString()}\n(${threadProgram.toString()})(${frameRecords.name})`;

interface Thread {
  worker: Worker;
  exited: Promise<void>;
}

/**
 * Threads that read contiguous key ranges of one database at one point in its history and hand
 * back the records framed, in key order. Ranges go to the threads in turn, so while the stream
 * takes one range the other threads read their next ones; each reads ahead at most
 * `creditBytes`, so memory stays bounded whatever the state's size. The threads are started
 * for one scan and end when it is closed (as a stream's end or destruction closes it): until
 * then they keep the process alive, as the scan's I/O on the main thread would.
 */
export class ScanThreads {
  private readonly threads: Thread[] = [];
  private queues: Buffer[][] = [];
  private ended: boolean[] = [];
  /** The thread (index) that reads each range. */
  private owner: number[] = [];
  private failure: Error | undefined;
  private stopping = false;
  private closing: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private listeners = new Set<(msg: FromThread, thread: number) => void>();
  private endedResolve!: () => void;
  /** Resolves once the scan is closed and every thread has ended. */
  readonly closed = new Promise<void>((resolve) => { this.endedResolve = resolve; });

  private constructor(private readonly options: ScanThreadOptions) {}

  /**
   * Starts `count` threads on the database at `location` (opened shared), ready to capture; the
   * ranges come with the capture, so that they can be planned while the threads start.
   */
  static async start(location: string, count: number, options: ScanThreadOptions): Promise<ScanThreads> {
    const scan = new ScanThreads(options);
    const classicLevel = require.resolve('classic-level');
    const workerData: ThreadData = { classicLevel, location, creditBytes: options.creditBytes, batchRecords: BATCH_RECORDS, batchBytes: BATCH_BYTES };
    for (let t = 0; t < Math.max(1, count); t++) scan.spawn(t, workerData);
    try {
      await scan.all('ready');
    } catch (err) {
      await scan.close();
      throw err;
    }
    return scan;
  }

  /** The threads, for tests that end one mid-scan. */
  get workers(): readonly Worker[] {
    return this.threads.map((t) => t.worker);
  }

  /**
   * Has every thread take its LevelDB snapshot, to read `ranges` (in turn, in key order) from it;
   * resolves once all have. The caller holds every write to the database until then: that makes
   * the threads' snapshots one point in its history.
   */
  async capture(ranges: readonly KeyRange[]): Promise<void> {
    const n = this.threads.length;
    this.queues = ranges.map(() => []);
    this.ended = ranges.map(() => false);
    this.owner = ranges.map((_, i) => i % n);
    this.threads.forEach((t, i) => this.post(t, { type: 'capture', ranges: ranges.flatMap((r, index) => (index % n === i ? [{ ...r, index }] : [])) }));
    try {
      await this.all('captured');
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  /** The framed records of every range, in key order; ending the iteration (or a thread failing) stops every thread. */
  async *chunks(): AsyncGenerator<Buffer> {
    try {
      for (let r = 0; r < this.queues.length; r++) {
        const queue = this.queues[r]!;
        for (;;) {
          if (this.failure) throw this.failure;
          const chunk = queue.shift();
          if (chunk) {
            this.post(this.threads[this.owner[r]!]!, { type: 'credit', bytes: chunk.length });
            yield chunk;
            continue;
          }
          if (this.ended[r]) break;
          await new Promise<void>((resolve) => { this.wake = resolve; });
        }
      }
    } finally {
      await this.close();
    }
  }

  /** Stops every thread and waits until each has released what it holds (or was ended). */
  close(): Promise<void> {
    this.stopping = true;
    this.closing ??= (async () => {
      for (const t of this.threads) this.post(t, { type: 'stop' });
      await Promise.all(this.threads.map(async (t) => {
        let timer: NodeJS.Timeout | undefined;
        const grace = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, STOP_GRACE_MS);
          timer.unref();
        });
        await Promise.race([t.exited, grace]);
        clearTimeout(timer);
        await t.worker.terminate();
      }));
      this.queues.forEach((q) => { q.length = 0; });
      this.endedResolve();
    })();
    return this.closing;
  }

  private spawn(index: number, workerData: ThreadData): void {
    // A small young generation: a thread's garbage is each batch's records, dead once framed,
    // and V8's default lets several megabytes of them pile up per thread before a collection.
    const worker = new Worker(THREAD_SOURCE, {
      eval: true, workerData, env: {}, argv: [], execArgv: [], stdin: false, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    const exited = new Promise<void>((resolve) => {
      worker.once('exit', (code) => {
        if (!this.stopping) this.fail(new Error(`snapshot scan thread ${index} exited (code ${code}) before the scan ended`));
        resolve();
      });
    });
    worker.on('error', (err) => this.fail(new Error(`snapshot scan thread ${index} failed: ${err.message}`)));
    worker.on('message', (msg: FromThread) => this.receive(index, msg));
    this.threads.push({ worker, exited });
  }

  private receive(thread: number, msg: FromThread): void {
    if (msg.type === 'chunk') {
      this.queues[msg.range]!.push(Buffer.from(msg.bytes, 0, msg.length));
    } else if (msg.type === 'end') {
      this.ended[msg.range] = true;
    } else if (msg.type === 'error') {
      this.fail(new Error(`snapshot scan thread ${thread} failed: ${msg.message}`));
      return;
    }
    for (const l of this.listeners) l(msg, thread);
    this.poke();
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const l of this.listeners) l({ type: 'error', message: err.message }, -1);
    this.poke();
  }

  private poke(): void {
    const w = this.wake;
    this.wake = undefined;
    if (w) w();
  }

  private post(thread: Thread, msg: ToThread): void {
    try {
      thread.worker.postMessage(msg);
    } catch {
      // A thread that has ended takes nothing; its exit already failed the scan if it mattered.
    }
  }

  /** Resolves once every thread has sent `type`; rejects on the first failure or after the timeout. */
  private all(type: 'ready' | 'captured'): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiting = new Set(this.threads.map((_, i) => i));
      const done = (err?: Error) => {
        clearTimeout(timer);
        this.listeners.delete(listener);
        if (err) reject(err);
        else resolve();
      };
      const listener = (msg: FromThread, thread: number) => {
        if (msg.type === 'error' || this.failure) {
          done(this.failure ?? new Error(msg.type === 'error' ? msg.message : 'snapshot scan failed'));
          return;
        }
        if (msg.type === type) waiting.delete(thread);
        if (waiting.size === 0) done();
      };
      const timer = setTimeout(() => done(new Error(`snapshot scan threads did not ${type === 'ready' ? 'start' : 'take their snapshots'} within ${this.options.timeoutMs} ms`)), this.options.timeoutMs);
      if (this.failure) {
        done(this.failure);
        return;
      }
      this.listeners.add(listener);
    });
  }
}
