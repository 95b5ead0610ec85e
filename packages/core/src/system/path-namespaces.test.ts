import { StrongroomError } from '../errors';
import type { Operation } from '../framework/types';
import { rig, type Reply, type Rig } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

/** A request in namespace `ns` (through the X-Vault-Namespace header). */
async function inNs(r: Rig, ns: string, op: Operation, path: string, token: string | undefined, data: Record<string, unknown> = {}): Promise<Reply> {
  try {
    return await r.core.handle({ operation: op, path, data, headers: { 'x-vault-namespace': ns }, ...(token ? { token } : {}) });
  } catch (err) {
    if (err instanceof StrongroomError) return { status: err.status, body: { errors: [err.message] } };
    throw err;
  }
}

async function setup() {
  const r = await rig({ engines: [kvStandIn] });
  await r.ok('update', 'sys/namespaces/team', r.root, { custom_metadata: { owner: 'ops' } });
  return r;
}

describe('namespaces', () => {
  it('creates, reads and lists namespaces, nested by header or by path prefix', async () => {
    const r = await setup();
    const team = (await r.ok('read', 'sys/namespaces/team', r.root)).body.data;
    expect(team).toEqual({ id: expect.stringMatching(/^\w{5}$/), path: 'team/', custom_metadata: { owner: 'ops' } });
    expect((await inNs(r, 'team', 'update', 'sys/namespaces/app', r.root)).body.data.path).toBe('team/app/');
    expect((await r.ok('update', 'team/sys/namespaces/web', r.root)).body.data.path).toBe('team/web/');
    const listed = (await r.ok('list', 'team/sys/namespaces/', r.root)).body.data;
    expect(listed.keys).toEqual(['app/', 'web/']);
    expect(listed.key_info['app/'].path).toBe('team/app/');
    expect((await r.ok('list', 'sys/namespaces/', r.root)).body.data.keys).toEqual(['team/']);
  });

  it('refuses bad, duplicate and orphaned namespace names', async () => {
    const r = await setup();
    expect((await r.call('update', 'sys/namespaces/team', r.root)).status).toBe(400);
    expect((await r.call('update', 'sys/namespaces/bad name', r.root)).body.errors[0]).toMatch(/"path"/);
    expect((await r.call('update', 'sys/namespaces/sys', r.root)).status).toBe(400);
    for (const name of ['a\u0000b', 'a\ud800', 'n'.repeat(300), 'team/..', '..']) {
      const reply = await r.call('update', `sys/namespaces/${name}`, r.root);
      expect(reply.status).toBe(400);
      expect(reply.body.errors[0]).toMatch(/^invalid value for "path"/);
    }
    expect((await r.call('update', 'sys/namespaces/missing/child', r.root)).body.errors[0]).toMatch(/parent namespace "missing\/" does not exist/);
    expect((await r.call('read', 'sys/namespaces/nope', r.root)).status).toBe(404);
    expect((await inNs(r, 'nope', 'read', 'sys/mounts', r.root)).status).toBe(404);
  });

  it('keeps mounts and secrets apart per namespace', async () => {
    const r = await setup();
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    await r.ok('update', 'team/sys/mounts/secret', r.root, { type: 'kv-v2' });
    await r.ok('update', 'secret/data/db', r.root, { data: { who: 'root' } });
    await inNs(r, 'team', 'update', 'secret/data/db', r.root, { data: { who: 'team' } });
    expect((await r.ok('read', 'secret/data/db', r.root)).body.data.data.who).toBe('root');
    expect((await r.ok('read', 'team/secret/data/db', r.root)).body.data.data.who).toBe('team');
    expect(Object.keys((await inNs(r, 'team', 'read', 'sys/mounts', r.root)).body.data)).toEqual(['secret/', 'sys/']);
  });

  it('lets a token work in its namespace and below, never in another', async () => {
    const r = await setup();
    await r.ok('update', 'sys/namespaces/other', r.root);
    await r.ok('update', 'team/sys/namespaces/app', r.root);
    for (const ns of ['', 'team/', 'team/app/', 'other/']) await r.ok('update', `${ns}sys/mounts/secret`, r.root, { type: 'kv-v2' });
    await inNs(r, 'team', 'update', 'sys/policies/acl/rw', r.root, { policy: 'path "secret/*" { capabilities = ["create", "read", "update"] }\npath "app/secret/*" { capabilities = ["read"] }' });
    const teamToken = (await inNs(r, 'team', 'update', 'auth/token/create', r.root, { policies: ['rw'] })).body.auth.client_token;
    expect((await inNs(r, 'team', 'update', 'secret/data/x', teamToken, { data: { a: 1 } })).status).toBe(204);
    await r.ok('update', 'team/app/secret/data/y', r.root, { data: { b: 2 } });
    expect((await inNs(r, 'team/app', 'read', 'secret/data/y', teamToken)).status).toBe(200);
    expect((await inNs(r, 'other', 'read', 'secret/data/x', teamToken)).status).toBe(403);
    expect((await r.call('read', 'secret/data/x', teamToken)).status).toBe(403);
    expect((await inNs(r, 'team', 'read', 'auth/token/lookup-self', teamToken)).body.data.policies).toEqual(['default', 'rw']);
  });

  it('reads a root token\'s policy paths with the namespace in front', async () => {
    const r = await setup();
    await r.ok('update', 'team/sys/mounts/secret', r.root, { type: 'kv-v2' });
    await r.ok('update', 'team/secret/data/x', r.root, { data: { v: 1 } });
    await r.policy('team-reader', 'path "team/secret/data/*" { capabilities = ["read"] }');
    const t = (await r.token(r.root, { policies: ['team-reader'] })).client_token;
    expect((await inNs(r, 'team', 'read', 'secret/data/x', t)).status).toBe(200);
    expect((await inNs(r, 'team', 'update', 'secret/data/x', t, { data: {} })).status).toBe(403);
    const caps = await r.ok('update', 'sys/capabilities-self', t, { paths: ['team/secret/data/x'] });
    expect(caps.body.data.capabilities).toEqual(['read']);
    // Its default policy covers the root namespace's sys/ paths, not team/'s.
    expect((await inNs(r, 'team', 'update', 'sys/capabilities-self', t, { paths: ['secret/data/x'] })).status).toBe(403);
  });

  it('answers restricted endpoints only in the root namespace', async () => {
    const r = await setup();
    for (const path of ['sys/rotate', 'sys/key-status']) {
      const res = await inNs(r, 'team', path === 'sys/key-status' ? 'read' : 'update', path, r.root);
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toBe(`operation only available in the root namespace: ${path}`);
    }
    // The server-wide ones ignore the header, but under a namespace's path they are restricted too.
    for (const path of ['sys/seal', 'sys/health']) {
      const res = await r.call(path === 'sys/health' ? 'read' : 'update', `team/${path}`, r.root);
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toBe(`operation only available in the root namespace: ${path}`);
    }
    expect(r.core.sealed).toBe(false);
  });

  it('serves health, seal status, leader and seal whatever namespace the header names, as Vault does', async () => {
    const r = await setup();
    for (const ns of ['team', 'no-such-namespace']) {
      expect((await inNs(r, ns, 'read', 'sys/health', undefined)).body).toMatchObject({ sealed: false });
      expect((await inNs(r, ns, 'read', 'sys/seal-status', undefined)).body).toMatchObject({ sealed: false });
      expect((await inNs(r, ns, 'read', 'sys/leader', undefined)).status).toBe(200);
    }
    expect((await inNs(r, 'team', 'update', 'sys/seal', r.root)).status).toBe(204);
    expect(r.core.sealed).toBe(true);
  });

  it('refuses to delete a namespace with mounts or children, then deletes it and its tokens', async () => {
    const r = await setup();
    await r.ok('update', 'team/sys/mounts/kv', r.root, { type: 'kv-v2' });
    await r.ok('update', 'team/sys/namespaces/sub', r.root);
    const token = (await inNs(r, 'team', 'update', 'auth/token/create', r.root, {})).body.auth.client_token;
    expect((await r.call('delete', 'sys/namespaces/team', r.root)).body.errors[0]).toMatch(/still has child namespaces/);
    await r.ok('delete', 'team/sys/namespaces/sub', r.root);
    expect((await r.call('delete', 'sys/namespaces/team', r.root)).body.errors[0]).toMatch(/still has mounts \(kv\/\)/);
    await r.ok('delete', 'team/sys/mounts/kv', r.root);
    const teamId = (await r.ok('read', 'sys/namespaces/team', r.root)).body.data.id;
    await r.ok('update', 'team/sys/config/ui/custom-messages', r.root, {
      title: 't', message: Buffer.from('m').toString('base64'), start_time: '2026-01-01T00:00:00Z',
    });
    await r.ok('delete', 'sys/namespaces/team', r.root);
    expect((await r.call('read', 'sys/namespaces/team', r.root)).status).toBe(404);
    expect(await r.core.barrier.list(`sys/ui-messages/${teamId}/`)).toEqual([]);
    expect(await r.works(token)).toBe(false);
    expect(await r.core.barrier.list('core/namespaces/')).toEqual([]);
  });

  it('keeps namespaces, their mounts and policies across a restart', async () => {
    const r = await setup();
    await r.ok('update', 'team/sys/mounts/kv', r.root, { type: 'kv-v2' });
    await r.ok('update', 'team/kv/data/a', r.root, { data: { kept: true } });
    await r.ok('update', 'team/sys/policies/acl/p', r.root, { policy: 'path "kv/*" { capabilities = ["read"] }' });
    await r.restart();
    expect((await r.ok('read', 'team/kv/data/a', r.root)).body.data.data).toEqual({ kept: true });
    expect((await r.ok('read', 'team/sys/policies/acl/p', r.root)).body.data.name).toBe('p');
    expect((await r.call('read', 'sys/policies/acl/p', r.root)).status).toBe(404);
  });
});
