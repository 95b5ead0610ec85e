import { FakeClock } from './clock';
import { Core, type HaHooks, type LeaderInfo } from './core';
import { silentLogger } from './logger';
import { MemoryStorage } from './storage/memory-storage';
import { START, callCore, data, failure, okCore } from './testing/core-rig';

/**
 * Two cores over one storage stand in for two nodes of a cluster: the storage layer decides
 * which one is active, and the other must neither serve nor run background work.
 */
function node(storage: MemoryStorage, clock: FakeClock, leader: () => LeaderInfo | null, hooks: Partial<HaHooks> = {}): Core {
  return new Core({ storage, clock, logger: silentLogger, ha: { leader, ...hooks } });
}

describe('a core with HA', () => {
  const clock = new FakeClock(START);
  let storage: MemoryStorage;
  let leaderIs: 'a' | 'b' | null;
  let a: Core;
  let b: Core;
  const info = (self: 'a' | 'b') => (): LeaderInfo | null =>
    leaderIs === null ? null : { self: leaderIs === self, apiAddress: `http://${leaderIs}:8200`, clusterAddress: `${leaderIs}:8201` };

  beforeEach(() => {
    storage = new MemoryStorage();
    leaderIs = 'a';
    a = node(storage, clock, info('a'));
    b = node(storage, clock, info('b'));
  });
  afterEach(async () => {
    await a.close();
    await b.close();
  });

  async function initAndUnsealBoth(): Promise<string> {
    const init = await a.initialize(1, 1);
    await a.unseal(init.keys[0] as Buffer);
    await b.unseal(init.keys[0] as Buffer);
    return init.rootToken;
  }

  it('unseals into standby and serves only once activated', async () => {
    const root = await initAndUnsealBoth();
    expect(a.sealed).toBe(false);
    expect(a.standby).toBe(true);
    expect(await failure(callCore(a, 'read', 'sys/mounts', root))).toEqual({ status: 503, message: expect.stringContaining('standby') });

    await a.activate();
    expect(a.active).toBe(true);
    expect(a.standby).toBe(false);
    await okCore(a, 'update', 'sys/policies/acl/p', root, { policy: 'path "x" { capabilities = ["read"] }' });
  });

  it('reports standby in health (429 unless standbyok) and the leader in sys/leader', async () => {
    await initAndUnsealBoth();
    await a.activate();
    const health = await callCore(b, 'read', 'sys/health', undefined);
    expect(health.status).toBe(429);
    expect(health.body).toMatchObject({ initialized: true, sealed: false, standby: true });
    expect((await callCore(b, 'read', 'sys/health', undefined, { standbyok: true })).status).toBe(200);
    expect((await callCore(a, 'read', 'sys/health', undefined)).body).toMatchObject({ standby: false });

    expect((await callCore(b, 'read', 'sys/leader', undefined)).body).toMatchObject({
      ha_enabled: true, is_self: false, leader_address: 'http://a:8200', leader_cluster_address: 'a:8201',
    });
    expect((await callCore(a, 'read', 'sys/leader', undefined)).body).toMatchObject({ ha_enabled: true, is_self: true });
  });

  it('hands over: the new active node sees what the old one wrote, also under a rotated keyring', async () => {
    const root = await initAndUnsealBoth();
    await a.activate();
    await okCore(a, 'update', 'sys/rotate', root);
    await okCore(a, 'update', 'sys/policies/acl/written-by-a', root, { policy: 'path "x" { capabilities = ["read"] }' });
    await a.deactivate();
    expect(a.standby).toBe(true);

    leaderIs = 'b';
    await b.activate();
    expect(data(await okCore(b, 'read', 'sys/key-status', root))).toMatchObject({ term: 2 });
    expect(data(await okCore(b, 'read', 'sys/policies/acl/written-by-a', root))).toMatchObject({ name: 'written-by-a' });
    // The old active node forgot what it had loaded.
    expect((await callCore(a, 'read', 'sys/policies/acl/written-by-a', root)).status).toBe(503);
  });

  it('runs the init and unseal hooks around the seal', async () => {
    const calls: string[] = [];
    const hooked = node(new MemoryStorage(), clock, () => null, {
      beforeInit: async () => void calls.push('init'),
      beforeUnseal: async (rootKey) => void calls.push(`unseal:${rootKey.length}`),
    });
    const init = await hooked.initialize(1, 1);
    await hooked.unseal(init.keys[0] as Buffer);
    expect(calls).toEqual(['init', 'unseal:32']);
    await hooked.close();
  });

  it('refuses a second init before running the init hook', async () => {
    await a.initialize(1, 1);
    let ran = false;
    const again = node(storage, clock, () => null, { beforeInit: async () => void (ran = true) });
    await expect(again.initialize(1, 1)).rejects.toThrow('already initialized');
    expect(ran).toBe(false);
  });
});
