import { randomUUID } from 'node:crypto';
import { Backend } from './framework/backend';
import type { EngineFactory } from './framework/engine';
import { definePath } from './framework/types';
import type { MountEntry } from './mounts/mount-table';
import { storeEngine } from './test-support/store-engine';
import { data, rig, type Rig } from './testing';

/** Writes `value` below the core's cache, encrypted, as a replication stream applies it. */
async function streamed(r: Rig, key: string, value: unknown): Promise<void> {
  await r.storage.put(key, r.core.barrier.encrypt(key, Buffer.from(typeof value === 'string' ? value : JSON.stringify(value))));
}

async function table(r: Rig, key: string): Promise<MountEntry[]> {
  return JSON.parse(((await r.core.barrier.get(key)) ?? Buffer.from('[]')).toString('utf8')) as MountEntry[];
}

/** An auth method that logs in whoever names themselves. */
const nameAuth: EngineFactory = {
  type: 'nameauth', kind: 'auth',
  create: () => new Backend('nameauth', [definePath({
    pattern: 'login',
    unauthenticated: true,
    fields: { name: { type: 'string', required: true } },
    operations: { update: async (_req, f) => ({ login: { aliasName: f.string('name'), policies: ['default'] } }) },
  })]),
};

/** A secrets engine whose reads are leased credentials; it counts the revocations it is asked for. */
function leasingEngine(): EngineFactory & { revoked: number } {
  const engine = {
    type: 'leasing', kind: 'secret' as const, revoked: 0,
    create: () => new Backend('leasing', [definePath({
      pattern: 'creds',
      operations: { read: async () => ({ data: { user: 'u' }, secret: { type: 'cred', ttl: 600, renewable: false, internal: {} } }) },
    })], { cred: { revoke: async () => { engine.revoked++; } } }),
  };
  return engine;
}

describe('Core.sharedChanged', () => {
  it('ends the tokens and leases this cluster issued through mounts the stream removed, and no others', async () => {
    const leasing = leasingEngine();
    const r = await rig({ engines: [nameAuth, leasing] });
    await r.ok('update', 'sys/auth/names', r.root, { type: 'nameauth' });
    await r.ok('update', 'sys/auth/others', r.root, { type: 'nameauth' });
    await r.ok('update', 'sys/mounts/creds', r.root, { type: 'leasing' });
    await r.ok('update', 'sys/mounts/kept', r.root, { type: 'leasing' });
    const login = (await r.ok('update', 'auth/names/login', undefined, { name: 'alice' })).body.auth.client_token as string;
    const other = (await r.ok('update', 'auth/others/login', undefined, { name: 'bob' })).body.auth.client_token as string;
    const lease = (await r.ok('read', 'creds/creds', r.root)).body.lease_id as string;
    const keptLease = (await r.ok('read', 'kept/creds', r.root)).body.lease_id as string;

    await streamed(r, 'core/auth', (await table(r, 'core/auth')).filter((e) => e.path !== 'names/'));
    await streamed(r, 'core/mounts', (await table(r, 'core/mounts')).filter((e) => e.path !== 'creds/'));
    await r.core.sharedChanged(['core/auth', 'core/mounts']);

    expect(await r.stored(login)).toBe(false);
    expect(await r.stored(other)).toBe(true);
    await expect(r.core.expiration.lookup(lease)).rejects.toThrow();
    expect((await r.core.expiration.lookup(keptLease)).leaseId).toBe(keptLease);
    expect(leasing.revoked).toBe(0);
  });

  it('brings up a mount the stream added, and drops one it removed', async () => {
    const r = await rig({ engines: [storeEngine('kv')] });
    const before = await table(r, 'core/mounts');
    const uuid = randomUUID();
    const entry: MountEntry = {
      path: 'streamed/', type: 'kv', description: '', accessor: 'kv_1234abcd', uuid, local: false, seal_wrap: false,
      external_entropy_access: false, options: {}, config: { default_lease_ttl: 0, max_lease_ttl: 0, force_no_cache: false },
    };
    await streamed(r, 'core/mounts', [...before, entry]);
    await streamed(r, `logical/${uuid}/x`, { v: 1 });
    expect((await r.call('read', 'streamed/x', r.root)).status).toBe(404);

    await r.core.sharedChanged(['core/mounts', `logical/${uuid}/x`]);
    expect(data(await r.ok('read', 'streamed/x', r.root))).toEqual({ v: 1 });
    expect(data(await r.ok('read', 'sys/mounts', r.root))['streamed/']).toMatchObject({ type: 'kv', uuid });

    await streamed(r, 'core/mounts', before);
    await r.core.sharedChanged(['core/mounts']);
    expect((await r.call('read', 'streamed/x', r.root)).status).toBe(404);
    expect(r.core.backendOf(uuid)).toBeUndefined();
  });

  it('keeps the mounts that did not change running, and this cluster\'s local mounts', async () => {
    const r = await rig({ engines: [storeEngine('kv')] });
    await r.ok('update', 'sys/mounts/here', r.root, { type: 'kv', local: true });
    await r.ok('update', 'here/x', r.root, { v: 1 });
    const here = (data(await r.ok('read', 'sys/mounts/here', r.root)) as { uuid: string }).uuid;
    const backend = r.core.backendOf(here);
    await streamed(r, 'core/mounts', await table(r, 'core/mounts'));
    await r.core.sharedChanged(['core/mounts']);
    expect(r.core.backendOf(here)).toBe(backend);
    expect(data(await r.ok('read', 'here/x', r.root))).toEqual({ v: 1 });
  });

  it('applies a policy the stream changed to the next request', async () => {
    const r = await rig({ engines: [storeEngine('kv')] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv' });
    await r.ok('update', 'secret/x', r.root, { v: 1 });
    const token = (await r.token(r.root, { policies: ['reader'] })).client_token as string;
    expect((await r.call('read', 'secret/x', token)).status).toBe(403);
    await streamed(r, 'sys/policy/reader', 'path "secret/*" { capabilities = ["read"] }');
    await r.core.sharedChanged(['sys/policy/reader']);
    expect(data(await r.ok('read', 'secret/x', token))).toEqual({ v: 1 });
  });

  it('follows namespaces the stream removed and brought back', async () => {
    const r = await rig({ engines: [storeEngine('kv')] });
    const id = data(await r.ok('update', 'sys/namespaces/team', r.root))['id'] as string;
    await r.ok('update', 'team/sys/mounts/secret', r.root, { type: 'kv' });
    await r.ok('update', 'team/secret/x', r.root, { v: 1 });
    const keys = [`sys/namespaces/${id}`, `core/namespaces/${id}/mounts`, `core/namespaces/${id}/auth`];
    const saved = await Promise.all(keys.map((k) => r.storage.get(k)));
    for (const k of keys) await r.storage.delete(k);
    await r.core.sharedChanged(keys);
    expect((await r.call('read', 'team/secret/x', r.root)).status).toBe(404);

    for (const [i, k] of keys.entries()) await r.storage.put(k, saved[i] as Buffer);
    await r.core.sharedChanged(keys);
    expect(data(await r.ok('read', 'team/secret/x', r.root))).toEqual({ v: 1 });
  });
});
