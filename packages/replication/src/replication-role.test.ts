import type { Check } from '@strongroom/raft';
import type { ClusterNode } from '@strongroom/cluster';
import { FakeClock, MemoryStorage, NotFoundError, silentLogger, systemClock, type Core, type TxnOp } from '@strongroom/core';
import { createActivationSigningKey, signActivationJwt } from './activation/activation-jwt';
import { encryptToSecondary } from './activation/secondary-key';
import { ReplicationRole, ROLE_RETRY_FIRST_MS, ROLE_RETRY_LONGEST_MS, RoleReloader, reloadRoles } from './replication-role';
import type { RoleRuntime } from './role-runtime';
import { stateKey, type ReplicationKind, type RoleState } from './role-state';
import { classifyKey } from './key-space';

/** A cluster's Raft store as ReplicationRole uses it: every check passes (one writer here). */
class Store extends MemoryStorage {
  async checkAndSet(_checks: readonly Check[], ops: readonly TxnOp[]): Promise<boolean> {
    await this.txn([...ops]);
    return true;
  }
}

function replicatedKeys(storage: Store): string[] {
  return [...storage.data.keys()].filter((key) => classifyKey(key) !== null);
}

it('starts following the primary only once the secondary\'s own data is wiped', async () => {
  const storage = new Store();
  for (const key of ['core/keyring', 'core/mounts', 'logical/abc/secret/k1', 'sys/token/id/t1']) await storage.put(key, Buffer.from('old'));
  const cluster = {
    storage, advert: { api: 'http://127.0.0.1:1', cluster: '127.0.0.1:2' }, refreshActive: async () => {},
  } as unknown as ClusterNode;
  const dr = new ReplicationRole({
    kind: 'dr', core: {} as Core, cluster, logger: silentLogger, clock: systemClock,
    merkle: { status: () => ({ root: '', corrupted: false, lastReindexEpoch: '', lastCheckEpoch: '', reindex: null }), reindex: async () => ({}), check: async () => ({}) },
    operationTokens: { verify: async () => false, revoke: async () => {} },
  });
  // What the runtime sees when told to follow a primary: the data a stream would start from.
  const seenWhenFollowing: string[][] = [];
  const runtime: RoleRuntime = {
    stateChanged: (state: RoleState) => {
      // The runtime streams from a primary only once no wipe is pending.
      if (state.mode === 'secondary' && state.primary && !state.wipe_pending) seenWhenFollowing.push(replicatedKeys(storage));
    },
    lastWal: () => 0, secondaries: () => [], secondaryStatus: () => null, disconnect: () => {},
    activate: async () => {}, pickPrimary: async () => '', pathsFilter: () => null,
    forwardWrite: async () => ({ status: 200, lastWal: 0, warnings: [] }),
  };
  dr.attachRuntime(runtime);

  const publicKey = await dr.generatePublicKey();
  const material = {
    secondary_id: 'dr-east',
    primary: { cluster_id: 'c1', wal_source: 'w1', cluster_addrs: ['127.0.0.1:3'], api_addr: 'http://127.0.0.1:4', ca_cert: 'ca', cert: 'cert', key: 'key' },
  };
  await dr.enableSecondary({ token: encryptToSecondary(publicKey, Buffer.from(JSON.stringify(material))), primaryApiAddr: '', caFile: '', caPath: '' });

  expect(seenWhenFollowing).toEqual([[]]);
  expect(dr.current).toMatchObject({ mode: 'secondary', secondary_id: 'dr-east', primary: { cluster_id: 'c1' } });
  expect(replicatedKeys(storage)).toEqual([]);
});

describe('the performance kind', () => {
  const material = (kind?: 'dr' | 'performance') => ({
    ...(kind ? { kind } : {}), secondary_id: 'perf-west',
    primary: { cluster_id: 'c1', wal_source: 'w1', cluster_addrs: ['127.0.0.1:3'], api_addr: 'http://127.0.0.1:4', ca_cert: 'ca', cert: 'cert', key: 'key' },
  });

  function roles(runtime: Partial<RoleRuntime> = {}, operationTokenValid = false) {
    const storage = new Store();
    const cluster = {
      storage, advert: { api: 'http://127.0.0.1:1', cluster: '127.0.0.1:2' }, refreshActive: async () => {}, clusterCa: () => 'cluster-ca',
      configuration: () => ({ servers: [] }),
    } as unknown as ClusterNode;
    const core = { sealed: false, seal: { holdsStoredRootKey: async () => true, rootKeyForSecondary: async () => null, wrapForThisCluster: async () => false, adoptAutoSealedRootKey: async () => false } } as unknown as Core;
    const merkle = { status: () => ({ root: '', corrupted: false, lastReindexEpoch: '', lastCheckEpoch: '', reindex: null }), reindex: async () => ({}), check: async () => ({}) };
    let dr: ReplicationRole | null = null;
    const perf = new ReplicationRole({ kind: 'performance', core, cluster, logger: silentLogger, clock: systemClock, merkle, other: () => dr });
    dr = new ReplicationRole({
      kind: 'dr', core, cluster, logger: silentLogger, clock: systemClock, merkle, other: () => perf,
      operationTokens: { verify: async () => operationTokenValid, revoke: async () => {} },
    });
    const activated: string[] = [];
    const full: RoleRuntime = {
      stateChanged: () => {}, lastWal: () => 0, secondaries: () => [], secondaryStatus: () => null, disconnect: () => {},
      activate: async (link) => { activated.push(link.cluster_id); }, pickPrimary: async () => '', pathsFilter: () => null,
      forwardWrite: async () => ({ status: 200, lastWal: 0, warnings: [] }), ...runtime,
    };
    perf.attachRuntime(full);
    dr.attachRuntime(full);
    return { storage, perf, dr, activated };
  }

  it('refuses a DR token at performance enable before it is spent, and the reverse', async () => {
    const { perf, dr, activated } = roles();
    const perfKey = await perf.generatePublicKey();
    const drToken = encryptToSecondary(perfKey, Buffer.from(JSON.stringify(material())));
    await expect(perf.enableSecondary({ token: drToken, primaryApiAddr: '', caFile: '', caPath: '' }))
      .rejects.toThrow('invalid value for "token": it is a DR secondary token; use it with sys/replication/dr/secondary/enable');
    const drKey = await dr.generatePublicKey();
    const perfToken = encryptToSecondary(drKey, Buffer.from(JSON.stringify(material('performance'))));
    await expect(dr.enableSecondary({ token: perfToken, primaryApiAddr: '', caFile: '', caPath: '' })).rejects.toThrow(/it is a performance secondary token/);
    // A wrapped token says its kind in its JWT: refused without asking the primary (which would spend it).
    const jwtKey = createActivationSigningKey();
    const jwt = signActivationJwt(jwtKey.privateKey, { addr: 'http://127.0.0.1:1', exp: 4_000_000_000, iat: 1, jti: 'wrap', type: 'wrapping', kind: 'dr' });
    await expect(perf.enableSecondary({ token: jwt, primaryApiAddr: '', caFile: '', caPath: '' })).rejects.toThrow(/it is a DR secondary token/);
    expect(activated).toEqual([]);
    expect(perf.current.mode).toBe('disabled');
    expect(dr.current.mode).toBe('disabled');
  });

  it('enables, promotes and disables a performance secondary without a DR operation token', async () => {
    const { perf, dr } = roles();
    const key = await perf.generatePublicKey();
    await perf.enableSecondary({ token: encryptToSecondary(key, Buffer.from(JSON.stringify(material('performance')))), primaryApiAddr: '', caFile: '', caPath: '' });
    expect(perf.mode()).toBe('secondary');
    expect(dr.mode()).toBe('disabled');
    await expect(dr.enableSecondary({ token: 'x', primaryApiAddr: '', caFile: '', caPath: '' })).rejects.toThrow('this cluster is a performance secondary: disable it first');
    await perf.promote({ operationToken: undefined, primaryClusterAddr: '', force: true });
    expect(perf.current).toMatchObject({ mode: 'primary', cluster_id: 'c1' });
    await perf.disablePrimary();
    expect(perf.mode()).toBe('disabled');
  });

  it('makes a promoted DR secondary of a performance primary the primary of that performance set', async () => {
    const east = roles();
    await east.perf.enablePrimary({ primaryClusterAddr: '' });
    await east.perf.secondaryToken({ id: 'perf-west', ttlSeconds: 60, publicKey: await roles().perf.generatePublicKey() });
    await east.perf.setPathsFilter('perf-west', { mode: 'deny', paths: ['secret/'] });
    const set = east.perf.current;
    if (set.mode !== 'primary') throw new Error('expected a performance primary');

    const standby = roles({}, true);
    const key = await standby.dr.generatePublicKey();
    await standby.dr.enableSecondary({ token: encryptToSecondary(key, Buffer.from(JSON.stringify(material('dr')))), primaryApiAddr: '', caFile: '', caPath: '' });
    // What the DR stream carries: every replicated key of the primary's store.
    for (const k of replicatedKeys(east.storage)) await standby.storage.put(k, east.storage.data.get(k) as Buffer);

    const warnings = await standby.dr.promote({ operationToken: 'op', primaryClusterAddr: '', force: true });
    expect(standby.dr.mode()).toBe('primary');
    expect(standby.perf.current).toMatchObject({
      mode: 'primary', cluster_id: set.cluster_id, ca_cert: set.ca_cert, paths_filters: { 'perf-west': { mode: 'deny', paths: ['secret/'] } },
    });
    expect((standby.perf.current as typeof set).wal_source).not.toBe(set.wal_source);
    expect(warnings.join(' ')).toMatch(/performance primary of its former primary's set/);
    // The secondary gets a new token here for update-primary, under the same ID.
    await standby.perf.secondaryToken({ id: 'perf-west', ttlSeconds: 60, publicKey: await roles().perf.generatePublicKey() });

    // Disabled instead, a DR secondary serves as a cluster of its own, in no set: the copy goes.
    const alone = roles({}, true);
    await alone.dr.enableSecondary({ token: encryptToSecondary(await alone.dr.generatePublicKey(), Buffer.from(JSON.stringify(material('dr')))), primaryApiAddr: '', caFile: '', caPath: '' });
    for (const k of replicatedKeys(east.storage)) await alone.storage.put(k, east.storage.data.get(k) as Buffer);
    await alone.dr.disableSecondary('op');
    expect(alone.storage.data.has('core/replication-performance-set')).toBe(false);
    expect(alone.perf.mode()).toBe('disabled');

    // A DR secondary of a cluster that is no performance primary is promoted into no set.
    const plain = roles({}, true);
    const plainKey = await plain.dr.generatePublicKey();
    await plain.dr.enableSecondary({ token: encryptToSecondary(plainKey, Buffer.from(JSON.stringify(material('dr')))), primaryApiAddr: '', caFile: '', caPath: '' });
    await plain.dr.promote({ operationToken: 'op', primaryClusterAddr: '', force: true });
    expect(plain.perf.mode()).toBe('disabled');
  });

  it('ends the performance primary role at a DR demotion, and takes the set over again when promoted back', async () => {
    const east = roles({}, true);
    await east.perf.enablePrimary({ primaryClusterAddr: '' });
    await east.perf.secondaryToken({ id: 'perf-west', ttlSeconds: 60, publicKey: await roles().perf.generatePublicKey() });
    await east.dr.enablePrimary({ primaryClusterAddr: '' });
    const set = east.perf.current;
    if (set.mode !== 'primary') throw new Error('expected a performance primary');

    const warnings = await east.dr.demote();
    expect(east.dr.mode()).toBe('secondary');
    expect(east.perf.mode()).toBe('disabled');
    expect(await east.perf.status()).toEqual({ mode: 'disabled' });
    expect(warnings.join(' ')).toMatch(/performance primary role stopped/);
    // What the DR stream gives it from now on; here, the copy it kept.
    expect(east.storage.data.has('core/replication-performance-set')).toBe(true);

    await east.dr.promote({ operationToken: 'op', primaryClusterAddr: '', force: false });
    expect(east.perf.current).toMatchObject({ mode: 'primary', cluster_id: set.cluster_id, ca_cert: set.ca_cert });
  });

  it('makes a promoted DR secondary of a performance secondary that same secondary, and stops the demoted one', async () => {
    const west = roles({}, true);
    const key = await west.perf.generatePublicKey();
    await west.perf.enableSecondary({ token: encryptToSecondary(key, Buffer.from(JSON.stringify(material('performance')))), primaryApiAddr: '', caFile: '', caPath: '' });
    await west.dr.enablePrimary({ primaryClusterAddr: '' });
    // What the runner writes with each batch it applies.
    const mark = Buffer.from(JSON.stringify({ wal_source: 'w1', index: 42 }));
    await west.storage.txn([{ type: 'put', key: 'core/local/replication/performance/applied', value: mark }, { type: 'put', key: 'core/replication-performance-link-applied', value: mark }]);

    const standby = roles({}, true);
    const drKey = await standby.dr.generatePublicKey();
    await standby.dr.enableSecondary({ token: encryptToSecondary(drKey, Buffer.from(JSON.stringify(material('dr')))), primaryApiAddr: '', caFile: '', caPath: '' });
    for (const k of replicatedKeys(west.storage)) await standby.storage.put(k, west.storage.data.get(k) as Buffer);

    await west.dr.demote();
    expect(west.perf.mode()).toBe('disabled');
    const warnings = await standby.dr.promote({ operationToken: 'op', primaryClusterAddr: '', force: true });
    expect(standby.perf.current).toMatchObject({
      mode: 'secondary', cluster_id: 'c1', secondary_id: 'perf-west', demoted: false, primary: { cluster_id: 'c1', wal_source: 'w1', cert: 'cert', key: 'key' },
    });
    expect(standby.storage.data.get('core/local/replication/performance/applied')).toEqual(mark);
    expect(warnings.join(' ')).toMatch(/performance secondary "perf-west"/);

    // A performance secondary that stops being one (disabled here) leaves nothing for a later promotion.
    await standby.perf.disableSecondary(undefined);
    expect(standby.storage.data.has('core/replication-performance-link')).toBe(false);
    expect(standby.storage.data.has('core/replication-performance-link-applied')).toBe(false);
  });

  it('keeps a paths filter per secondary the primary knows', async () => {
    const { perf } = roles();
    await perf.enablePrimary({ primaryClusterAddr: '' });
    await perf.secondaryToken({ id: 'perf-west', ttlSeconds: 60, publicKey: (await roles().perf.generatePublicKey()) });
    await expect(perf.setPathsFilter('nobody', { mode: 'deny', paths: ['secret/'] })).rejects.toThrow('invalid value for "id": no secondary has ID or cluster ID "nobody"');
    expect(() => perf.pathsFilter('perf-west')).toThrow(NotFoundError);
    await perf.setPathsFilter('perf-west', { mode: 'deny', paths: ['secret/'] });
    expect(perf.pathsFilter('perf-west')).toEqual({ mode: 'deny', paths: ['secret/'] });
    expect(perf.filterOf('perf-west')).toEqual({ mode: 'deny', paths: ['secret/'] });
    await perf.deletePathsFilter('perf-west');
    expect(() => perf.pathsFilter('perf-west')).toThrow(NotFoundError);
    expect(perf.filterOf('perf-west')).toBeNull();
  });

  it('answers a forwarded write with the primary\'s reply, and a warning when it has not streamed back yet', async () => {
    const answers = [
      { status: 204, lastWal: 5, warnings: ['the write was applied on the primary but has not reached this secondary yet'] },
      { status: 400, body: { errors: ['missing required field "x"'] }, lastWal: 5, warnings: [] },
    ];
    const { perf } = roles({ forwardWrite: async () => answers.shift() as never });
    const key = await perf.generatePublicKey();
    await perf.enableSecondary({ token: encryptToSecondary(key, Buffer.from(JSON.stringify(material('performance')))), primaryApiAddr: '', caFile: '', caPath: '' });
    await expect(perf.forwardWrite({ operation: 'update', path: 'secret/x', data: {} })).resolves.toEqual({
      status: 200, body: { warnings: ['the write was applied on the primary but has not reached this secondary yet'] },
    });
    await expect(perf.forwardWrite({ operation: 'update', path: 'secret/x', data: {} })).resolves.toEqual({ status: 400, body: { errors: ['missing required field "x"'] } });
  });
});

it('reads each role again on its own: one whose state cannot be read keeps its state, and the other is read', async () => {
  const storage = new Store();
  const cluster = { storage, advert: { api: 'http://127.0.0.1:1', cluster: '127.0.0.1:2' }, refreshActive: async () => {} } as unknown as ClusterNode;
  const role = (kind: 'dr' | 'performance') => new ReplicationRole({
    kind, core: {} as Core, cluster, logger: silentLogger, clock: systemClock,
    merkle: { status: () => ({ root: '', corrupted: false, lastReindexEpoch: '', lastCheckEpoch: '', reindex: null }), reindex: async () => ({}), check: async () => ({}) },
    operationTokens: { verify: async () => false, revoke: async () => {} },
  });
  const dr = role('dr');
  const performance = role('performance');
  await storage.put(stateKey('dr'), Buffer.from('{"mode": "prim'));
  await storage.put(stateKey('performance'), Buffer.from(JSON.stringify({ mode: 'primary', cluster_id: 'c1', secondaries: {} })));
  const errors: Array<Record<string, unknown> | undefined> = [];
  await reloadRoles([dr, performance], { ...silentLogger, error: (_message, fields) => { errors.push(fields); } });
  expect(dr.mode()).toBe('disabled');
  expect(performance.mode()).toBe('primary');
  expect(errors).toEqual([expect.objectContaining({ kind: 'dr' })]);
});

describe('RoleReloader', () => {
  /** A role whose reading fails while `failing` is set, counting its readings. */
  function role(kind: ReplicationKind) {
    const r = { kind, failing: false, readings: 0, reload: async () => { r.readings++; if (r.failing) throw new Error('storage is not readable'); } };
    return r;
  }

  it('reads a role that could not be read again, waiting longer each time, until it reads', async () => {
    const clock = new FakeClock();
    const dr = role('dr');
    const performance = role('performance');
    dr.failing = true;
    const warnings: Array<Record<string, unknown> | undefined> = [];
    let after = 0;
    const reloader = new RoleReloader([dr, performance], { logger: { ...silentLogger, warn: (_m, fields) => { warnings.push(fields); } }, clock, after: () => { after++; } });
    await reloader.reload();
    expect([dr.readings, performance.readings, after]).toEqual([1, 1, 1]);
    expect(warnings).toEqual([{ kinds: ['dr'], in_ms: ROLE_RETRY_FIRST_MS }]);
    await clock.advance(ROLE_RETRY_FIRST_MS - 1);
    expect(dr.readings).toBe(1);
    await clock.advance(1);
    expect(dr.readings).toBe(2);
    // Then 2 s, 4 s, ... up to the longest wait.
    await clock.advance(2 * ROLE_RETRY_FIRST_MS);
    expect(dr.readings).toBe(3);
    await clock.advance(ROLE_RETRY_LONGEST_MS * 4);
    expect(warnings.at(-1)).toEqual({ kinds: ['dr'], in_ms: ROLE_RETRY_LONGEST_MS });
    const before = dr.readings;
    await clock.advance(ROLE_RETRY_LONGEST_MS);
    expect(dr.readings).toBe(before + 1);
    // Once it reads, nothing more is scheduled, and the next failure starts from the first wait.
    dr.failing = false;
    await clock.advance(ROLE_RETRY_LONGEST_MS);
    expect(clock.pendingTimers()).toBe(0);
    const settled = dr.readings;
    await clock.advance(ROLE_RETRY_LONGEST_MS * 2);
    expect(dr.readings).toBe(settled);
    expect(after).toBe(settled);
    dr.failing = true;
    await reloader.reload();
    expect(warnings.at(-1)).toEqual({ kinds: ['dr'], in_ms: ROLE_RETRY_FIRST_MS });
    reloader.close();
  });

  it('a reading asked for meanwhile replaces the pending retry, and close ends the retries', async () => {
    const clock = new FakeClock();
    const dr = role('dr');
    dr.failing = true;
    const reloader = new RoleReloader([dr], { logger: silentLogger, clock, after: () => {} });
    await reloader.reload();
    await reloader.reload();
    expect(dr.readings).toBe(2);
    expect(clock.pendingTimers()).toBe(1);
    await reloader.close();
    expect(clock.pendingTimers()).toBe(0);
    await clock.advance(ROLE_RETRY_LONGEST_MS * 2);
    await reloader.reload();
    expect(dr.readings).toBe(2);
  });

  it('a reading in progress at close schedules nothing and runs nothing after it', async () => {
    const clock = new FakeClock();
    let finish!: () => void;
    const dr = { kind: 'dr' as const, reload: () => new Promise<void>((_resolve, reject) => { finish = () => reject(new Error('storage is not readable')); }) };
    let after = 0;
    const reloader = new RoleReloader([dr], { logger: silentLogger, clock, after: () => { after++; } });
    const reading = reloader.reload();
    await clock.advance(0);
    let closed = false;
    const closing = reloader.close().then(() => { closed = true; });
    await clock.advance(0);
    // close waits for the reading in progress.
    expect(closed).toBe(false);
    finish();
    await closing;
    await reading;
    expect(after).toBe(0);
    expect(clock.pendingTimers()).toBe(0);
  });
});
