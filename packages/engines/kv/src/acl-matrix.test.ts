import { testing } from '@strongroom/core';
import { kvEngine } from './kv-engine';

const { data, rig } = testing;
type Body = testing.Body;
type Rig = testing.Rig;

/**
 * End-to-end ACL checks through `core.handle`: policy, token, router, KV engine. One capability
 * at a time on KV's own paths, where a write is a create or an update and patch is a verb of its
 * own (core's rule priority and deny handling are tested in core).
 */

let r: Rig;

beforeAll(async () => {
  r = await rig({ engines: [kvEngine] });
  await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv', options: { version: '2' } });
});

async function seed(path: string, value: Body = { v: 1 }): Promise<void> {
  await r.ok('update', `secret/data/${path}`, r.root, { data: value });
}

async function currentVersion(path: string): Promise<number | null> {
  const reply = await r.call('read', `secret/metadata/${path}`, r.root);
  return reply.status === 200 ? (data(reply)['current_version'] as number) : null;
}

async function isLive(path: string): Promise<boolean> {
  return (await r.call('read', `secret/data/${path}`, r.root)).status === 200;
}

type Attempt = 'create' | 'update' | 'read' | 'patch' | 'delete' | 'list';
const ATTEMPTS: readonly Attempt[] = ['create', 'update', 'read', 'patch', 'delete', 'list'];
const CAPABILITIES = ['create', 'read', 'update', 'patch', 'delete', 'list', 'sudo', 'deny'] as const;

/**
 * Runs one kind of request as `token` on a secret of its own under matrix/<tag>/, checks what
 * happened to the secret, and says whether the request was allowed.
 */
async function attempt(kind: Attempt, token: string, tag: string): Promise<boolean> {
  const dir = `matrix/${tag}`;
  const path = `${dir}/${kind}`;
  switch (kind) {
    case 'create': {
      const status = (await r.call('update', `secret/data/${path}`, token, { data: { v: 'new' } })).status;
      expect(await currentVersion(path)).toBe(status === 200 ? 1 : null);
      return status !== 403;
    }
    case 'update': {
      await seed(path);
      const status = (await r.call('update', `secret/data/${path}`, token, { data: { v: 2 } })).status;
      expect(await currentVersion(path)).toBe(status === 200 ? 2 : 1);
      return status !== 403;
    }
    case 'read': {
      await seed(path, { v: 'readable' });
      const reply = await r.call('read', `secret/data/${path}`, token);
      const status = reply.status;
      if (status === 200) expect(data(reply)['data']).toEqual({ v: 'readable' });
      return status !== 403;
    }
    case 'patch': {
      await seed(path, { a: 1 });
      const status = (await r.call('patch', `secret/data/${path}`, token, { data: { b: 2 }, options: {} })).status;
      expect(await currentVersion(path)).toBe(status === 200 ? 2 : 1);
      if (status === 200) expect(data(await r.ok('read', `secret/data/${path}`, r.root))['data']).toEqual({ a: 1, b: 2 });
      return status !== 403;
    }
    case 'delete': {
      await seed(path);
      const status = (await r.call('delete', `secret/data/${path}`, token)).status;
      expect(await isLive(path)).toBe(status === 403);
      return status !== 403;
    }
    case 'list': {
      await seed(path);
      const reply = await r.call('list', `secret/metadata/${dir}/`, token);
      const status = reply.status;
      if (status === 200) expect(data(reply)['keys']).toContain('list');
      return status !== 403;
    }
  }
}

describe('one capability at a time on secret/data/matrix* and secret/metadata/matrix*', () => {
  it.each(CAPABILITIES)('a token granted only %s can do exactly that', async (capability) => {
    const token = await r.tokenWithPolicies({
      [`only-${capability}`]: `
        path "secret/data/matrix*" { capabilities = ["${capability}"] }
        path "secret/metadata/matrix*" { capabilities = ["${capability}"] }
      `,
    });
    const allowed: Attempt[] = [];
    for (const kind of ATTEMPTS) if (await attempt(kind, token, `only-${capability}`)) allowed.push(kind);
    expect(allowed).toEqual((ATTEMPTS as readonly string[]).includes(capability) ? [capability] : []);
  });

  it('a token granted every capability can do everything', async () => {
    const all = '["create", "read", "update", "patch", "delete", "list"]';
    const token = await r.tokenWithPolicies({ all: `path "secret/data/matrix*" { capabilities = ${all} }\npath "secret/metadata/matrix*" { capabilities = ${all} }` });
    const allowed: Attempt[] = [];
    for (const kind of ATTEMPTS) if (await attempt(kind, token, 'all')) allowed.push(kind);
    expect(allowed).toEqual([...ATTEMPTS]);
  });

  it('the root token can do everything', async () => {
    const allowed: Attempt[] = [];
    for (const kind of ATTEMPTS) if (await attempt(kind, r.root, 'root')) allowed.push(kind);
    expect(allowed).toEqual([...ATTEMPTS]);
  });

  it('capabilities from two policies on the same path add up', async () => {
    const token = await r.tokenWithPolicies({
      reads: 'path "secret/data/matrix*" { capabilities = ["read"] }',
      creates: 'path "secret/data/matrix*" { capabilities = ["create"] }',
    });
    const allowed: Attempt[] = [];
    for (const kind of ATTEMPTS) if (await attempt(kind, token, 'union')) allowed.push(kind);
    expect(allowed).toEqual(['create', 'read']);
  });

  it('outside the granted paths nothing is allowed', async () => {
    const token = await r.tokenWithPolicies({ narrow: 'path "secret/data/matrix*" { capabilities = ["create", "read", "update", "patch", "delete"] }' });
    await seed('elsewhere/x');
    expect((await r.call('read', 'secret/data/elsewhere/x', token)).status).toBe(403);
    expect((await r.call('update', 'secret/data/elsewhere/x', token, { data: { v: 9 } })).status).toBe(403);
    expect((await r.call('read', 'secret/metadata/matrix/x', token)).status).toBe(403);
    expect((await r.call('delete', 'secret/metadata/matrix/x', token)).status).toBe(403);
    expect(await currentVersion('elsewhere/x')).toBe(1);
  });
});
