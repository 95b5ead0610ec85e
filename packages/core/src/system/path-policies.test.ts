import { data, failure, rig } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

const HCL = `
# read-only access to the app's secrets
path "secret/data/app/*" {
  capabilities = ["read", "list"]
}
`;

/** A list of numbers: the costliest shape per byte for the HCL parser. */
function numbersPolicy(bytes: number): string {
  const items: number[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    items.push(i);
    length += String(i).length + 1;
  }
  return `path "a" {\n  x = [${items.join(',')}]\n}\n`;
}

const JSON_POLICY = JSON.stringify({ path: { 'secret/data/json/*': { capabilities: ['create', 'update'] } } });

describe('sys/policies/acl', () => {
  it('writes, reads, lists and deletes an HCL policy', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await r.call('update', 'sys/policies/acl/app-reader', r.root, { policy: HCL })).status).toBe(204);
    const read = await r.call('read', 'sys/policies/acl/app-reader', r.root);
    expect(read.status).toBe(200);
    expect(data(read)).toEqual({ name: 'app-reader', policy: HCL });
    expect(data(await r.ok('list', 'sys/policies/acl/', r.root))['keys']).toEqual(['app-reader', 'default', 'root']);
    expect((await r.call('delete', 'sys/policies/acl/app-reader', r.root)).status).toBe(204);
    expect((await failure(r.call('read', 'sys/policies/acl/app-reader', r.root))).status).toBe(404);
    expect(data(await r.ok('list', 'sys/policies/acl', r.root))['keys']).toEqual(['default', 'root']);
  });

  it('stores a JSON policy as written and enforces it', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    await r.ok('update', 'sys/policies/acl/json-writer', r.root, { policy: JSON_POLICY });
    expect(data(await r.ok('read', 'sys/policies/acl/json-writer', r.root))['policy']).toBe(JSON_POLICY);
    const { client_token: token } = await r.token(r.root, { policies: ['json-writer'] });
    expect((await r.call('update', 'secret/data/json/x', token, { data: { a: 1 } })).status).toBe(204);
    expect((await failure(r.call('read', 'secret/data/json/x', token))).status).toBe(403);
  });

  it('accepts a base64-encoded policy and stores the decoded text', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/policies/acl/encoded', r.root, { policy: Buffer.from(HCL).toString('base64') });
    expect(data(await r.ok('read', 'sys/policies/acl/encoded', r.root))['policy']).toBe(HCL);
  });

  it('replaces a policy on a second write, and tokens holding it see the change at once', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    await r.ok('update', 'secret/data/app/x', r.root, { data: { a: 1 } });
    await r.ok('update', 'sys/policies/acl/changing', r.root, { policy: 'path "secret/data/app/*" { capabilities = ["read"] }' });
    const { client_token: token } = await r.token(r.root, { policies: ['changing'] });
    expect((await r.call('read', 'secret/data/app/x', token)).status).toBe(200);
    await r.ok('update', 'sys/policies/acl/changing', r.root, { policy: 'path "secret/data/other/*" { capabilities = ["read"] }' });
    expect((await failure(r.call('read', 'secret/data/app/x', token))).status).toBe(403);
    await r.ok('delete', 'sys/policies/acl/changing', r.root);
    expect((await failure(r.call('read', 'secret/data/other/x', token))).status).toBe(403);
  });

  it('lowercases names on write, read and delete', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/policies/acl/MixedCase', r.root, { policy: HCL });
    expect(data(await r.ok('read', 'sys/policies/acl/MIXEDCASE', r.root))['name']).toBe('mixedcase');
    expect(data(await r.ok('list', 'sys/policies/acl/', r.root))['keys']).toContain('mixedcase');
    await r.ok('delete', 'sys/policies/acl/MixedCASE', r.root);
    expect((await failure(r.call('read', 'sys/policies/acl/mixedcase', r.root))).status).toBe(404);
  });

  it('lists policies whose names contain a slash', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/policies/acl/team/dev', r.root, { policy: HCL });
    await r.ok('update', 'sys/policies/acl/team/ops/admin', r.root, { policy: HCL });
    await r.ok('update', 'sys/policies/acl/team', r.root, { policy: HCL });
    expect(data(await r.ok('read', 'sys/policies/acl/team/dev', r.root))['name']).toBe('team/dev');
    expect(data(await r.ok('list', 'sys/policies/acl/', r.root))['keys']).toEqual(['default', 'root', 'team', 'team/dev', 'team/ops/admin']);
    expect(data(await r.ok('read', 'sys/policy', r.root))['policies']).toEqual(['default', 'root', 'team', 'team/dev', 'team/ops/admin']);
  });

  it('refuses to write the root policy, however it is spelled', async () => {
    const r = await rig({ engines: [kvStandIn] });
    for (const name of ['root', 'ROOT', ' Root ']) {
      const err = await failure(r.call('update', `sys/policies/acl/${name}`, r.root, { policy: HCL }));
      expect(err.status).toBe(400);
      expect(err.message).toContain('root');
    }
  });

  it.each(['root', 'default', 'Default'])('refuses to delete the %s policy', async (name) => {
    const r = await rig({ engines: [kvStandIn] });
    const err = await failure(r.call('delete', `sys/policies/acl/${name}`, r.root));
    expect(err.status).toBe(400);
    expect((await r.call('read', `sys/policies/acl/${name.toLowerCase()}`, r.root)).status).toBe(200);
  });

  it('lets the default policy be changed', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/policies/acl/default', r.root, { policy: HCL });
    expect(data(await r.ok('read', 'sys/policies/acl/default', r.root))['policy']).toBe(HCL);
  });

  it('reads the root policy as empty text', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect(data(await r.ok('read', 'sys/policies/acl/root', r.root))).toEqual({ name: 'root', policy: '' });
  });

  it('reads the built-in default policy', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const policy = data(await r.ok('read', 'sys/policies/acl/default', r.root))['policy'] as string;
    expect(policy).toContain('auth/token/lookup-self');
  });

  it.each([
    ['unbalanced braces', 'path "secret/*" { capabilities = ["read"]'],
    ['an unknown capability', 'path "secret/*" { capabilities = ["fly"] }'],
    ['an unknown top-level key', 'paths "secret/*" { capabilities = ["read"] }'],
    ['broken JSON', '{"path": {'],
  ])('refuses a policy with %s with a 400 and stores nothing', async (_what, text) => {
    const r = await rig({ engines: [kvStandIn] });
    const err = await failure(r.call('update', 'sys/policies/acl/broken', r.root, { policy: text }));
    expect(err.status).toBe(400);
    expect(err.message).not.toBe('');
    expect((await failure(r.call('read', 'sys/policies/acl/broken', r.root))).status).toBe(404);
  });

  it('refuses a missing or empty policy text', async () => {
    const r = await rig({ engines: [kvStandIn] });
    let err = await failure(r.call('update', 'sys/policies/acl/empty', r.root));
    expect(err.status).toBe(400);
    expect(err.message).toContain('policy');
    err = await failure(r.call('update', 'sys/policies/acl/empty', r.root, { policy: '' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('policy');
    expect((await failure(r.call('read', 'sys/policies/acl/empty', r.root))).status).toBe(404);
  });

  it.each(['bad name!', 'a//b', 'trailing/', '.', '..', 'team/..', 'team/./x', 'a\u0000b', 'a\ud800', 'p'.repeat(300)])(
    'refuses the policy name %j, naming the field',
    async (name) => {
      const r = await rig({ engines: [kvStandIn] });
      for (const path of [`sys/policies/acl/${name}`, `sys/policy/${name}`]) {
        const err = await failure(r.call('update', path, r.root, { policy: HCL }));
        expect(err.status).toBe(400);
        expect(err.message).toMatch(/"?name"?:? /);
      }
      expect(data(await r.ok('list', 'sys/policies/acl', r.root))['keys']).toEqual(['default', 'root']);
    },
  );

  it('refuses a policy over the size limit with a 400 naming policy, and keeps serving', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const huge = `path "secret/*" {\n  capabilities = ["read"]\n  comment = "${'x'.repeat(2 * 1024 * 1024)}"\n}\n`;
    for (const field of ['policy', 'rules']) {
      const err = await failure(r.call('update', `sys/policy/huge-${field}`, r.root, { [field]: huge }));
      expect(err.status).toBe(400);
      expect(err.message).toMatch(/^policy: .*more than the limit of 32768/);
    }
    const limit = numbersPolicy(32 * 1024 + 1);
    expect((await failure(r.call('update', 'sys/policies/acl/just-over', r.root, { policy: limit }))).status).toBe(400);
    // The parser still works, and tokens holding the default policy still look themselves up.
    await r.ok('update', 'sys/policies/acl/after', r.root, { policy: HCL });
    const { client_token: token } = await r.token(r.root, { policies: ['default'] });
    await r.ok('update', 'sys/seal', r.root);
    await r.core.unseal(r.key);
    expect(await r.works(token)).toBe(true);
  });

  it('answers other requests while a large policy parses', async () => {
    const r = await rig({ engines: [kvStandIn] });
    let settled = false;
    const writing = r.call('update', 'sys/policies/acl/large', r.root, { policy: numbersPolicy(31 * 1024) }).finally(() => {
      settled = true;
    });
    // A parse on this thread would hold back the timer until it had finished.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await r.ok('read', 'sys/mounts', r.root);
    expect(settled).toBe(false);
    // Parsed, then refused for its unknown key "x": the point is only that it did not block.
    expect((await writing).status).toBe(400);
  });

  it('refuses deeply nested policies before parsing them, and the next policy parses', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const shapes = [
      (d: number) => `path "a" {\n  x = ${'{a='.repeat(d)}1${'}'.repeat(d)}\n}\n`,
      (d: number) => `path "a" {\n  x = ${'['.repeat(d)}${']'.repeat(d)}\n}\n`,
      (d: number) => `${'a {\n'.repeat(d)}${'}\n'.repeat(d)}`,
    ];
    for (const shape of shapes) {
      for (const depth of [33, 4096]) {
        const err = await failure(r.call('update', 'sys/policies/acl/nested', r.root, { policy: shape(depth) }));
        expect(err.status).toBe(400);
        expect(err.message).toBe('policy: nested more than 32 levels deep');
      }
    }
    await r.ok('update', 'sys/policies/acl/plain', r.root, { policy: HCL });
  });

  it('answers 404 for a missing policy and 204 for deleting one', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await failure(r.call('read', 'sys/policies/acl/nope', r.root))).status).toBe(404);
    expect((await r.call('delete', 'sys/policies/acl/nope', r.root)).status).toBe(204);
  });

  it('keeps policies across seal/unseal and a restart', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/policies/acl/kept', r.root, { policy: HCL });
    await r.ok('update', 'sys/seal', r.root);
    await r.core.unseal(r.key);
    expect(data(await r.ok('read', 'sys/policies/acl/kept', r.root))['policy']).toBe(HCL);
    await r.restart();
    expect(data(await r.ok('read', 'sys/policies/acl/kept', r.root))['policy']).toBe(HCL);
  });

  it('needs a grant on sys/policies/acl/:name to manage a policy', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/policies/acl/manager', r.root, { policy: 'path "sys/policies/acl/team-*" { capabilities = ["create", "update", "read", "delete", "list"] }' });
    const { client_token: token } = await r.token(r.root, { policies: ['manager'] });
    expect((await r.call('update', 'sys/policies/acl/team-a', token, { policy: HCL })).status).toBe(204);
    expect((await failure(r.call('update', 'sys/policies/acl/other', token, { policy: HCL }))).status).toBe(403);
    expect((await failure(r.call('list', 'sys/policies/acl/', token))).status).toBe(403);
  });
});

describe('sys/policy (legacy)', () => {
  it('writes with "rules", reads it back as rules, and lists under policies and keys', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await r.call('update', 'sys/policy/legacy', r.root, { rules: HCL })).status).toBe(204);
    const read = await r.ok('read', 'sys/policy/legacy', r.root);
    expect(data(read)).toEqual({ name: 'legacy', rules: HCL });
    expect(read.body['rules']).toBe(HCL);
    const list = await r.ok('read', 'sys/policy', r.root);
    expect(data(list)).toEqual({ policies: ['default', 'legacy', 'root'], keys: ['default', 'legacy', 'root'] });
    expect(list.body['policies']).toEqual(['default', 'legacy', 'root']);
    // The same policy through the current endpoint.
    expect(data(await r.ok('read', 'sys/policies/acl/legacy', r.root))['policy']).toBe(HCL);
  });

  it('lists with the LIST method too', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/policy/legacy', r.root, { rules: HCL });
    expect(data(await r.ok('list', 'sys/policy/', r.root))['keys']).toEqual(['default', 'legacy', 'root']);
  });

  it('accepts "policy" in place of "rules"', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/policy/alt', r.root, { policy: HCL });
    expect(data(await r.ok('read', 'sys/policy/alt', r.root))['rules']).toBe(HCL);
  });

  it('refuses a write with neither rules nor policy, and one to root', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await failure(r.call('update', 'sys/policy/none', r.root))).status).toBe(400);
    expect((await failure(r.call('update', 'sys/policy/root', r.root, { rules: HCL }))).status).toBe(400);
  });

  it('deletes, refusing root and default', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/policy/legacy', r.root, { rules: HCL });
    expect((await r.call('delete', 'sys/policy/legacy', r.root)).status).toBe(204);
    expect((await failure(r.call('read', 'sys/policy/legacy', r.root))).status).toBe(404);
    expect((await failure(r.call('delete', 'sys/policy/root', r.root))).status).toBe(400);
    expect((await failure(r.call('delete', 'sys/policy/default', r.root))).status).toBe(400);
  });

  it('reads root as empty rules', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect(data(await r.ok('read', 'sys/policy/root', r.root))).toEqual({ name: 'root', rules: '' });
  });
});

describe('sys/capabilities-self, sys/capabilities, sys/capabilities-accessor', () => {
  const POLICY = `
    path "secret/data/app/*" { capabilities = ["read", "list"] }
    path "secret/data/app/admin" { capabilities = ["deny"] }
    path "secret/metadata/+/shared" { capabilities = ["update", "sudo"] }
  `;

  async function withToken() {
    const r = await rig({ engines: [kvStandIn] });
    await r.policy('caps', POLICY);
    const auth = await r.token(r.root, { policies: ['caps'] });
    return { r, token: auth.client_token, accessor: auth.accessor };
  }

  it('answers the caller\'s capabilities for one path, per path and under "capabilities"', async () => {
    const { r, token } = await withToken();
    const reply = await r.ok('update', 'sys/capabilities-self', token, { paths: ['secret/data/app/x'] });
    expect(data(reply)).toEqual({ 'secret/data/app/x': ['list', 'read'], capabilities: ['list', 'read'] });
    expect(reply.body['capabilities']).toEqual(['list', 'read']);
  });

  it('answers for several paths, also given as "path" or a comma string', async () => {
    const { r, token } = await withToken();
    const reply = await r.ok('update', 'sys/capabilities-self', token, { paths: 'secret/data/app/x,secret/data/app/admin,/secret/metadata/a/shared,elsewhere' });
    expect(data(reply)).toEqual({
      'secret/data/app/x': ['list', 'read'],
      'secret/data/app/admin': ['deny'],
      'secret/metadata/a/shared': ['sudo', 'update'],
      elsewhere: ['deny'],
    });
    expect(data(reply)).not.toHaveProperty('capabilities');
    const single = await r.ok('update', 'sys/capabilities-self', token, { path: 'secret/data/app/y' });
    expect(data(single)['capabilities']).toEqual(['list', 'read']);
  });

  it('answers "root" for the root token', async () => {
    const { r } = await withToken();
    expect(data(await r.ok('update', 'sys/capabilities-self', r.root, { paths: ['anything/at/all'] }))['capabilities']).toEqual(['root']);
  });

  it('needs paths', async () => {
    const { r, token } = await withToken();
    const err = await failure(r.call('update', 'sys/capabilities-self', token));
    expect(err.status).toBe(400);
    expect(err.message).toContain('paths');
  });

  it('is allowed to every token through the default policy', async () => {
    const { r } = await withToken();
    const { client_token: plain } = await r.token(r.root, { policies: ['default'] });
    expect(data(await r.ok('update', 'sys/capabilities-self', plain, { paths: ['secret/data/x'] }))['capabilities']).toEqual(['deny']);
  });

  it('answers for another token at sys/capabilities', async () => {
    const { r, token } = await withToken();
    const reply = await r.ok('update', 'sys/capabilities', r.root, { token, paths: ['secret/data/app/x', 'secret/data/app/admin'] });
    expect(data(reply)).toEqual({ 'secret/data/app/x': ['list', 'read'], 'secret/data/app/admin': ['deny'] });
  });

  it('answers for a token by accessor at sys/capabilities-accessor', async () => {
    const { r, accessor } = await withToken();
    const reply = await r.ok('update', 'sys/capabilities-accessor', r.root, { accessor, paths: ['secret/data/app/x'] });
    expect(data(reply)['capabilities']).toEqual(['list', 'read']);
  });

  it('refuses an unknown token or accessor with a 400', async () => {
    const { r } = await withToken();
    let err = await failure(r.call('update', 'sys/capabilities', r.root, { token: 'hvs.nonexistent0000000000000', paths: ['secret/x'] }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('token');
    err = await failure(r.call('update', 'sys/capabilities-accessor', r.root, { accessor: 'nonexistent', paths: ['secret/x'] }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('accessor');
  });

  it('needs a grant on sys/capabilities to ask about another token', async () => {
    const { r, token } = await withToken();
    expect((await failure(r.call('update', 'sys/capabilities', token, { token, paths: ['x'] }))).status).toBe(403);
    expect((await failure(r.call('update', 'sys/capabilities-accessor', token, { accessor: 'x', paths: ['x'] }))).status).toBe(403);
  });
});
