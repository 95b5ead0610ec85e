import type { CoreReply, ReplicationRoles } from './core';
import { Backend } from './framework/backend';
import type { EngineFactory } from './framework/engine';
import { definePath } from './framework/types';
import { currentWriteScope, type ForwardedWrite, type WriteScope } from './replication/forwarding';
import { storeEngine } from './test-support/store-engine';
import { data, rig, type Rig } from './testing';

/** An engine whose writes hide a storage failure from the core, as a careless plugin might. */
const swallowingEngine: EngineFactory = {
  kind: 'secret', type: 'swallow',
  create: () => new Backend('swallow', [definePath({
    pattern: '(?<path>.*)',
    arbitraryFields: true,
    operations: {
      async update(req, f) {
        // A slow handler is still running when quicker writes begun after it have finished.
        if (f.string('path').startsWith('slow')) await new Promise((resolve) => setTimeout(resolve, 50));
        try {
          await req.storage.put(f.string('path'), Buffer.from('x'));
        } catch {
          return { data: { stored: false } };
        }
        return { data: { stored: true } };
      },
    },
  })]),
};

/**
 * An engine whose reads record the write scope they run in; `writes/...` reads also try to store
 * (as an engine that caches on read might) and throw the refusal wrapped in an error of their
 * own. Its leases' revocation writes to its storage too.
 */
function probeEngine(scopes: Array<WriteScope | undefined>): EngineFactory {
  return {
    kind: 'secret', type: 'probe',
    create: () => new Backend('probe', [definePath({
      pattern: '(?<path>.*)',
      arbitraryFields: true,
      operations: {
        async read(req, f) {
          scopes.push(currentWriteScope());
          const path = f.string('path');
          if (path.startsWith('writes/')) {
            try {
              await req.storage.put(path, Buffer.from('cached'));
            } catch (err) {
              throw new Error('the probe could not cache', { cause: err });
            }
          }
          if (path.startsWith('lease/')) return { data: { path }, secret: { type: 'probe', ttl: 600, renewable: false, internal: { path } } };
          return { data: { path } };
        },
        async update(req, f) {
          scopes.push(currentWriteScope());
          await req.storage.put(f.string('path'), Buffer.from('x'));
          return null;
        },
      },
    })], {
      probe: {
        revoke: async (req, internal) => {
          await req.storage.put(`revoked/${String(internal['path'])}`, Buffer.from('x'));
        },
      },
    }),
  };
}

interface Secondary {
  forwarded: ForwardedWrite[];
}

type Primary = CoreReply | ((request: ForwardedWrite) => Promise<CoreReply>);

/** Makes the rig's cluster a performance secondary whose primary answers every forwarded write with `answer`. */
function becomeSecondary(r: Rig, answer: Primary = { status: 204, body: null }, withForward = true): Secondary {
  const forwarded: ForwardedWrite[] = [];
  const forwardWrite = async (request: ForwardedWrite) => {
    forwarded.push(request);
    return typeof answer === 'function' ? answer(request) : answer;
  };
  const roles: ReplicationRoles = {
    drMode: () => 'disabled', performanceMode: () => 'secondary', servesOnDrSecondary: () => false,
    ...(withForward ? { forwardWrite } : {}),
  };
  r.core.replication = roles;
  return { forwarded };
}

async function setUp(): Promise<{ r: Rig; secretUuid: string }> {
  const r = await rig({ engines: [storeEngine('kv'), swallowingEngine] });
  await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv' });
  await r.ok('update', 'sys/mounts/here', r.root, { type: 'kv', local: true });
  await r.ok('update', 'secret/old', r.root, { v: 'before' });
  const secretUuid = (data(await r.ok('read', 'sys/mounts/secret', r.root)) as { uuid: string }).uuid;
  return { r, secretUuid };
}

/** An auth method that logs in whoever names themselves. */
const nameAuth: EngineFactory = {
  type: 'nameauth', kind: 'auth',
  create: () => new Backend('nameauth', [definePath({
    pattern: 'login',
    unauthenticated: true,
    fields: { name: { type: 'string', required: true } },
    operations: { update: async (_req, f) => ({ login: { aliasName: f.string('name'), policies: ['reader'] } }) },
  })]),
};

/** An auth method that logs in whoever names themselves, and records each login in storage it keeps local. */
class RecordingNameAuth extends Backend {
  override readonly localStorage = ['seen/'];

  constructor() {
    super('recnames', [definePath({
      pattern: 'login',
      unauthenticated: true,
      fields: { name: { type: 'string', required: true } },
      operations: {
        update: async (req, f) => {
          await req.storage.put(`seen/${f.string('name')}`, Buffer.from('1'));
          return { login: { aliasName: f.string('name'), policies: ['reader'] } };
        },
      },
    })]);
  }
}

/**
 * A primary over the same storage: it runs the forwarded write with the core as a primary, so
 * what it writes is at once "streamed back" to the secondary.
 */
function sameStoragePrimary(r: Rig): (request: ForwardedWrite) => Promise<CoreReply> {
  return async (request) => {
    const roles = r.core.replication;
    r.core.replication = null;
    try {
      return await r.core.handleForwarded(request);
    } finally {
      r.core.replication = roles;
    }
  };
}

describe('a performance secondary', () => {
  it('has the primary register a first login\'s identity, and issues the token itself', async () => {
    const r = await rig({ engines: [nameAuth] });
    await r.ok('update', 'sys/auth/names', r.root, { type: 'nameauth' });
    const s = becomeSecondary(r, sameStoragePrimary(r));
    const first = (await r.ok('update', 'auth/names/login', undefined, { name: 'alice' })).body.auth;
    expect(s.forwarded.map((f) => f.path)).toEqual(['identity/forwarded/login-alias']);
    expect(first.entity_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await r.stored(first.client_token)).toBe(true);
    expect(await r.works(first.client_token)).toBe(true);
    const again = (await r.ok('update', 'auth/names/login', undefined, { name: 'alice' })).body.auth;
    expect(again.entity_id).toBe(first.entity_id);
    expect(s.forwarded).toHaveLength(1);
  });

  it('answers the primary\'s refusal of a login\'s identity', async () => {
    const r = await rig({ engines: [nameAuth] });
    await r.ok('update', 'sys/auth/names', r.root, { type: 'nameauth' });
    becomeSecondary(r, { status: 400, body: { errors: ['no such mount accessor'] } });
    const reply = await r.call('update', 'auth/names/login', undefined, { name: 'alice' });
    expect(reply).toEqual({ status: 400, body: { errors: ['no such mount accessor'] } });
  });

  it('does not let a client register login identities on the primary', async () => {
    const r = await rig();
    const reply = await r.call('update', 'identity/forwarded/login-alias', r.root, {
      mount_accessor: 'a', mount_type: 't', mount_path: 'auth/x/', alias_name: 'n',
    });
    expect(reply.status).toBe(403);
  });

  it('forwards a write of replicated data with the request as the client sent it, storing nothing itself', async () => {
    const { r, secretUuid } = await setUp();
    const s = becomeSecondary(r, { status: 200, body: { data: { from: 'primary' } } });
    const reply = await r.call('update', 'secret/new', r.root, { v: 'after' }, '127.0.0.9');
    expect(reply).toEqual({ status: 200, body: { data: { from: 'primary' } } });
    expect(s.forwarded).toEqual([{ operation: 'update', path: 'secret/new', data: { v: 'after' }, remoteAddress: '127.0.0.9' }]);
    expect(await r.core.barrier.get(`logical/${secretUuid}/new`)).toBeNull();
    // Reads stay here.
    expect(data(await r.ok('read', 'secret/old', r.root))).toEqual({ v: 'before' });
    expect(s.forwarded).toHaveLength(1);
  });

  it('keeps tokens, local mounts and their table here', async () => {
    const { r } = await setUp();
    const s = becomeSecondary(r);
    const child = await r.token(r.root, { policies: ['default'] });
    expect(await r.works(child.client_token)).toBe(true);
    await r.ok('update', 'here/x', r.root, { v: 1 });
    expect(data(await r.ok('read', 'here/x', r.root))).toEqual({ v: 1 });
    await r.ok('update', 'sys/mounts/also-here', r.root, { type: 'kv', local: true });
    await r.ok('update', 'also-here/y', r.root, { v: 2 });
    await r.ok('delete', 'sys/mounts/also-here', r.root);
    expect(s.forwarded).toEqual([]);
  });

  it('forwards a new shared mount without adding it here', async () => {
    const { r } = await setUp();
    const s = becomeSecondary(r);
    expect((await r.call('update', 'sys/mounts/elsewhere', r.root, { type: 'kv' })).status).toBe(204);
    expect(s.forwarded.map((f) => f.path)).toEqual(['sys/mounts/elsewhere']);
    expect(data(await r.ok('read', 'sys/mounts', r.root))['elsewhere/']).toBeUndefined();
  });

  it('authorizes before it forwards: a refused token is answered here and nothing is forwarded', async () => {
    const { r } = await setUp();
    const reader = await r.tokenWithPolicy('reader', 'path "secret/*" { capabilities = ["read"] }');
    const s = becomeSecondary(r);
    expect((await r.call('update', 'secret/new', reader, { v: 1 })).status).toBe(403);
    expect((await r.call('update', 'secret/new', 'no-such-token', { v: 1 })).status).toBe(403);
    expect(s.forwarded).toEqual([]);
  });

  it('passes the namespace header on', async () => {
    const { r } = await setUp();
    await r.ok('update', 'sys/namespaces/team', r.root);
    await r.ok('update', 'team/sys/mounts/secret', r.root, { type: 'kv' });
    const s = becomeSecondary(r);
    await r.core.handle({ operation: 'update', path: 'secret/x', data: { v: 1 }, token: r.root, headers: { 'x-vault-namespace': 'team' } });
    expect(s.forwarded).toEqual([{ operation: 'update', path: 'secret/x', data: { v: 1 }, namespace: 'team' }]);
  });

  it('forwards a write whose handler swallowed the refusal, and answers what the primary answered', async () => {
    const { r } = await setUp();
    await r.ok('update', 'sys/mounts/careless', r.root, { type: 'swallow' });
    const s = becomeSecondary(r, { status: 200, body: { data: { stored: true, by: 'primary' } } });
    const reply = await r.ok('update', 'careless/x', r.root, { v: 1 });
    expect(data(reply)).toEqual({ stored: true, by: 'primary' });
    expect(s.forwarded).toHaveLength(1);
  });

  it('answers a 500 and stores nothing when it has no primary to forward to', async () => {
    const { r, secretUuid } = await setUp();
    becomeSecondary(r, undefined, false);
    const reply = await r.call('update', 'secret/new', r.root, { v: 1 });
    expect(reply.status).toBe(500);
    expect(await r.core.barrier.get(`logical/${secretUuid}/new`)).toBeNull();
  });

  it('refuses a transaction with any shared key before writing its local ones', async () => {
    const { r, secretUuid } = await setUp();
    becomeSecondary(r);
    await expect(r.core.barrier.txn([
      { type: 'put', key: 'sys/token/cubbyhole/abc', value: Buffer.from('x') },
      { type: 'put', key: `logical/${secretUuid}/y`, value: Buffer.from('y') },
    ])).rejects.toThrow(/performance secondary/);
    expect(await r.core.barrier.get('sys/token/cubbyhole/abc')).toBeNull();
  });

  it('reports itself active with its mode in health', async () => {
    const { r } = await setUp();
    becomeSecondary(r);
    const health = await r.call('read', 'sys/health', undefined);
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ replication_performance_mode: 'secondary', standby: false });
  });

  it('runs reads outside the write scope, and still forwards a read whose handler was refused a shared write', async () => {
    const scopes: Array<WriteScope | undefined> = [];
    const r = await rig({ engines: [probeEngine(scopes)] });
    await r.ok('update', 'sys/mounts/probe', r.root, { type: 'probe' });
    const s = becomeSecondary(r, { status: 200, body: { data: { from: 'primary' } } });
    expect(data(await r.ok('read', 'probe/plain', r.root))).toEqual({ path: 'plain' });
    expect(data(await r.ok('read', 'probe/writes/x', r.root))).toEqual({ from: 'primary' });
    expect(s.forwarded).toEqual([{ operation: 'read', path: 'probe/writes/x', data: {} }]);
    expect(await r.core.barrier.get(`logical/${(data(await r.ok('read', 'sys/mounts/probe', r.root)) as { uuid: string }).uuid}/writes/x`)).toBeNull();
    // Writes run in one; none is left behind for what runs after.
    await r.ok('update', 'probe/y', r.root, { v: 1 });
    expect(scopes.map((scope) => scope === undefined)).toEqual([true, true, false]);
    expect(currentWriteScope()).toBeUndefined();
  });

  it('keeps lease and token revocations here, and answers a revocation refused a shared write without forwarding it', async () => {
    const scopes: Array<WriteScope | undefined> = [];
    const r = await rig({ engines: [probeEngine(scopes)] });
    await r.ok('update', 'sys/mounts/probe', r.root, { type: 'probe' });
    const s = becomeSecondary(r);
    const child = (await r.token(r.root, { policies: ['root'] })).client_token as string;
    const leased = (await r.ok('read', 'probe/lease/a', child)).body;
    expect(leased.lease_id).toMatch(/^probe\/lease\/a\//);

    const revoke = await r.call('update', 'sys/leases/revoke', r.root, { lease_id: leased.lease_id });
    expect(revoke.status).toBe(500);
    expect(JSON.stringify(revoke.body)).toContain('not forwarded');
    expect((await r.core.expiration.lookup(leased.lease_id)).leaseId).toBe(leased.lease_id);

    expect((await r.call('update', 'auth/token/revoke', r.root, { token: child })).status).toBe(204);
    expect(await r.stored(child)).toBe(false);
    expect(s.forwarded).toEqual([]);
  });

  it('never forwards a request to a local mount', async () => {
    const scopes: Array<WriteScope | undefined> = [];
    const r = await rig({ engines: [probeEngine(scopes)] });
    await r.ok('update', 'sys/mounts/mine', r.root, { type: 'probe', local: true });
    const s = becomeSecondary(r);
    await r.ok('update', 'mine/x', r.root, { v: 1 });
    // A local mount's reads store to its own (local) storage: nothing is refused.
    expect(data(await r.ok('read', 'mine/writes/y', r.root))).toEqual({ path: 'writes/y' });
    expect(s.forwarded).toEqual([]);
  });

  it('enables and disables a local audit device itself, and forwards a shared one', async () => {
    const { r } = await setUp();
    const s = becomeSecondary(r);
    expect((await r.call('update', 'sys/audit/mine', r.root, { type: 'file', local: true, options: { file_path: 'discard' } })).status).toBe(204);
    expect((await r.call('update', 'sys/audit/everywhere', r.root, { type: 'file', options: { file_path: 'discard' } })).status).toBe(204);
    expect(s.forwarded.map((f) => f.path)).toEqual(['sys/audit/everywhere']);
    expect(Object.keys(data(await r.ok('read', 'sys/audit', r.root)))).toEqual(['mine/']);
    expect((await r.call('delete', 'sys/audit/mine', r.root)).status).toBe(204);
    expect(s.forwarded).toHaveLength(1);
    expect(Object.keys(data(await r.ok('read', 'sys/audit', r.root)))).toEqual([]);
  });

  it('logs in itself through an auth method that writes to storage its engine keeps local, forwarding only the identity', async () => {
    const r = await rig({ engines: [{ type: 'recnames', kind: 'auth', create: () => new RecordingNameAuth() }] });
    await r.ok('update', 'sys/auth/names', r.root, { type: 'recnames' });
    const uuid = (data(await r.ok('read', 'sys/auth', r.root))['names/'] as { uuid: string }).uuid;
    const s = becomeSecondary(r, sameStoragePrimary(r));
    const login = (await r.ok('update', 'auth/names/login', undefined, { name: 'alice' })).body.auth;
    expect(s.forwarded.map((f) => f.path)).toEqual(['identity/forwarded/login-alias']);
    expect(await r.works(login.client_token)).toBe(true);
    expect(await r.core.barrier.get(`auth/${uuid}/seen/alice`)).not.toBeNull();
    expect(r.core.replicationScope(`auth/${uuid}/seen/alice`).scope).toBe('local');
    expect(r.core.replicationScope(`auth/${uuid}/config`).scope).toBe('shared');
  });

  it('finds the refusal of a write still running when the writes begun after it have finished', async () => {
    // The write scope is switched off when no write is in flight; before Node 24 switching it off
    // under a running write would lose that write's refusal.
    const { r } = await setUp();
    await r.ok('update', 'sys/mounts/careless', r.root, { type: 'swallow' });
    const s = becomeSecondary(r, { status: 200, body: { data: { stored: true } } });
    const slow = r.call('update', 'careless/slow', r.root, { v: 0 });
    for (let i = 0; i < 3; i++) expect((await r.call('update', `careless/quick${i}`, r.root, { v: i })).status).toBe(200);
    expect((await slow).status).toBe(200);
    expect(s.forwarded.map((f) => f.path)).toEqual(['careless/quick0', 'careless/quick1', 'careless/quick2', 'careless/slow']);
  });

  it('answers a login refused a shared write itself: its token must be this cluster\'s, not the primary\'s', async () => {
    const r = await rig({
      engines: [{
        type: 'countlogins', kind: 'auth',
        create: () => new Backend('countlogins', [definePath({
          pattern: 'login',
          unauthenticated: true,
          fields: { name: { type: 'string', required: true } },
          operations: {
            update: async (req, f) => {
              await req.storage.put(`logins/${f.string('name')}`, Buffer.from('1'));
              return { login: { aliasName: f.string('name'), policies: ['default'] } };
            },
          },
        })]),
      }],
    });
    await r.ok('update', 'sys/auth/counted', r.root, { type: 'countlogins' });
    const s = becomeSecondary(r, { status: 200, body: { auth: { client_token: 'a-token-of-the-primary' } } });
    const reply = await r.call('update', 'auth/counted/login', undefined, { name: 'alice' });
    expect(reply.status).toBe(500);
    expect(JSON.stringify(reply.body)).toContain('not forwarded');
    expect(s.forwarded).toEqual([]);
  });
});

