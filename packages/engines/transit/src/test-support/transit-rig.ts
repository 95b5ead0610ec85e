import {
  BackendHarness, FakeClock, MemoryStorage,
  type BackendResponse, type Logger, type LogicalStorage, type TxnOp,
} from '@strongroom/core';
import { createTransitBackend, type TransitBackend } from '../transit-engine';

export interface TransitRig {
  h: BackendHarness;
  clock: FakeClock;
  backend: TransitBackend;
  storage: CountingStorage;
  errors: string[];
}

/** Memory storage that counts reads, so tests can prove the hot path does not touch storage. */
export class CountingStorage implements LogicalStorage {
  gets = 0;
  puts = 0;

  constructor(readonly inner: LogicalStorage = new MemoryStorage()) {}

  get(key: string): Promise<Buffer | null> {
    this.gets++;
    return this.inner.get(key);
  }

  put(key: string, value: Buffer): Promise<void> {
    this.puts++;
    return this.inner.put(key, value);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }

  list(prefix: string): Promise<string[]> {
    return this.inner.list(prefix);
  }

  txn(ops: TxnOp[]): Promise<void> {
    return this.inner.txn(ops);
  }
}

/** A transit backend over memory storage and a fake clock (2026-01-01T00:00:00Z). */
export function transitRig(options: { storage?: LogicalStorage; clock?: FakeClock } = {}): TransitRig {
  const clock = options.clock ?? new FakeClock();
  const errors: string[] = [];
  const logger: Logger = {
    debug() {}, info() {}, warn() {},
    error(msg, fields) { errors.push(`${msg} ${JSON.stringify(fields ?? {})}`); },
  };
  const backend = createTransitBackend({ clock, logger });
  const storage = new CountingStorage(options.storage ?? new MemoryStorage());
  const h = new BackendHarness(backend, { path: 'transit/', accessor: 'transit_1234' }, storage);
  return { h, clock, backend, storage, errors };
}

export { expectBadRequest as badRequest, expectFailure as failure } from '@strongroom/core';

export const b64 = (text: string | Buffer): string => (typeof text === 'string' ? Buffer.from(text) : text).toString('base64');
export const unb64 = (text: unknown): string => Buffer.from(String(text), 'base64').toString('utf8');

/** Unix seconds of the fake clock's start, as a symmetric key read shows creation times. */
export const T0_SECONDS = Date.UTC(2026, 0, 1) / 1000;

export function data(resp: BackendResponse | null): Record<string, unknown> {
  if (!resp?.data) throw new Error('expected a response with data');
  return resp.data;
}

export async function encrypt(h: BackendHarness, name: string, plaintext: string, extra: Record<string, unknown> = {}): Promise<string> {
  return String(data(await h.request('write', `encrypt/${name}`, { plaintext: b64(plaintext), ...extra }))['ciphertext']);
}

export async function decrypt(h: BackendHarness, name: string, ciphertext: string, extra: Record<string, unknown> = {}): Promise<string> {
  return unb64(data(await h.request('write', `decrypt/${name}`, { ciphertext, ...extra }))['plaintext']);
}

export interface BatchResult {
  ciphertext?: string;
  plaintext?: string;
  key_version?: number;
  reference: string;
  error?: string;
}

export function batchResults(resp: BackendResponse | null): BatchResult[] {
  return data(resp)['batch_results'] as BatchResult[];
}
