import { StrongroomError } from './errors';
import { Backend } from './framework/backend';
import { definePath } from './framework/types';
import type { ForwardedWrite } from './replication/forwarding';
import { storeEngine } from './test-support/store-engine';
import { data, rig, type Reply, type Rig } from './testing';

async function forwarded(r: Rig, request: ForwardedWrite): Promise<Reply> {
  try {
    return await r.core.handleForwarded(request);
  } catch (err) {
    if (err instanceof StrongroomError) return { status: err.status, body: { errors: [err.message] } };
    throw err;
  }
}

describe('Core.handleForwarded on a performance primary', () => {
  it('runs a secondary\'s write without a token', async () => {
    const r = await rig({ engines: [storeEngine('kv')] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv' });
    expect((await forwarded(r, { operation: 'update', path: 'secret/x', data: { v: 1 }, remoteAddress: '127.0.0.9' })).status).toBe(204);
    expect(data(await r.ok('read', 'secret/x', r.root))).toEqual({ v: 1 });
    // The same request with no token sent to the primary's own API is refused.
    expect((await r.call('update', 'secret/y', undefined, { v: 1 })).status).toBe(403);
  });

  it('runs system writes the secondary forwards, and in the namespace the client named', async () => {
    const r = await rig({ engines: [storeEngine('kv')] });
    await r.ok('update', 'sys/namespaces/team', r.root);
    expect((await forwarded(r, { operation: 'update', path: 'sys/mounts/secret', data: { type: 'kv' }, namespace: 'team' })).status).toBe(204);
    expect((await forwarded(r, { operation: 'update', path: 'secret/x', data: { v: 2 }, namespace: 'team/' })).status).toBe(204);
    expect(data(await r.ok('read', 'team/secret/x', r.root))).toEqual({ v: 2 });
    expect((await forwarded(r, { operation: 'update', path: 'sys/policies/acl/p', data: { policy: 'path "a" { capabilities = ["read"] }' } })).status).toBe(204);
    expect(data(await r.ok('read', 'sys/policies/acl/p', r.root))['name']).toBe('p');
  });

  it('answers the primary\'s error for a write it refuses', async () => {
    const r = await rig({ engines: [storeEngine('kv')] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv' });
    expect((await forwarded(r, { operation: 'update', path: 'nowhere/x', data: { v: 1 } })).status).toBe(404);
    expect((await forwarded(r, { operation: 'update', path: 'secret/x', data: {} })).status).toBe(400);
  });

  it('refuses paths about one cluster with a 400', async () => {
    const r = await rig();
    for (const path of ['sys/seal', 'sys/step-down', 'sys/rotate', 'sys/storage/raft/snapshot', 'sys/replication/performance/primary/demote', 'sys/generate-root/attempt']) {
      const reply = await forwarded(r, { operation: 'update', path, data: {} });
      expect([path, reply.status]).toEqual([path, 400]);
      expect(reply.body.errors[0]).toMatch(/"path"/);
    }
    expect(r.core.sealed).toBe(false);
  });

  it('refuses, with a 400 and writing nothing, a write to its own local mount or about tokens, leases and wrapping', async () => {
    const r = await rig({ engines: [storeEngine('kv')] });
    await r.ok('update', 'sys/mounts/here', r.root, { type: 'kv', local: true });
    const tokens = (await r.ok('list', 'auth/token/accessors', r.root)).body.data.keys as string[];
    for (const [path, body] of [
      ['here/x', { v: 1 }], ['auth/token/create', {}], ['sys/leases/revoke', { lease_id: 'a/b' }], ['sys/revoke/a/b', {}],
      ['sys/leases/revoke-prefix/a', {}], ['sys/wrapping/wrap', { v: 1 }],
    ] as const) {
      const reply = await forwarded(r, { operation: 'update', path, data: { ...body } });
      expect([path, reply.status]).toEqual([path, 400]);
      expect(reply.body.errors[0]).toMatch(/"path".*cannot be forwarded/);
    }
    expect((await r.call('read', 'here/x', r.root)).status).toBe(404);
    expect((await r.ok('list', 'auth/token/accessors', r.root)).body.data.keys).toEqual(tokens);
  });

  it('refuses a forwarded login with a 400: the token it made would be the primary\'s', async () => {
    const r = await rig({
      engines: [{
        type: 'names', kind: 'auth',
        create: () => new Backend('names', [definePath({
          pattern: 'login', unauthenticated: true, fields: { name: { type: 'string', required: true } },
          operations: { update: async (_req, f) => ({ login: { aliasName: f.string('name'), policies: ['default'] } }) },
        })]),
      }],
    });
    await r.ok('update', 'sys/auth/names', r.root, { type: 'names' });
    const reply = await forwarded(r, { operation: 'update', path: 'auth/names/login', data: { name: 'alice' } });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toMatch(/"path".*cannot be forwarded/);
  });
});
