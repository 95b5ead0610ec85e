/**
 * HCL to JSON through @cdktf/hcl2json (HashiCorp's HCL parser compiled from Go to WebAssembly),
 * run in a worker thread. The parser's cost grows faster than its input and its Go runtime can
 * die on hostile input (deep nesting, memory), after which that instance refuses every call or
 * never answers. So parsing stays off the event loop, each parse has a time bound, and a worker
 * that timed out, died or threw anything but a syntax error is replaced by a fresh one.
 */
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';

/** `syntax`: the input is not HCL. `timeout`/`crashed`: the parser gave up on it. */
export type HclFailureKind = 'syntax' | 'timeout' | 'crashed';

export class HclParseError extends Error {
  constructor(readonly kind: HclFailureKind, message: string) {
    super(message);
    this.name = 'HclParseError';
  }
}

export interface HclParserOptions {
  /** Per parse, from handing the text to the worker (including a fresh worker's start). */
  readonly timeoutMs?: number;
}

// Policies under the size cap parse in well under a second even on a loaded machine; a worker
// also has to load and compile the parser first. Ten seconds leaves room for both without
// letting a stuck parse hold the queue for long.
const DEFAULT_TIMEOUT_MS = 10_000;

// Runs in the worker. Go's `main` never returns, so the program ending means its runtime died:
// the worker then exits rather than leave callers waiting. What the runtime prints as it dies
// (megabytes of goroutine frames, written straight to the process's stderr) is of no use to a
// caller and must not flood the server's log, so the worker's output is dropped. These hooks
// reach into the package's internals; if those move, the hooks are skipped and the time bound
// still catches a dead runtime.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const path = require('node:path');
process.stdout.write = process.stderr.write = () => true;
try {
  require(path.join(workerData.packageDir, 'wasm', 'bridge_wasm_exec.js'));
  const Go = globalThis.Go;
  globalThis.Go = class extends Go {
    run(instance) {
      const exited = super.run(instance);
      exited.then(() => process.exit(1), () => process.exit(1));
      return exited;
    }
  };
  const fs = globalThis.fs;
  globalThis.fs = Object.assign(Object.create(fs), {
    writeSync(fd, buf) {
      return fd === 1 || fd === 2 ? buf.length : fs.writeSync(fd, buf);
    },
  });
} catch {}
const { parse } = require(workerData.packageDir);
parentPort.on('message', ({ id, text }) => {
  parse('policy.hcl', text)
    .then((value) => parentPort.postMessage({ id, json: JSON.stringify(value) }))
    .catch((err) => parentPort.postMessage({ id, error: String((err && err.message) || err) }));
});
`;

// Every diagnostic about the input comes back from hcl2json's Go side with this prefix; any other
// error (a JavaScript stack overflow inside the bridge, "Go program has already exited") means
// the instance is no longer trustworthy.
const SYNTAX_ERROR_PREFIX = 'parse config:';

interface Job {
  readonly text: string;
  readonly timeoutMs: number;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: HclParseError) => void;
  /** Set once the job has been handed to a second worker. */
  retried?: boolean;
}

interface Running {
  readonly id: number;
  readonly job: Job;
  readonly worker: Worker;
  /** Whether this worker had parsed nothing before this job. */
  readonly fresh: boolean;
  readonly timer: NodeJS.Timeout;
}

interface WorkerReply {
  readonly id: number;
  readonly json?: string;
  readonly error?: string;
}

/** One worker, one parse at a time, in the order asked. */
export class HclParser {
  private readonly timeoutMs: number;
  private readonly queue: Job[] = [];
  private worker: Worker | undefined;
  /** Jobs the current worker has been given. */
  private served = 0;
  private running: Running | undefined;
  private nextId = 0;

  constructor(options: HclParserOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** The document as JSON-shaped data; rejects with an HclParseError. */
  parse(text: string, options: HclParserOptions = {}): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ text, timeoutMs: options.timeoutMs ?? this.timeoutMs, resolve, reject });
      this.pump();
    });
  }

  /** Stops the worker; parses still queued or running are refused. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    const closed = new HclParseError('crashed', 'the HCL parser was shut down');
    for (const job of this.queue.splice(0)) job.reject(closed);
    if (this.running) this.finish(this.running, closed);
    if (worker) await worker.terminate();
  }

  private pump(): void {
    if (this.running) return;
    const job = this.queue.shift();
    if (!job) {
      // An idle worker must not keep the process alive.
      this.worker?.unref();
      return;
    }
    const worker = this.worker ?? this.start();
    worker.ref();
    const id = ++this.nextId;
    const running: Running = {
      id,
      job,
      worker,
      fresh: this.served++ === 0,
      timer: setTimeout(() => {
        this.retire(worker);
        this.finish(running, new HclParseError('timeout', `parsing took longer than ${job.timeoutMs} ms`));
      }, job.timeoutMs),
    };
    this.running = running;
    worker.postMessage({ id, text: job.text });
  }

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { packageDir: dirname(require.resolve('@cdktf/hcl2json/package.json')) },
    });
    worker.on('message', (reply: WorkerReply) => this.onReply(worker, reply));
    // An uncaught error in the worker ends it; 'exit' follows and settles the running parse.
    worker.on('error', () => undefined);
    worker.on('exit', () => this.onExit(worker));
    this.worker = worker;
    this.served = 0;
    return worker;
  }

  private onReply(worker: Worker, reply: WorkerReply): void {
    const running = this.running;
    if (!running || running.worker !== worker || running.id !== reply.id) return;
    if (reply.error === undefined) {
      this.finish(running, undefined, JSON.parse(reply.json ?? 'null'));
    } else if (reply.error.startsWith(SYNTAX_ERROR_PREFIX)) {
      this.finish(running, new HclParseError('syntax', reply.error));
    } else {
      this.retire(worker);
      this.crashed(running, 'the HCL parser failed on this input');
    }
  }

  private onExit(worker: Worker): void {
    if (this.worker === worker) this.worker = undefined;
    const running = this.running;
    if (running?.worker === worker) this.crashed(running, 'the HCL parser stopped on this input');
  }

  /**
   * Hostile input can leave a runtime that still answers but fails the next, innocent parse. So a
   * job that broke a worker which had parsed before gets one more try on a fresh worker; one that
   * breaks a fresh worker is refused, which bounds what any input can cost to two attempts.
   */
  private crashed(running: Running, message: string): void {
    if (this.running !== running) return;
    const job = running.job;
    if (running.fresh || job.retried) {
      this.finish(running, new HclParseError('crashed', message));
      return;
    }
    job.retried = true;
    this.queue.unshift(job);
    this.settle(running);
  }

  private retire(worker: Worker): void {
    if (this.worker === worker) this.worker = undefined;
    void worker.terminate();
  }

  private finish(running: Running, err: HclParseError | undefined, value?: unknown): void {
    if (this.running !== running) return;
    if (err) running.job.reject(err);
    else running.job.resolve(value);
    this.settle(running);
  }

  private settle(running: Running): void {
    clearTimeout(running.timer);
    this.running = undefined;
    this.pump();
  }
}
