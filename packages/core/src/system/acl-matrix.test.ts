import { data, rig, type Body, type Rig } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/**
 * End-to-end ACL checks through `core.handle`: policy, token and router, in front of a stand-in
 * for a KV mount (the capability matrix over the real KV engine is beside that engine).
 */

let r: Rig;

beforeAll(async () => {
  r = await rig({ engines: [storeEngine('kv')] });
  await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv', options: { version: '2' } });
});

async function seed(path: string, value: Body = { v: 1 }): Promise<void> {
  await r.ok('update', `secret/data/${path}`, r.root, { data: value });
}

/** What the secret at `path` holds, read as the root token. */
async function stored(path: string): Promise<unknown> {
  return data(await r.ok('read', `secret/data/${path}`, r.root))['data'];
}

describe('deny by default', () => {
  it('refuses a token with only the default policy everywhere under secret/', async () => {
    const token = await r.token(r.root, { policies: ['default'] });
    expect(token.policies).toEqual(['default']);
    await seed('default-only/x');
    expect((await r.call('read', 'secret/data/default-only/x', token.client_token)).status).toBe(403);
    expect((await r.call('update', 'secret/data/default-only/new', token.client_token, { data: { a: 1 } })).status).toBe(403);
    expect((await r.call('list', 'secret/metadata/', token.client_token)).status).toBe(403);
    expect((await r.call('read', 'secret/config', token.client_token)).status).toBe(403);
    expect((await r.call('read', 'sys/mounts', token.client_token)).status).toBe(403);
    // What the default policy does grant still works.
    expect((await r.call('read', 'auth/token/lookup-self', token.client_token)).status).toBe(200);
  });

  it('refuses a request without a token, or with an unknown one', async () => {
    await seed('anon/x');
    expect((await r.call('read', 'secret/data/anon/x', undefined)).status).toBe(403);
    expect((await r.call('read', 'secret/data/anon/x', 'hvs.AAAAAAAAAAAAAAAAAAAAAAAA')).status).toBe(403);
    expect((await r.call('read', 'sys/mounts', 'not-a-token')).status).toBe(403);
  });

  it('refuses a token whose policy no longer exists', async () => {
    const token = await r.tokenWithPolicy('short-lived', 'path "secret/data/*" { capabilities = ["read"] }');
    await seed('gone/x');
    expect((await r.call('read', 'secret/data/gone/x', token)).status).toBe(200);
    await r.ok('delete', 'sys/policies/acl/short-lived', r.root);
    expect((await r.call('read', 'secret/data/gone/x', token)).status).toBe(403);
  });
});

describe('rule priority', () => {
  /** Whether `token` may read each path (a 404 counts as allowed: the ACL let it through). */
  async function readable(token: string, paths: string[]): Promise<Record<string, boolean>> {
    const out: Record<string, boolean> = {};
    for (const p of paths) out[p] = (await r.call('read', `secret/data/${p}`, token)).status !== 403;
    return out;
  }

  it('a + segment rule outranks a * glob whose wildcard starts at the same place', async () => {
    const token = await r.tokenWithPolicies({ p: 'path "secret/data/prio1/*" { capabilities = ["deny"] }\npath "secret/data/prio1/+/x" { capabilities = ["read"] }' });
    expect(await readable(token, ['prio1/a/x', 'prio1/a/y', 'prio1/a/b/x'])).toEqual({ 'prio1/a/x': true, 'prio1/a/y': false, 'prio1/a/b/x': false });
  });

  it('the rule whose first wildcard comes later wins', async () => {
    const token = await r.tokenWithPolicies({ p: 'path "secret/data/prio2/a*" { capabilities = ["read"] }\npath "secret/data/prio2/+/x" { capabilities = ["deny"] }' });
    expect(await readable(token, ['prio2/a/x', 'prio2/ab/x', 'prio2/b/x'])).toEqual({ 'prio2/a/x': true, 'prio2/ab/x': true, 'prio2/b/x': false });
    const other = await r.tokenWithPolicies({ p: 'path "secret/data/prio2/+/+" { capabilities = ["deny"] }\npath "secret/data/prio2/team/+" { capabilities = ["read"] }' });
    expect(await readable(other, ['prio2/team/x', 'prio2/other/x'])).toEqual({ 'prio2/team/x': true, 'prio2/other/x': false });
  });

  it('with the wildcard at the same place, fewer + segments win', async () => {
    const token = await r.tokenWithPolicies({ p: 'path "secret/data/prio3/+/b/+" { capabilities = ["deny"] }\npath "secret/data/prio3/+/b/c" { capabilities = ["read"] }' });
    expect(await readable(token, ['prio3/a/b/c', 'prio3/a/b/d'])).toEqual({ 'prio3/a/b/c': true, 'prio3/a/b/d': false });
  });

  it('a rule without a trailing * outranks the same rule with one', async () => {
    const token = await r.tokenWithPolicies({ p: 'path "secret/data/prio4/+/x" { capabilities = ["deny"] }\npath "secret/data/prio4/+/x*" { capabilities = ["read"] }' });
    expect(await readable(token, ['prio4/a/x', 'prio4/a/xy', 'prio4/a/x/y'])).toEqual({ 'prio4/a/x': false, 'prio4/a/xy': true, 'prio4/a/x/y': true });
  });

  it('the longer glob wins, and an exact path beats every glob', async () => {
    const token = await r.tokenWithPolicies({
      p: `
        path "secret/data/prio5/*" { capabilities = ["read"] }
        path "secret/data/prio5/private/*" { capabilities = ["deny"] }
        path "secret/data/prio5/private/open" { capabilities = ["read"] }
      `,
    });
    expect(await readable(token, ['prio5/public/x', 'prio5/private/x', 'prio5/private/open', 'prio5/private/open2'])).toEqual({
      'prio5/public/x': true, 'prio5/private/x': false, 'prio5/private/open': true, 'prio5/private/open2': false,
    });
  });

  it('a + matches exactly one whole segment', async () => {
    const token = await r.tokenWithPolicies({ p: 'path "secret/data/prio6/+" { capabilities = ["read"] }' });
    expect(await readable(token, ['prio6/a', 'prio6/a/b', 'prio6'])).toEqual({ 'prio6/a': true, 'prio6/a/b': false, prio6: false });
  });

  it('a glob is a plain prefix, not a segment boundary', async () => {
    const token = await r.tokenWithPolicies({ p: 'path "secret/data/prio7/app*" { capabilities = ["read"] }' });
    expect(await readable(token, ['prio7/app', 'prio7/apple', 'prio7/app/x', 'prio7/ap'])).toEqual({
      'prio7/app': true, 'prio7/apple': true, 'prio7/app/x': true, 'prio7/ap': false,
    });
  });
});

describe('deny across policies', () => {
  it('a deny in one policy beats a grant for the same path in another', async () => {
    await seed('denied/x');
    const token = await r.tokenWithPolicies({
      grants: 'path "secret/data/denied/*" { capabilities = ["create", "read", "update", "delete"] }',
      denies: 'path "secret/data/denied/*" { capabilities = ["deny"] }',
    });
    expect((await r.call('read', 'secret/data/denied/x', token)).status).toBe(403);
    expect((await r.call('update', 'secret/data/denied/x', token, { data: { v: 2 } })).status).toBe(403);
    expect((await r.call('delete', 'secret/data/denied/x', token)).status).toBe(403);
    expect(await stored('denied/x')).toEqual({ v: 1 });
  });

  it('the order of the policies does not matter', async () => {
    await seed('denied2/x');
    const token = await r.tokenWithPolicies({
      denies: 'path "secret/data/denied2/x" { capabilities = ["deny"] }',
      grants: 'path "secret/data/denied2/x" { capabilities = ["read", "sudo"] }',
    });
    expect((await r.call('read', 'secret/data/denied2/x', token)).status).toBe(403);
    const caps = await r.ok('update', 'sys/capabilities-self', token, { paths: ['secret/data/denied2/x'] });
    expect(data(caps)['capabilities']).toEqual(['deny']);
  });

  it('a deny on an exact path beats a glob grant in another policy', async () => {
    await seed('denied3/secret');
    await seed('denied3/public');
    const token = await r.tokenWithPolicies({
      grants: 'path "secret/data/denied3/*" { capabilities = ["read"] }',
      denies: 'path "secret/data/denied3/secret" { capabilities = ["deny"] }',
    });
    expect((await r.call('read', 'secret/data/denied3/secret', token)).status).toBe(403);
    expect((await r.call('read', 'secret/data/denied3/public', token)).status).toBe(200);
  });

  it('a deny together with other capabilities in one stanza still denies', async () => {
    await seed('denied4/x');
    const token = await r.tokenWithPolicies({ mixed: 'path "secret/data/denied4/*" { capabilities = ["read", "deny"] }' });
    expect((await r.call('read', 'secret/data/denied4/x', token)).status).toBe(403);
  });
});

describe('sudo through the router', () => {
  it('sudo on a path without the operation\'s own capability grants nothing', async () => {
    const token = await r.tokenWithPolicies({ p: 'path "sys/rotate" { capabilities = ["sudo"] }' });
    expect((await r.call('update', 'sys/rotate', token)).status).toBe(403);
  });
});
