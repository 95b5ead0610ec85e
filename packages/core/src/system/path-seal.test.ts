import { FakeClock, MemoryStorage, VERSION, type Storage, type TxnOp } from '../index';
import { callCore, data, failure, newCore, okCore, rig, type Rig } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

const CLUSTER = { engines: [kvStandIn], clusterName: 'test-cluster', storageType: 'raft' };

describe('sys/seal-status', () => {
  it('describes an uninitialized server', async () => {
    const core = newCore(CLUSTER);
    const reply = await callCore(core, 'read', 'sys/seal-status', undefined);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      type: 'shamir', initialized: false, sealed: true, t: 0, n: 0, progress: 0, nonce: '',
      version: VERSION, build_date: expect.any(String), migration: false, recovery_seal: false, storage_type: 'raft',
    });
  });

  it('describes a sealed server without naming the cluster', async () => {
    const core = newCore(CLUSTER);
    await core.initialize(5, 3);
    const status = (await okCore(core, 'read', 'sys/seal-status', undefined)).body;
    expect(status).toMatchObject({ type: 'shamir', initialized: true, sealed: true, t: 3, n: 5, progress: 0, nonce: '', storage_type: 'raft' });
    expect(status).not.toHaveProperty('cluster_id');
    expect(status).not.toHaveProperty('cluster_name');
  });

  it('names the cluster once unsealed', async () => {
    const r = await rig(CLUSTER);
    const status = (await r.ok('read', 'sys/seal-status', undefined)).body;
    expect(status).toMatchObject({ sealed: false, t: 1, n: 1, cluster_name: 'test-cluster', version: VERSION });
    expect(status['cluster_id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(status['build_date']).toMatch(/^\d{4}-\d{2}-\d{2}T/);
  });

  it('keeps the cluster id across seal, unseal and restart', async () => {
    const r = await rig(CLUSTER);
    const id = (await r.ok('read', 'sys/seal-status', undefined)).body['cluster_id'];
    await r.ok('update', 'sys/seal', r.root);
    await r.core.unseal(r.key);
    expect((await r.ok('read', 'sys/seal-status', undefined)).body['cluster_id']).toBe(id);
    await r.restart();
    expect((await r.ok('read', 'sys/seal-status', undefined)).body['cluster_id']).toBe(id);
  });
});

describe('sys/health', () => {
  it('answers 501 before init, 503 while sealed and 200 when active', async () => {
    const core = newCore(CLUSTER);
    const uninit = await callCore(core, 'read', 'sys/health', undefined);
    expect(uninit.status).toBe(501);
    expect(uninit.body).toMatchObject({ initialized: false, sealed: true, standby: false });
    const { keys } = await core.initialize(1, 1);
    const sealed = await callCore(core, 'read', 'sys/health', undefined);
    expect(sealed.status).toBe(503);
    expect(sealed.body).toMatchObject({ initialized: true, sealed: true, standby: false });
    await core.unseal(keys[0] as Buffer);
    const active = await callCore(core, 'read', 'sys/health', undefined);
    expect(active.status).toBe(200);
    expect(active.body).toMatchObject({
      initialized: true, sealed: false, standby: false, performance_standby: false, version: VERSION,
      replication_performance_mode: 'disabled', replication_dr_mode: 'disabled', cluster_name: 'test-cluster',
    });
    expect(active.body['server_time_utc']).toBe(Math.floor(Date.UTC(2026, 0, 1) / 1000));
    expect(active.body['cluster_id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('needs no token', async () => {
    const r = await rig(CLUSTER);
    expect((await r.call('read', 'sys/health', 'hvs.not-a-token')).status).toBe(200);
  });

  it('answers with the code asked for in uninitcode, sealedcode and activecode', async () => {
    const core = newCore(CLUSTER);
    expect((await callCore(core, 'read', 'sys/health', undefined, { uninitcode: '200' })).status).toBe(200);
    // The other overrides do not apply to an uninitialized server.
    expect((await callCore(core, 'read', 'sys/health', undefined, { sealedcode: '299', activecode: '204' })).status).toBe(501);
    const { keys } = await core.initialize(1, 1);
    expect((await callCore(core, 'read', 'sys/health', undefined, { sealedcode: '299' })).status).toBe(299);
    expect((await callCore(core, 'read', 'sys/health', undefined, { uninitcode: '200', activecode: '204' })).status).toBe(503);
    await core.unseal(keys[0] as Buffer);
    expect((await callCore(core, 'read', 'sys/health', undefined, { activecode: '204' })).status).toBe(204);
    expect((await callCore(core, 'read', 'sys/health', undefined, { activecode: 429 })).status).toBe(429);
    expect((await callCore(core, 'read', 'sys/health', undefined, { sealedcode: '200', uninitcode: '200' })).status).toBe(200);
  });

  it.each([
    [{ activecode: 'abc' }, 'activecode'],
    [{ activecode: '99' }, 'activecode'],
    [{ activecode: '600' }, 'activecode'],
    [{ activecode: '-200' }, 'activecode'],
  ])('rejects the override %j with a 400 naming %s', async (data, field) => {
    const r = await rig(CLUSTER);
    const err = await failure(r.call('read', 'sys/health', undefined, data));
    expect(err.status).toBe(400);
    expect(err.message).toContain(field);
  });

  it('rejects a bad sealedcode or uninitcode while sealed or uninitialized', async () => {
    const core = newCore(CLUSTER);
    expect((await failure(callCore(core, 'read', 'sys/health', undefined, { uninitcode: 'x' }))).status).toBe(400);
    await core.initialize(1, 1);
    const err = await failure(callCore(core, 'read', 'sys/health', undefined, { sealedcode: '1000' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('sealedcode');
  });
});

describe('sys/leader', () => {
  it('reports a single node that is its own leader once unsealed', async () => {
    const clock = new FakeClock();
    const r = await rig({ ...CLUSTER, clock });
    const reply = await r.call('read', 'sys/leader', undefined);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      ha_enabled: false, is_self: true, leader_address: '', leader_cluster_address: '', performance_standby: false,
      active_time: new Date(Date.UTC(2026, 0, 1)).toISOString(),
    });
  });

  it('is not the leader while sealed', async () => {
    const core = newCore(CLUSTER);
    await core.initialize(1, 1);
    const reply = await callCore(core, 'read', 'sys/leader', undefined);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ is_self: false, active_time: '0001-01-01T00:00:00Z' });
  });
});

describe('sys/rotate and sys/key-status', () => {
  async function withKv() {
    const r = await rig(CLUSTER);
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv', options: { version: '2' } });
    await r.ok('update', 'sys/mounts/kv1', r.root, { type: 'kv' });
    return r;
  }

  async function readSecret(r: Rig, path: string): Promise<unknown> {
    return data(await r.ok('read', `secret/data/${path}`, r.root))['data'];
  }

  it('starts at term 1 and adds one term per rotation', async () => {
    const r = await withKv();
    const status = (await r.ok('read', 'sys/key-status', r.root)).body;
    expect(status['data']).toMatchObject({ term: 1, install_time: new Date(Date.UTC(2026, 0, 1)).toISOString() });
    expect(status['term']).toBe(1);
    expect((await r.call('update', 'sys/rotate', r.root)).status).toBe(204);
    expect((await r.ok('read', 'sys/key-status', r.root)).body['term']).toBe(2);
    await r.ok('update', 'sys/rotate', r.root);
    expect((await r.ok('read', 'sys/key-status', r.root)).body['term']).toBe(3);
  });

  it('reads data written before and after a rotation, also after seal, unseal and restart', async () => {
    const r = await withKv();
    await r.ok('update', 'secret/data/before', r.root, { data: { v: 'before' } });
    await r.ok('update', 'kv1/before', r.root, { v: 'v1-before' });
    const child = await r.ok('update', 'auth/token/create', r.root, { policies: ['default'] });
    const childToken = (child.body as { auth: { client_token: string } }).auth.client_token;
    await r.ok('update', 'sys/rotate', r.root);
    await r.ok('update', 'secret/data/after', r.root, { data: { v: 'after' } });
    await r.ok('update', 'sys/rotate', r.root);
    await r.ok('update', 'secret/data/after2', r.root, { data: { v: 'after2' } });

    const check = async () => {
      expect(await readSecret(r, 'before')).toEqual({ v: 'before' });
      expect(await readSecret(r, 'after')).toEqual({ v: 'after' });
      expect(await readSecret(r, 'after2')).toEqual({ v: 'after2' });
      expect((await r.ok('read', 'kv1/before', r.root)).body['data']).toEqual({ v: 'v1-before' });
      expect((await r.call('read', 'auth/token/lookup-self', childToken)).status).toBe(200);
    };
    await check();
    await r.ok('update', 'sys/seal', r.root);
    await r.core.unseal(r.key);
    await check();
    expect((await r.ok('read', 'sys/key-status', r.root)).body['term']).toBe(3);
    await r.restart();
    await check();
    expect((await r.ok('read', 'sys/key-status', r.root)).body['term']).toBe(3);
  });

  it('runs concurrent rotations one after another and keeps every term', async () => {
    const r = await withKv();
    const writes: Promise<unknown>[] = [];
    const rotations: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      rotations.push(r.ok('update', 'sys/rotate', r.root));
      writes.push(r.ok('update', `secret/data/s${i}`, r.root, { data: { i } }));
    }
    await Promise.all([...rotations, ...writes]);
    expect((await r.ok('read', 'sys/key-status', r.root)).body['term']).toBe(6);
    await r.restart();
    for (let i = 0; i < 5; i++) expect(await readSecret(r, `s${i}`)).toEqual({ i });
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
    const r = await rig({ ...CLUSTER, storage: flaky });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    failKeyring = true;
    await expect(r.call('update', 'sys/rotate', r.root)).rejects.toThrow(/disk full/);
    failKeyring = false;
    expect((await r.ok('read', 'sys/key-status', r.root)).body['term']).toBe(1);
    await r.ok('update', 'secret/data/x', r.root, { data: { v: 1 } });
    await r.restart();
    expect(await readSecret(r, 'x')).toEqual({ v: 1 });
  });

  it('requires sudo to rotate, but not to read the key status', async () => {
    const r = await withKv();
    const noSudo = await r.tokenWithPolicy('rotator', `
      path "sys/rotate" { capabilities = ["update"] }
      path "sys/key-status" { capabilities = ["read"] }
    `);
    expect((await failure(r.call('update', 'sys/rotate', noSudo))).status).toBe(403);
    expect((await r.ok('read', 'sys/key-status', noSudo)).body['term']).toBe(1);
    const withSudo = await r.tokenWithPolicy('rotator-sudo', 'path "sys/rotate" { capabilities = ["update", "sudo"] }');
    expect((await r.call('update', 'sys/rotate', withSudo)).status).toBe(204);
    const nothing = await r.tokenWithPolicy('nothing', 'path "secret/*" { capabilities = ["read"] }');
    expect((await failure(r.call('read', 'sys/key-status', nothing))).status).toBe(403);
  });
});
