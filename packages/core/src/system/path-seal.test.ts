import { kvEngine } from '@strongroom/engine-kv';
import {
  Core, FakeClock, MemoryStorage, silentLogger, StrongroomError, VERSION,
  type CoreReply, type Operation, type Storage, type TxnOp,
} from '../index';

function newCore(storage: Storage = new MemoryStorage(), clock = new FakeClock()): Core {
  return new Core({ storage, clock, logger: silentLogger, engines: [kvEngine], clusterName: 'test-cluster', storageType: 'raft' });
}

function call(core: Core, operation: Operation, path: string, data: Record<string, unknown> = {}, token?: string): Promise<CoreReply> {
  return core.handle({ operation, path, data, ...(token ? { token } : {}) });
}

async function failure(promise: Promise<unknown>): Promise<StrongroomError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof StrongroomError) return err;
    throw err;
  }
  throw new Error('expected the request to fail');
}

type Body = Record<string, unknown>;
const body = (r: CoreReply) => r.body as Body;

async function unsealedCore(storage?: Storage, clock?: FakeClock) {
  const core = newCore(storage, clock);
  const { keys, rootToken } = await core.initialize(1, 1);
  await core.unseal(keys[0] as Buffer);
  return { core, keys, rootToken };
}

async function tokenWithPolicy(core: Core, root: string, name: string, policy: string): Promise<string> {
  await call(core, 'update', `sys/policies/acl/${name}`, { policy }, root);
  const reply = await call(core, 'update', 'auth/token/create', { policies: [name] }, root);
  return (reply.body as { auth: { client_token: string } }).auth.client_token;
}

describe('sys/seal-status', () => {
  it('describes an uninitialized server', async () => {
    const core = newCore();
    const reply = await call(core, 'read', 'sys/seal-status');
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      type: 'shamir', initialized: false, sealed: true, t: 0, n: 0, progress: 0, nonce: '',
      version: VERSION, build_date: expect.any(String), migration: false, recovery_seal: false, storage_type: 'raft',
    });
  });

  it('describes a sealed server without naming the cluster', async () => {
    const core = newCore();
    await core.initialize(5, 3);
    const status = body(await call(core, 'read', 'sys/seal-status'));
    expect(status).toMatchObject({ type: 'shamir', initialized: true, sealed: true, t: 3, n: 5, progress: 0, nonce: '', storage_type: 'raft' });
    expect(status).not.toHaveProperty('cluster_id');
    expect(status).not.toHaveProperty('cluster_name');
  });

  it('names the cluster once unsealed', async () => {
    const { core } = await unsealedCore();
    const status = body(await call(core, 'read', 'sys/seal-status'));
    expect(status).toMatchObject({ sealed: false, t: 1, n: 1, cluster_name: 'test-cluster', version: VERSION });
    expect(status['cluster_id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(status['build_date']).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  });

  it('keeps the cluster id across seal, unseal and restart', async () => {
    const storage = new MemoryStorage();
    const { core, keys, rootToken } = await unsealedCore(storage);
    const id = body(await call(core, 'read', 'sys/seal-status'))['cluster_id'];
    await call(core, 'update', 'sys/seal', {}, rootToken);
    await core.unseal(keys[0] as Buffer);
    expect(body(await call(core, 'read', 'sys/seal-status'))['cluster_id']).toBe(id);
    const restarted = newCore(storage);
    await restarted.unseal(keys[0] as Buffer);
    expect(body(await call(restarted, 'read', 'sys/seal-status'))['cluster_id']).toBe(id);
  });
});

describe('sys/health', () => {
  it('answers 501 before init, 503 while sealed and 200 when active', async () => {
    const core = newCore();
    const uninit = await call(core, 'read', 'sys/health');
    expect(uninit.status).toBe(501);
    expect(uninit.body).toMatchObject({ initialized: false, sealed: true, standby: false });
    const { keys } = await core.initialize(1, 1);
    const sealed = await call(core, 'read', 'sys/health');
    expect(sealed.status).toBe(503);
    expect(sealed.body).toMatchObject({ initialized: true, sealed: true, standby: false });
    await core.unseal(keys[0] as Buffer);
    const active = await call(core, 'read', 'sys/health');
    expect(active.status).toBe(200);
    expect(active.body).toMatchObject({
      initialized: true, sealed: false, standby: false, performance_standby: false, version: VERSION,
      replication_performance_mode: 'disabled', replication_dr_mode: 'disabled', cluster_name: 'test-cluster',
    });
    expect(body(active)['server_time_utc']).toBe(Math.floor(Date.UTC(2026, 0, 1) / 1000));
    expect(body(active)['cluster_id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('needs no token', async () => {
    const { core } = await unsealedCore();
    expect((await call(core, 'read', 'sys/health', {}, 'hvs.not-a-token')).status).toBe(200);
  });

  it('answers with the code asked for in uninitcode, sealedcode and activecode', async () => {
    const core = newCore();
    expect((await call(core, 'read', 'sys/health', { uninitcode: '200' })).status).toBe(200);
    // The other overrides do not apply to an uninitialized server.
    expect((await call(core, 'read', 'sys/health', { sealedcode: '299', activecode: '204' })).status).toBe(501);
    const { keys } = await core.initialize(1, 1);
    expect((await call(core, 'read', 'sys/health', { sealedcode: '299' })).status).toBe(299);
    expect((await call(core, 'read', 'sys/health', { uninitcode: '200', activecode: '204' })).status).toBe(503);
    await core.unseal(keys[0] as Buffer);
    expect((await call(core, 'read', 'sys/health', { activecode: '204' })).status).toBe(204);
    expect((await call(core, 'read', 'sys/health', { activecode: 429 })).status).toBe(429);
    expect((await call(core, 'read', 'sys/health', { sealedcode: '200', uninitcode: '200' })).status).toBe(200);
  });

  it.each([
    [{ activecode: 'abc' }, 'activecode'],
    [{ activecode: '99' }, 'activecode'],
    [{ activecode: '600' }, 'activecode'],
    [{ activecode: '-200' }, 'activecode'],
  ])('rejects the override %j with a 400 naming %s', async (data, field) => {
    const { core } = await unsealedCore();
    const err = await failure(call(core, 'read', 'sys/health', data));
    expect(err.status).toBe(400);
    expect(err.message).toContain(field);
  });

  it('rejects a bad sealedcode or uninitcode while sealed or uninitialized', async () => {
    const core = newCore();
    expect((await failure(call(core, 'read', 'sys/health', { uninitcode: 'x' }))).status).toBe(400);
    await core.initialize(1, 1);
    const err = await failure(call(core, 'read', 'sys/health', { sealedcode: '1000' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('sealedcode');
  });
});

describe('sys/leader', () => {
  it('reports a single node that is its own leader once unsealed', async () => {
    const clock = new FakeClock();
    const { core } = await unsealedCore(undefined, clock);
    const reply = await call(core, 'read', 'sys/leader');
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      ha_enabled: false, is_self: true, leader_address: '', leader_cluster_address: '', performance_standby: false,
      active_time: new Date(Date.UTC(2026, 0, 1)).toISOString(),
    });
  });

  it('is not the leader while sealed', async () => {
    const core = newCore();
    await core.initialize(1, 1);
    const reply = await call(core, 'read', 'sys/leader');
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ is_self: false, active_time: '0001-01-01T00:00:00Z' });
  });
});

describe('sys/rotate and sys/key-status', () => {
  async function withKv() {
    const storage = new MemoryStorage();
    const made = await unsealedCore(storage);
    await call(made.core, 'update', 'sys/mounts/secret', { type: 'kv', options: { version: '2' } }, made.rootToken);
    await call(made.core, 'update', 'sys/mounts/kv1', { type: 'kv' }, made.rootToken);
    return { ...made, storage };
  }

  async function readSecret(core: Core, token: string, path: string): Promise<unknown> {
    return ((await call(core, 'read', `secret/data/${path}`, {}, token)).body as { data: { data: unknown } }).data.data;
  }

  it('starts at term 1 and adds one term per rotation', async () => {
    const { core, rootToken } = await withKv();
    const status = body(await call(core, 'read', 'sys/key-status', {}, rootToken));
    expect(status['data']).toMatchObject({ term: 1, install_time: new Date(Date.UTC(2026, 0, 1)).toISOString() });
    expect(status['term']).toBe(1);
    expect((await call(core, 'update', 'sys/rotate', {}, rootToken)).status).toBe(204);
    expect(body(await call(core, 'read', 'sys/key-status', {}, rootToken))['term']).toBe(2);
    await call(core, 'update', 'sys/rotate', {}, rootToken);
    expect(body(await call(core, 'read', 'sys/key-status', {}, rootToken))['term']).toBe(3);
  });

  it('reads data written before and after a rotation, also after seal, unseal and restart', async () => {
    const { core, rootToken, keys, storage } = await withKv();
    await call(core, 'update', 'secret/data/before', { data: { v: 'before' } }, rootToken);
    await call(core, 'update', 'kv1/before', { v: 'v1-before' }, rootToken);
    const child = await call(core, 'update', 'auth/token/create', { policies: ['default'] }, rootToken);
    const childToken = (child.body as { auth: { client_token: string } }).auth.client_token;
    await call(core, 'update', 'sys/rotate', {}, rootToken);
    await call(core, 'update', 'secret/data/after', { data: { v: 'after' } }, rootToken);
    await call(core, 'update', 'sys/rotate', {}, rootToken);
    await call(core, 'update', 'secret/data/after2', { data: { v: 'after2' } }, rootToken);

    const check = async (c: Core) => {
      expect(await readSecret(c, rootToken, 'before')).toEqual({ v: 'before' });
      expect(await readSecret(c, rootToken, 'after')).toEqual({ v: 'after' });
      expect(await readSecret(c, rootToken, 'after2')).toEqual({ v: 'after2' });
      expect(body(await call(c, 'read', 'kv1/before', {}, rootToken))['data']).toEqual({ v: 'v1-before' });
      expect((await call(c, 'read', 'auth/token/lookup-self', {}, childToken)).status).toBe(200);
    };
    await check(core);
    await call(core, 'update', 'sys/seal', {}, rootToken);
    await core.unseal(keys[0] as Buffer);
    await check(core);
    expect(body(await call(core, 'read', 'sys/key-status', {}, rootToken))['term']).toBe(3);
    const restarted = newCore(storage);
    await restarted.unseal(keys[0] as Buffer);
    await check(restarted);
    expect(body(await call(restarted, 'read', 'sys/key-status', {}, rootToken))['term']).toBe(3);
  });

  it('runs concurrent rotations one after another and keeps every term', async () => {
    const { core, rootToken, keys, storage } = await withKv();
    const writes: Promise<unknown>[] = [];
    const rotations: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      rotations.push(call(core, 'update', 'sys/rotate', {}, rootToken));
      writes.push(call(core, 'update', `secret/data/s${i}`, { data: { i } }, rootToken));
    }
    await Promise.all([...rotations, ...writes]);
    expect(body(await call(core, 'read', 'sys/key-status', {}, rootToken))['term']).toBe(6);
    const restarted = newCore(storage);
    await restarted.unseal(keys[0] as Buffer);
    for (let i = 0; i < 5; i++) expect(await readSecret(restarted, rootToken, `s${i}`)).toEqual({ i });
  });

  it('keeps writing under the old term when the new keyring cannot be stored', async () => {
    const inner = new MemoryStorage();
    let failKeyring = false;
    const flaky: Storage = {
      get: (k) => inner.get(k),
      put: async (k, v) => {
        if (failKeyring && k === 'core/keyring') throw new Error('disk full');
        await inner.put(k, v);
      },
      delete: (k) => inner.delete(k),
      list: (p) => inner.list(p),
      txn: (ops: TxnOp[]) => inner.txn(ops),
      close: () => inner.close(),
    };
    const { core, rootToken, keys } = await unsealedCore(flaky);
    await call(core, 'update', 'sys/mounts/secret', { type: 'kv-v2' }, rootToken);
    failKeyring = true;
    await expect(call(core, 'update', 'sys/rotate', {}, rootToken)).rejects.toThrow(/disk full/);
    failKeyring = false;
    expect(body(await call(core, 'read', 'sys/key-status', {}, rootToken))['term']).toBe(1);
    await call(core, 'update', 'secret/data/x', { data: { v: 1 } }, rootToken);
    const restarted = newCore(inner);
    await restarted.unseal(keys[0] as Buffer);
    expect(await readSecret(restarted, rootToken, 'x')).toEqual({ v: 1 });
  });

  it('requires sudo to rotate, but not to read the key status', async () => {
    const { core, rootToken } = await withKv();
    const noSudo = await tokenWithPolicy(core, rootToken, 'rotator', `
      path "sys/rotate" { capabilities = ["update"] }
      path "sys/key-status" { capabilities = ["read"] }
    `);
    expect((await failure(call(core, 'update', 'sys/rotate', {}, noSudo))).status).toBe(403);
    expect(body(await call(core, 'read', 'sys/key-status', {}, noSudo))['term']).toBe(1);
    const withSudo = await tokenWithPolicy(core, rootToken, 'rotator-sudo', 'path "sys/rotate" { capabilities = ["update", "sudo"] }');
    expect((await call(core, 'update', 'sys/rotate', {}, withSudo)).status).toBe(204);
    const nothing = await tokenWithPolicy(core, rootToken, 'nothing', 'path "secret/*" { capabilities = ["read"] }');
    expect((await failure(call(core, 'read', 'sys/key-status', {}, nothing))).status).toBe(403);
  });
});
