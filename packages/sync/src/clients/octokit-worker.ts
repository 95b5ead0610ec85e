import { Worker } from 'node:worker_threads';

/*
 * The repository host's SDK (@octokit/rest) is ES modules only, and this server is CommonJS
 * (and its tests run under Jest's CommonJS loader), so the SDK runs in a worker thread, where
 * plain Node loads it with import(). Each call is a message: the method (`actions.getRepoSecret`),
 * the client's token and base URL, the parameters; back come the status and data, or the request
 * error's status and message.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');
const loaded = import(pathToFileURL(workerData.modulePath).href).then((m) => m.Octokit);
const clients = new Map();
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
parentPort.on('message', async ({ id, auth, baseUrl, method, params }) => {
  try {
    const Octokit = await loaded;
    const key = auth + '\\n' + baseUrl;
    if (!clients.has(key)) {
      if (clients.size > 64) clients.clear();
      clients.set(key, new Octokit({ auth, baseUrl, log: quiet, userAgent: 'strongroom-secret-sync', request: { timeout: 30000 } }));
    }
    const [group, name] = method.split('.');
    const response = await clients.get(key).rest[group][name](params);
    parentPort.postMessage({ id, result: { status: response.status, data: response.data ?? null } });
  } catch (error) {
    const message = error.response && error.response.data && typeof error.response.data.message === 'string' ? error.response.data.message : String(error.message);
    parentPort.postMessage({ id, error: { name: String(error.name), status: error.status, message } });
  }
});
`;

export interface OctokitReply {
  status: number;
  data: unknown;
}

/** A request the host refused (`status`), or that never got an answer (no status). */
export class OctokitCallError extends Error {
  constructor(message: string, readonly status: number | undefined) {
    super(message);
    this.name = 'OctokitCallError';
  }
}

let shared: OctokitWorker | null = null;

/** One worker for the process, started at first use; it does not keep the process alive. */
export function octokitWorker(): OctokitWorker {
  shared ??= new OctokitWorker();
  return shared;
}

export class OctokitWorker {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve(r: OctokitReply): void; reject(e: Error): void }>();
  private nextId = 0;

  constructor() {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { modulePath: require.resolve('@octokit/rest') } });
    this.worker.unref();
    this.worker.on('message', (m: { id: number; result?: OctokitReply; error?: { status?: number; message: string } }) => {
      const waiter = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (!waiter) return;
      if (m.result) waiter.resolve(m.result);
      else waiter.reject(new OctokitCallError(m.error?.message ?? 'unknown error', m.error?.status));
    });
    this.worker.on('error', (err) => {
      for (const waiter of this.pending.values()) waiter.reject(new OctokitCallError(err.message, undefined));
      this.pending.clear();
      if (shared === this) shared = null;
    });
  }

  call(auth: string, baseUrl: string, method: string, params: Record<string, unknown>): Promise<OctokitReply> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      // Referenced while a call is out, so that the process waits for its answer.
      this.worker.ref();
      this.worker.postMessage({ id, auth, baseUrl, method, params });
    }).finally(() => {
      if (this.pending.size === 0) this.worker.unref();
    }) as Promise<OctokitReply>;
  }
}
