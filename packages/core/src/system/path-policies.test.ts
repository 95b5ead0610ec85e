import { kvEngine } from '@strongroom/engine-kv';
import { Core, FakeClock, MemoryStorage, silentLogger, StrongroomError, type CoreReply, type Operation, type Storage } from '../index';

function newCore(storage: Storage = new MemoryStorage()): Core {
  return new Core({ storage, clock: new FakeClock(), logger: silentLogger, engines: [kvEngine] });
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
const data = (r: CoreReply) => (r.body as { data: Body }).data;

async function setup(storage?: Storage) {
  const core = newCore(storage);
  const { keys, rootToken } = await core.initialize(1, 1);
  await core.unseal(keys[0] as Buffer);
  const as = (operation: Operation, path: string, d: Record<string, unknown> = {}) => call(core, operation, path, d, rootToken);
  const tokenFor = async (policies: string[], extra: Record<string, unknown> = {}) => {
    const reply = await as('update', 'auth/token/create', { policies, ...extra });
    return (reply.body as { auth: { client_token: string; accessor: string } }).auth;
  };
  return { core, keys, rootToken, as, tokenFor };
}

const HCL = `
# read-only access to the app's secrets
path "secret/data/app/*" {
  capabilities = ["read", "list"]
}
`;

const JSON_POLICY = JSON.stringify({ path: { 'secret/data/json/*': { capabilities: ['create', 'update'] } } });

describe('sys/policies/acl', () => {
  it('writes, reads, lists and deletes an HCL policy', async () => {
    const { as } = await setup();
    expect((await as('update', 'sys/policies/acl/app-reader', { policy: HCL })).status).toBe(204);
    const read = await as('read', 'sys/policies/acl/app-reader');
    expect(read.status).toBe(200);
    expect(data(read)).toEqual({ name: 'app-reader', policy: HCL });
    expect(data(await as('list', 'sys/policies/acl/'))['keys']).toEqual(['app-reader', 'default', 'root']);
    expect((await as('delete', 'sys/policies/acl/app-reader')).status).toBe(204);
    expect((await failure(as('read', 'sys/policies/acl/app-reader'))).status).toBe(404);
    expect(data(await as('list', 'sys/policies/acl'))['keys']).toEqual(['default', 'root']);
  });

  it('stores a JSON policy as written and enforces it', async () => {
    const { as, core, tokenFor } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv-v2' });
    await as('update', 'sys/policies/acl/json-writer', { policy: JSON_POLICY });
    expect(data(await as('read', 'sys/policies/acl/json-writer'))['policy']).toBe(JSON_POLICY);
    const { client_token: token } = await tokenFor(['json-writer']);
    expect((await call(core, 'update', 'secret/data/json/x', { data: { a: 1 } }, token)).status).toBe(200);
    expect((await failure(call(core, 'read', 'secret/data/json/x', {}, token))).status).toBe(403);
  });

  it('accepts a base64-encoded policy and stores the decoded text', async () => {
    const { as } = await setup();
    await as('update', 'sys/policies/acl/encoded', { policy: Buffer.from(HCL).toString('base64') });
    expect(data(await as('read', 'sys/policies/acl/encoded'))['policy']).toBe(HCL);
  });

  it('replaces a policy on a second write, and tokens holding it see the change at once', async () => {
    const { as, core, tokenFor } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv-v2' });
    await as('update', 'secret/data/app/x', { data: { a: 1 } });
    await as('update', 'sys/policies/acl/changing', { policy: 'path "secret/data/app/*" { capabilities = ["read"] }' });
    const { client_token: token } = await tokenFor(['changing']);
    expect((await call(core, 'read', 'secret/data/app/x', {}, token)).status).toBe(200);
    await as('update', 'sys/policies/acl/changing', { policy: 'path "secret/data/other/*" { capabilities = ["read"] }' });
    expect((await failure(call(core, 'read', 'secret/data/app/x', {}, token))).status).toBe(403);
    await as('delete', 'sys/policies/acl/changing');
    expect((await failure(call(core, 'read', 'secret/data/other/x', {}, token))).status).toBe(403);
  });

  it('lowercases names on write, read and delete', async () => {
    const { as } = await setup();
    await as('update', 'sys/policies/acl/MixedCase', { policy: HCL });
    expect(data(await as('read', 'sys/policies/acl/MIXEDCASE'))['name']).toBe('mixedcase');
    expect(data(await as('list', 'sys/policies/acl/'))['keys']).toContain('mixedcase');
    await as('delete', 'sys/policies/acl/MixedCASE');
    expect((await failure(as('read', 'sys/policies/acl/mixedcase'))).status).toBe(404);
  });

  it('lists policies whose names contain a slash', async () => {
    const { as } = await setup();
    await as('update', 'sys/policies/acl/team/dev', { policy: HCL });
    await as('update', 'sys/policies/acl/team/ops/admin', { policy: HCL });
    await as('update', 'sys/policies/acl/team', { policy: HCL });
    expect(data(await as('read', 'sys/policies/acl/team/dev'))['name']).toBe('team/dev');
    expect(data(await as('list', 'sys/policies/acl/'))['keys']).toEqual(['default', 'root', 'team', 'team/dev', 'team/ops/admin']);
    expect(data(await as('read', 'sys/policy'))['policies']).toEqual(['default', 'root', 'team', 'team/dev', 'team/ops/admin']);
  });

  it('refuses to write the root policy, however it is spelled', async () => {
    const { as } = await setup();
    for (const name of ['root', 'ROOT', ' Root ']) {
      const err = await failure(as('update', `sys/policies/acl/${name}`, { policy: HCL }));
      expect(err.status).toBe(400);
      expect(err.message).toContain('root');
    }
  });

  it.each(['root', 'default', 'Default'])('refuses to delete the %s policy', async (name) => {
    const { as } = await setup();
    const err = await failure(as('delete', `sys/policies/acl/${name}`));
    expect(err.status).toBe(400);
    expect((await as('read', `sys/policies/acl/${name.toLowerCase()}`)).status).toBe(200);
  });

  it('lets the default policy be changed', async () => {
    const { as } = await setup();
    await as('update', 'sys/policies/acl/default', { policy: HCL });
    expect(data(await as('read', 'sys/policies/acl/default'))['policy']).toBe(HCL);
  });

  it('reads the root policy as empty text', async () => {
    const { as } = await setup();
    expect(data(await as('read', 'sys/policies/acl/root'))).toEqual({ name: 'root', policy: '' });
  });

  it('reads the built-in default policy', async () => {
    const { as } = await setup();
    const policy = data(await as('read', 'sys/policies/acl/default'))['policy'] as string;
    expect(policy).toContain('auth/token/lookup-self');
  });

  it.each([
    ['unbalanced braces', 'path "secret/*" { capabilities = ["read"]'],
    ['an unknown capability', 'path "secret/*" { capabilities = ["fly"] }'],
    ['an unknown top-level key', 'paths "secret/*" { capabilities = ["read"] }'],
    ['broken JSON', '{"path": {'],
  ])('refuses a policy with %s with a 400 and stores nothing', async (_what, text) => {
    const { as } = await setup();
    const err = await failure(as('update', 'sys/policies/acl/broken', { policy: text }));
    expect(err.status).toBe(400);
    expect(err.message).not.toBe('');
    expect((await failure(as('read', 'sys/policies/acl/broken'))).status).toBe(404);
  });

  it('refuses a missing or empty policy text', async () => {
    const { as } = await setup();
    let err = await failure(as('update', 'sys/policies/acl/empty', {}));
    expect(err.status).toBe(400);
    expect(err.message).toContain('policy');
    err = await failure(as('update', 'sys/policies/acl/empty', { policy: '' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('policy');
    expect((await failure(as('read', 'sys/policies/acl/empty'))).status).toBe(404);
  });

  it.each(['bad name!', 'a//b', 'trailing/'])('refuses the policy name %j', async (name) => {
    const { as } = await setup();
    expect((await failure(as('update', `sys/policies/acl/${name}`, { policy: HCL }))).status).toBe(400);
  });

  it('answers 404 for a missing policy and 204 for deleting one', async () => {
    const { as } = await setup();
    expect((await failure(as('read', 'sys/policies/acl/nope'))).status).toBe(404);
    expect((await as('delete', 'sys/policies/acl/nope')).status).toBe(204);
  });

  it('keeps policies across seal/unseal and a restart', async () => {
    const storage = new MemoryStorage();
    const { as, core, keys, rootToken } = await setup(storage);
    await as('update', 'sys/policies/acl/kept', { policy: HCL });
    await as('update', 'sys/seal');
    await core.unseal(keys[0] as Buffer);
    expect(data(await as('read', 'sys/policies/acl/kept'))['policy']).toBe(HCL);
    const restarted = newCore(storage);
    await restarted.unseal(keys[0] as Buffer);
    expect(data(await call(restarted, 'read', 'sys/policies/acl/kept', {}, rootToken))['policy']).toBe(HCL);
  });

  it('needs a grant on sys/policies/acl/:name to manage a policy', async () => {
    const { as, core, tokenFor } = await setup();
    await as('update', 'sys/policies/acl/manager', { policy: 'path "sys/policies/acl/team-*" { capabilities = ["create", "update", "read", "delete", "list"] }' });
    const { client_token: token } = await tokenFor(['manager']);
    expect((await call(core, 'update', 'sys/policies/acl/team-a', { policy: HCL }, token)).status).toBe(204);
    expect((await failure(call(core, 'update', 'sys/policies/acl/other', { policy: HCL }, token))).status).toBe(403);
    expect((await failure(call(core, 'list', 'sys/policies/acl/', {}, token))).status).toBe(403);
  });
});

describe('sys/policy (legacy)', () => {
  it('writes with "rules", reads it back as rules, and lists under policies and keys', async () => {
    const { as } = await setup();
    expect((await as('update', 'sys/policy/legacy', { rules: HCL })).status).toBe(204);
    const read = await as('read', 'sys/policy/legacy');
    expect(data(read)).toEqual({ name: 'legacy', rules: HCL });
    expect(body(read)['rules']).toBe(HCL);
    const list = await as('read', 'sys/policy');
    expect(data(list)).toEqual({ policies: ['default', 'legacy', 'root'], keys: ['default', 'legacy', 'root'] });
    expect(body(list)['policies']).toEqual(['default', 'legacy', 'root']);
    // The same policy through the current endpoint.
    expect(data(await as('read', 'sys/policies/acl/legacy'))['policy']).toBe(HCL);
  });

  it('lists with the LIST method too', async () => {
    const { as } = await setup();
    await as('update', 'sys/policy/legacy', { rules: HCL });
    expect(data(await as('list', 'sys/policy/'))['keys']).toEqual(['default', 'legacy', 'root']);
  });

  it('accepts "policy" in place of "rules"', async () => {
    const { as } = await setup();
    await as('update', 'sys/policy/alt', { policy: HCL });
    expect(data(await as('read', 'sys/policy/alt'))['rules']).toBe(HCL);
  });

  it('refuses a write with neither rules nor policy, and one to root', async () => {
    const { as } = await setup();
    expect((await failure(as('update', 'sys/policy/none', {}))).status).toBe(400);
    expect((await failure(as('update', 'sys/policy/root', { rules: HCL }))).status).toBe(400);
  });

  it('deletes, refusing root and default', async () => {
    const { as } = await setup();
    await as('update', 'sys/policy/legacy', { rules: HCL });
    expect((await as('delete', 'sys/policy/legacy')).status).toBe(204);
    expect((await failure(as('read', 'sys/policy/legacy'))).status).toBe(404);
    expect((await failure(as('delete', 'sys/policy/root'))).status).toBe(400);
    expect((await failure(as('delete', 'sys/policy/default'))).status).toBe(400);
  });

  it('reads root as empty rules', async () => {
    const { as } = await setup();
    expect(data(await as('read', 'sys/policy/root'))).toEqual({ name: 'root', rules: '' });
  });
});

describe('sys/capabilities-self, sys/capabilities, sys/capabilities-accessor', () => {
  const POLICY = `
    path "secret/data/app/*" { capabilities = ["read", "list"] }
    path "secret/data/app/admin" { capabilities = ["deny"] }
    path "secret/metadata/+/shared" { capabilities = ["update", "sudo"] }
  `;

  async function withToken() {
    const made = await setup();
    await made.as('update', 'sys/policies/acl/caps', { policy: POLICY });
    const auth = await made.tokenFor(['caps']);
    return { ...made, token: auth.client_token, accessor: auth.accessor };
  }

  it('answers the caller\'s capabilities for one path, per path and under "capabilities"', async () => {
    const { core, token } = await withToken();
    const reply = await call(core, 'update', 'sys/capabilities-self', { paths: ['secret/data/app/x'] }, token);
    expect(data(reply)).toEqual({ 'secret/data/app/x': ['list', 'read'], capabilities: ['list', 'read'] });
    expect(body(reply)['capabilities']).toEqual(['list', 'read']);
  });

  it('answers for several paths, also given as "path" or a comma string', async () => {
    const { core, token } = await withToken();
    const reply = await call(core, 'update', 'sys/capabilities-self', { paths: 'secret/data/app/x,secret/data/app/admin,/secret/metadata/a/shared,elsewhere' }, token);
    expect(data(reply)).toEqual({
      'secret/data/app/x': ['list', 'read'],
      'secret/data/app/admin': ['deny'],
      'secret/metadata/a/shared': ['sudo', 'update'],
      elsewhere: ['deny'],
    });
    expect(data(reply)).not.toHaveProperty('capabilities');
    const single = await call(core, 'update', 'sys/capabilities-self', { path: 'secret/data/app/y' }, token);
    expect(data(single)['capabilities']).toEqual(['list', 'read']);
  });

  it('answers "root" for the root token', async () => {
    const { as } = await withToken();
    expect(data(await as('update', 'sys/capabilities-self', { paths: ['anything/at/all'] }))['capabilities']).toEqual(['root']);
  });

  it('needs paths', async () => {
    const { core, token } = await withToken();
    const err = await failure(call(core, 'update', 'sys/capabilities-self', {}, token));
    expect(err.status).toBe(400);
    expect(err.message).toContain('paths');
  });

  it('is allowed to every token through the default policy', async () => {
    const { core, tokenFor } = await withToken();
    const { client_token: plain } = await tokenFor(['default']);
    expect(data(await call(core, 'update', 'sys/capabilities-self', { paths: ['secret/data/x'] }, plain))['capabilities']).toEqual(['deny']);
  });

  it('answers for another token at sys/capabilities', async () => {
    const { as, token } = await withToken();
    const reply = await as('update', 'sys/capabilities', { token, paths: ['secret/data/app/x', 'secret/data/app/admin'] });
    expect(data(reply)).toEqual({ 'secret/data/app/x': ['list', 'read'], 'secret/data/app/admin': ['deny'] });
  });

  it('answers for a token by accessor at sys/capabilities-accessor', async () => {
    const { as, accessor } = await withToken();
    const reply = await as('update', 'sys/capabilities-accessor', { accessor, paths: ['secret/data/app/x'] });
    expect(data(reply)['capabilities']).toEqual(['list', 'read']);
  });

  it('refuses an unknown token or accessor with a 400', async () => {
    const { as } = await withToken();
    let err = await failure(as('update', 'sys/capabilities', { token: 'hvs.nonexistent0000000000000', paths: ['secret/x'] }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('token');
    err = await failure(as('update', 'sys/capabilities-accessor', { accessor: 'nonexistent', paths: ['secret/x'] }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('accessor');
  });

  it('needs a grant on sys/capabilities to ask about another token', async () => {
    const { core, token } = await withToken();
    expect((await failure(call(core, 'update', 'sys/capabilities', { token, paths: ['x'] }, token))).status).toBe(403);
    expect((await failure(call(core, 'update', 'sys/capabilities-accessor', { accessor: 'x', paths: ['x'] }, token))).status).toBe(403);
  });
});
