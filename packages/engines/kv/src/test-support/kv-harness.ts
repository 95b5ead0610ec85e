import {
  BackendHarness, EventBus, FakeClock, MemoryStorage, silentLogger, StrongroomError,
  type KvEvent, type LogicalStorage, type MountSettings,
} from '@strongroom/core';
import { createKvBackend, type KvBackend } from '../kv-engine';

export interface KvTestRig {
  h: BackendHarness;
  clock: FakeClock;
  events: KvEvent[];
  backend: KvBackend;
}

/** A KV backend over memory storage, a fake clock and an event bus that records what it sees. */
export function kvRig(options: { mount?: Partial<MountSettings>; storage?: LogicalStorage; version?: string | null } = {}): KvTestRig {
  const clock = new FakeClock();
  const bus = new EventBus();
  const events: KvEvent[] = [];
  bus.subscribe('kv', (e) => { events.push(e); });
  const backend = createKvBackend({ clock, events: bus, logger: silentLogger });
  const version = options.version === undefined ? '2' : options.version;
  const h = new BackendHarness(
    backend,
    { path: 'secret/', accessor: 'kv_1234', options: version === null ? {} : { version }, ...options.mount },
    options.storage ?? new MemoryStorage(),
  );
  return { h, clock, events, backend };
}

/** Awaits a request expected to fail with `status`, returning the error for closer checks. */
export async function failure(p: Promise<unknown>, status: number): Promise<StrongroomError> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  if (!(caught instanceof StrongroomError)) throw new Error(`expected a StrongroomError with status ${status}, got ${String(caught)}`);
  if (caught.status !== status) throw new Error(`expected status ${status}, got ${caught.status}: ${caught.message}`);
  return caught;
}

/** Awaits a request expected to be refused with 400, checking that the message names `field`. */
export async function badRequest(p: Promise<unknown>, field: string): Promise<string> {
  const err = await failure(p, 400);
  if (!err.message.includes(`"${field}"`)) throw new Error(`expected the 400 to name "${field}", got: ${err.message}`);
  return err.message;
}

export const T0 = '2026-01-01T00:00:00Z';
