/**
 * Drives the real `@octokit/rest` from Jest. The package is ESM-only, which Jest's CommonJS
 * module system cannot load without `--experimental-vm-modules`, so the SDK runs in a worker
 * thread (plain Node, outside Jest's loader) and each call is a message: the method path
 * (`actions.createOrUpdateRepoSecret`), its parameters, and back the status and data, or the
 * request error's status, message and body.
 */
import { Worker } from 'node:worker_threads';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');
const loaded = import(pathToFileURL(workerData.modulePath).href).then((m) => m.Octokit);
const clients = new Map();
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
parentPort.on('message', async ({ id, auth, baseUrl, method, params }) => {
  try {
    const Octokit = await loaded;
    const key = JSON.stringify([auth, baseUrl]);
    if (!clients.has(key)) clients.set(key, new Octokit({ ...(auth === undefined ? {} : { auth }), baseUrl, log: quiet }));
    const [group, name] = method.split('.');
    const response = await clients.get(key).rest[group][name](params);
    parentPort.postMessage({ id, result: { status: response.status, data: response.data ?? null } });
  } catch (error) {
    parentPort.postMessage({
      id,
      error: { name: String(error.name), status: error.status, message: String(error.message), data: error.response?.data ?? null },
    });
  }
});
`;

export interface OctokitResult {
  status: number;
  data: any;
}

export interface OctokitFailure extends Error {
  status: number | undefined;
  data: any;
}

export interface OctokitClient {
  call(method: string, params?: Record<string, unknown>): Promise<OctokitResult>;
}

export class OctokitBridge {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve(r: OctokitResult): void; reject(e: Error): void }>();
  private nextId = 0;

  constructor() {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { modulePath: require.resolve('@octokit/rest') } });
    this.worker.on('message', (message: { id: number; result?: OctokitResult; error?: { name: string; status?: number; message: string; data: unknown } }) => {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (!waiter) return;
      if (message.result) return waiter.resolve(message.result);
      const failure = Object.assign(new Error(message.error?.message ?? 'unknown'), {
        name: message.error?.name ?? 'Error',
        status: message.error?.status,
        data: message.error?.data,
      });
      waiter.reject(failure);
    });
    this.worker.on('error', (error) => {
      for (const waiter of this.pending.values()) waiter.reject(error);
      this.pending.clear();
    });
  }

  /** An Octokit client with `auth` (none when undefined) and `baseUrl`. */
  client(auth: string | undefined, baseUrl: string): OctokitClient {
    return {
      call: (method, params = {}) =>
        new Promise((resolve, reject) => {
          const id = this.nextId++;
          this.pending.set(id, { resolve, reject });
          this.worker.postMessage({ id, auth, baseUrl, method, params });
        }),
    };
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

/** Awaits a rejection and returns the request error. */
export async function octokitError(promise: Promise<unknown>): Promise<OctokitFailure> {
  try {
    await promise;
  } catch (error) {
    return error as OctokitFailure;
  }
  throw new Error('Expected the call to fail');
}
