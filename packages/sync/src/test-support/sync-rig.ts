import { Core, FakeClock, MemoryStorage, silentLogger, testing, type Operation } from '@strongroom/core';
import type { SyncSettings } from '../destination-types';
import { secretSync } from '../extension';
import { FakeDestination, FakeFeed, FakeKv } from './fakes';

/** A Core with secret sync, initialized and unsealed, driven through `core.handle` like the API does. */
export interface SyncRig {
  /** The current Core; replaced by `restart`. */
  readonly core: Core;
  /** The physical storage, under the barrier. */
  storage: MemoryStorage;
  clock: FakeClock;
  kv: FakeKv;
  feed: FakeFeed;
  destination: FakeDestination;
  root: string;
  call(op: Operation, path: string, data?: Record<string, unknown>, token?: string): Promise<testing.Reply>;
  ok(op: Operation, path: string, data?: Record<string, unknown>, token?: string): Promise<testing.Reply>;
  /** Closes the Core and unseals a new one over the same storage. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export const TEST_SETTINGS: SyncSettings = { cloud2KeyVaultOrigins: ['https://127.0.0.1:8443'], deployhostApiUrl: 'https://127.0.0.1:1', repohostApiUrl: 'https://127.0.0.1:1' };

export async function syncRig(settings: SyncSettings = TEST_SETTINGS, options: { reconcileBatch?: number } = {}): Promise<SyncRig> {
  const storage = new MemoryStorage();
  const clock = new FakeClock(testing.START);
  const feed = new FakeFeed();
  const kv = new FakeKv(feed);
  const destination = new FakeDestination();
  const build = () => new Core({
    storage, clock, logger: silentLogger, engines: [],
    extensions: [(c) => secretSync({ storage: c.barrier, settings, mounts: kv, reader: kv, feed, clients: destination.clients, clock, ...options })],
  });
  let core = build();
  const { keys, rootToken } = await core.initialize(1, 1);
  const key = keys[0] as Buffer;
  await core.unseal(key);
  return {
    get core() {
      return core;
    },
    storage, clock, kv, feed, destination, root: rootToken,
    call: (op, path, data = {}, token = rootToken) => testing.callCore(core, op, path, token, data),
    ok: (op, path, data = {}, token = rootToken) => testing.okCore(core, op, path, token, data),
    async restart() {
      await core.close();
      core = build();
      await core.unseal(key);
    },
    close: () => core.close(),
  };
}
