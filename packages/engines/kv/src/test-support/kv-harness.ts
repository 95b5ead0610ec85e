import {
  BackendHarness, EventBus, FakeClock, MemoryStorage, silentLogger,
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

export { expectBadRequest as badRequest, expectFailure as failure } from '@strongroom/core';

export const T0 = '2026-01-01T00:00:00Z';
