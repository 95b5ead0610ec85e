import { kvEngine } from '@strongroom/engine-kv';
import { Core, FakeClock, MemoryStorage, silentLogger, StrongroomError, SYSTEM_DEFAULT_TTL, SYSTEM_MAX_TTL, type CoreReply, type Operation, type Storage } from '../index';

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
  return { core, keys, rootToken, as };
}

async function tokenWithPolicy(core: Core, root: string, name: string, policy: string): Promise<string> {
  await call(core, 'update', `sys/policies/acl/${name}`, { policy }, root);
  const reply = await call(core, 'update', 'auth/token/create', { policies: [name] }, root);
  return (reply.body as { auth: { client_token: string } }).auth.client_token;
}

async function allKeys(core: Core, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for (const child of await core.barrier.list(prefix)) {
    if (child.endsWith('/')) out.push(...(await allKeys(core, prefix + child)));
    else out.push(prefix + child);
  }
  return out;
}

describe('enabling secrets engines', () => {
  it('mounts kv version 2 from options.version and serves versioned secrets there', async () => {
    const { as } = await setup();
    expect((await as('update', 'sys/mounts/secret', { type: 'kv', options: { version: '2' }, description: 'app secrets' })).status).toBe(204);
    await as('update', 'secret/data/app', { data: { password: 'x' } });
    const read = data(await as('read', 'secret/data/app'));
    expect(read['data']).toEqual({ password: 'x' });
    expect((read['metadata'] as Body)['version']).toBe(1);
  });

  it('accepts options.version as a number', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv', options: { version: 2 } });
    expect(core.mounts.get('secret/')?.options).toEqual({ version: '2' });
  });

  it('treats the kv-v2 type as kv with version 2', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/versioned', { type: 'kv-v2' });
    const entry = core.mounts.get('versioned/');
    expect(entry?.type).toBe('kv');
    expect(entry?.options).toEqual({ version: '2' });
    await as('update', 'versioned/data/x', { data: { a: 1 } });
    expect(data(await as('read', 'versioned/data/x'))['data']).toEqual({ a: 1 });
  });

  it('mounts kv version 1 without options', async () => {
    const { as } = await setup();
    await as('update', 'sys/mounts/kv', { type: 'kv' });
    await as('update', 'kv/app', { password: 'y' });
    expect(data(await as('read', 'kv/app'))).toEqual({ password: 'y' });
  });

  it('lists every mount in sys/mounts with its full description, in data and at the top level', async () => {
    const { as } = await setup();
    await as('update', 'sys/mounts/secret', {
      type: 'kv', options: { version: '2' }, description: 'app secrets', config: { default_lease_ttl: '1h', max_lease_ttl: '2h' },
    });
    const reply = await as('read', 'sys/mounts');
    expect(reply.status).toBe(200);
    const mounts = data(reply);
    expect(Object.keys(mounts).sort()).toEqual(['secret/', 'sys/']);
    const secret = mounts['secret/'] as Body;
    expect(secret).toMatchObject({
      type: 'kv', description: 'app secrets', local: false, seal_wrap: false, external_entropy_access: false,
      options: { version: '2' }, config: { default_lease_ttl: 3600, max_lease_ttl: 7200, force_no_cache: false },
    });
    expect(secret['accessor']).toMatch(/^kv_[0-9a-f]{8}$/);
    expect(secret['uuid']).toMatch(/^[0-9a-f-]{36}$/);
    expect(mounts['sys/']).toMatchObject({ type: 'system', config: { default_lease_ttl: 0, max_lease_ttl: 0 } });
    // Old clients read the mounts from the top level of the reply.
    expect(body(reply)['secret/']).toEqual(secret);
    expect(body(reply)['sys/']).toEqual(mounts['sys/']);
    expect(body(reply)['request_id']).toEqual(expect.any(String));
  });

  it('reads one mount at sys/mounts/:path, with or without the trailing slash', async () => {
    const { as } = await setup();
    await as('update', 'sys/mounts/team/app', { type: 'kv-v2', description: 'nested' });
    const listed = data(await as('read', 'sys/mounts'))['team/app/'];
    expect(data(await as('read', 'sys/mounts/team/app'))).toEqual(listed);
    expect(data(await as('read', 'sys/mounts/team/app/'))).toEqual(listed);
    expect((await failure(as('read', 'sys/mounts/nothing'))).status).toBe(404);
  });

  it('refuses an unknown engine type with a 400 naming the type', async () => {
    const { as, core } = await setup();
    const err = await failure(as('update', 'sys/mounts/x', { type: 'no-such-engine' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('no-such-engine');
    expect(core.mounts.get('x/')).toBeUndefined();
  });

  it.each(['system', 'token'])('refuses to mount the built-in %s type again', async (type) => {
    const { as } = await setup();
    expect((await failure(as('update', 'sys/mounts/again', { type }))).status).toBe(400);
  });

  it('requires a type', async () => {
    const { as } = await setup();
    const err = await failure(as('update', 'sys/mounts/x', {}));
    expect(err.status).toBe(400);
    expect(err.message).toContain('type');
  });

  it('refuses an options.version other than 1 or 2', async () => {
    const { as } = await setup();
    const err = await failure(as('update', 'sys/mounts/x', { type: 'kv', options: { version: '3' } }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('options.version');
  });

  it.each([
    ['secret', 'secret/sub'],
    ['secret/sub', 'secret'],
    ['secret', 'secret'],
    ['a/b/c', 'a/b'],
  ])('refuses %s and then %s as overlapping mounts', async (first, second) => {
    const { as } = await setup();
    await as('update', `sys/mounts/${first}`, { type: 'kv' });
    const err = await failure(as('update', `sys/mounts/${second}`, { type: 'kv' }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/already in use/);
  });

  it('allows mounts that only share a name prefix', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv' });
    await as('update', 'sys/mounts/secret2', { type: 'kv' });
    expect(core.mounts.get('secret2/')).toBeDefined();
  });

  it.each(['sys', 'sys/foo', 'auth', 'auth/foo', 'identity', 'cubbyhole', 'cubbyhole/x'])('refuses the reserved path %s', async (path) => {
    const { as } = await setup();
    const err = await failure(as('update', `sys/mounts/${path}`, { type: 'kv' }));
    expect(err.status).toBe(400);
  });

  it.each(['a//b', 'a/../b', './a'])('refuses the unclean path %s', async (path) => {
    const { as } = await setup();
    expect((await failure(as('update', `sys/mounts/${path}`, { type: 'kv' }))).status).toBe(400);
  });

  it('refuses a default lease TTL above the max lease TTL in config', async () => {
    const { as } = await setup();
    const err = await failure(as('update', 'sys/mounts/x', { type: 'kv', config: { default_lease_ttl: '2h', max_lease_ttl: '1h' } }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('default_lease_ttl');
  });

  it('needs update on sys/mounts/:path but not sudo', async () => {
    const { core, rootToken } = await setup();
    const token = await tokenWithPolicy(core, rootToken, 'mounter', 'path "sys/mounts/*" { capabilities = ["create", "update", "read"] }');
    expect((await call(core, 'update', 'sys/mounts/mine', { type: 'kv' }, token)).status).toBe(204);
    const reader = await tokenWithPolicy(core, rootToken, 'reader', 'path "sys/mounts/*" { capabilities = ["read"] }');
    expect((await failure(call(core, 'update', 'sys/mounts/other', { type: 'kv' }, reader))).status).toBe(403);
  });
});

describe('tuning mounts', () => {
  it('reads the effective TTLs, system defaults when unset', async () => {
    const { as } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv-v2', description: 'desc' });
    const reply = await as('read', 'sys/mounts/secret/tune');
    expect(data(reply)).toMatchObject({
      description: 'desc', default_lease_ttl: SYSTEM_DEFAULT_TTL, max_lease_ttl: SYSTEM_MAX_TTL, force_no_cache: false, options: { version: '2' },
    });
    expect(body(reply)['default_lease_ttl']).toBe(SYSTEM_DEFAULT_TTL);
  });

  it('tunes TTLs given as duration strings or seconds and keeps what was not sent', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv-v2' });
    expect((await as('update', 'sys/mounts/secret/tune', { max_lease_ttl: '48h', default_lease_ttl: '1h30m' })).status).toBe(204);
    expect(data(await as('read', 'sys/mounts/secret/tune'))).toMatchObject({ default_lease_ttl: 5400, max_lease_ttl: 172800 });
    await as('update', 'sys/mounts/secret/tune', { default_lease_ttl: 7200 });
    expect(core.mounts.get('secret/')?.config).toMatchObject({ default_lease_ttl: 7200, max_lease_ttl: 172800 });
    await as('update', 'sys/mounts/secret/tune', { description: 'new words' });
    expect(core.mounts.get('secret/')?.description).toBe('new words');
    expect(core.mounts.get('secret/')?.config).toMatchObject({ default_lease_ttl: 7200, max_lease_ttl: 172800 });
    // "system" puts a TTL back to the system default.
    await as('update', 'sys/mounts/secret/tune', { default_lease_ttl: 'system', max_lease_ttl: 'system' });
    expect(data(await as('read', 'sys/mounts/secret/tune'))).toMatchObject({ default_lease_ttl: SYSTEM_DEFAULT_TTL, max_lease_ttl: SYSTEM_MAX_TTL });
  });

  it('refuses a default lease TTL above the max, whether set together or against the stored max', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv-v2' });
    let err = await failure(as('update', 'sys/mounts/secret/tune', { default_lease_ttl: '3h', max_lease_ttl: '2h' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('default_lease_ttl');
    await as('update', 'sys/mounts/secret/tune', { max_lease_ttl: '2h' });
    err = await failure(as('update', 'sys/mounts/secret/tune', { default_lease_ttl: '3h' }));
    expect(err.status).toBe(400);
    // Lowering the max below the stored default is refused too.
    await as('update', 'sys/mounts/secret/tune', { default_lease_ttl: '90m' });
    err = await failure(as('update', 'sys/mounts/secret/tune', { max_lease_ttl: '1h' }));
    expect(err.status).toBe(400);
    expect(core.mounts.get('secret/')?.config).toMatchObject({ default_lease_ttl: 5400, max_lease_ttl: 7200 });
  });

  it('refuses a max lease TTL above the system maximum, and a default above it when max is unset', async () => {
    const { as } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv-v2' });
    let err = await failure(as('update', 'sys/mounts/secret/tune', { max_lease_ttl: `${SYSTEM_MAX_TTL + 1}s` }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('max_lease_ttl');
    err = await failure(as('update', 'sys/mounts/secret/tune', { default_lease_ttl: `${SYSTEM_MAX_TTL + 1}s` }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('default_lease_ttl');
  });

  it.each([['soon'], [-5], ['-1h'], [{}]])('refuses the TTL %j', async (value) => {
    const { as } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv-v2' });
    const err = await failure(as('update', 'sys/mounts/secret/tune', { default_lease_ttl: value }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('default_lease_ttl');
  });

  it('upgrades kv version 1 to 2 but refuses to downgrade', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/kv', { type: 'kv' });
    await as('update', 'sys/mounts/kv/tune', { options: { version: '2' } });
    expect(core.mounts.get('kv/')?.options['version']).toBe('2');
    const err = await failure(as('update', 'sys/mounts/kv/tune', { options: { version: '1' } }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('options.version');
    expect(core.mounts.get('kv/')?.options['version']).toBe('2');
  });

  it('answers 400 for tuning what is not mounted', async () => {
    const { as } = await setup();
    expect((await failure(as('read', 'sys/mounts/nothing/tune'))).status).toBe(400);
    expect((await failure(as('update', 'sys/mounts/nothing/tune', { default_lease_ttl: '1h' }))).status).toBe(400);
  });

  it('tunes an auth method, through sys/auth/:path/tune and through sys/mounts/auth/:path/tune', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/auth/token/tune', { default_lease_ttl: '2h' });
    expect(core.auths.get('token/')?.config.default_lease_ttl).toBe(7200);
    expect(data(await as('read', 'sys/auth/token/tune'))['default_lease_ttl']).toBe(7200);
    await as('update', 'sys/mounts/auth/token/tune', { max_lease_ttl: '3h' });
    expect(core.auths.get('token/')?.config.max_lease_ttl).toBe(10800);
    expect(data(await as('read', 'sys/mounts/auth/token/tune'))).toMatchObject({ default_lease_ttl: 7200, max_lease_ttl: 10800 });
  });
});

describe('disabling and moving mounts', () => {
  it('deletes all of a mount\'s data when it is disabled', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/secret', { type: 'kv-v2' });
    const uuid = core.mounts.get('secret/')?.uuid as string;
    for (let i = 0; i < 20; i++) await as('update', `secret/data/dir${i % 3}/s${i}`, { data: { i } });
    await as('update', 'secret/config', { max_versions: 3 });
    expect((await allKeys(core, `logical/${uuid}/`)).length).toBeGreaterThan(40);
    expect((await as('delete', 'sys/mounts/secret')).status).toBe(204);
    expect(await allKeys(core, `logical/${uuid}/`)).toEqual([]);
    expect(await core.barrier.list(`logical/${uuid}/`)).toEqual([]);
    expect(core.mounts.get('secret/')).toBeUndefined();
    expect((await failure(as('read', 'secret/data/dir0/s0'))).status).toBe(404);
    // Mounting again at the same path starts empty.
    await as('update', 'sys/mounts/secret', { type: 'kv-v2' });
    expect((await failure(as('read', 'secret/data/dir0/s0'))).status).toBe(404);
  });

  it('answers 204 for disabling a path where nothing is mounted', async () => {
    const { as } = await setup();
    expect((await as('delete', 'sys/mounts/nothing')).status).toBe(204);
  });

  it('refuses to disable sys/', async () => {
    const { as, core } = await setup();
    expect((await failure(as('delete', 'sys/mounts/sys'))).status).toBe(400);
    expect(core.mounts.get('sys/')).toBeDefined();
  });

  it('leaves other mounts\' data alone', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/a', { type: 'kv-v2' });
    await as('update', 'sys/mounts/b', { type: 'kv-v2' });
    await as('update', 'a/data/x', { data: { v: 'a' } });
    await as('update', 'b/data/x', { data: { v: 'b' } });
    await as('delete', 'sys/mounts/a');
    expect(data(await as('read', 'b/data/x'))['data']).toEqual({ v: 'b' });
    expect(core.mounts.get('b/')).toBeDefined();
  });

  it('moves a mount with sys/remount and its data stays readable at the new path', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/old', { type: 'kv-v2', description: 'moving' });
    const before = core.mounts.get('old/');
    await as('update', 'old/data/app', { data: { v: 1 } });
    const reply = await as('update', 'sys/remount', { from: 'old', to: 'new/place' });
    expect(reply.status).toBe(200);
    expect(data(reply)['migration_id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(core.mounts.get('old/')).toBeUndefined();
    const after = core.mounts.get('new/place/');
    expect(after).toMatchObject({ uuid: before?.uuid, accessor: before?.accessor, description: 'moving', type: 'kv' });
    expect(data(await as('read', 'new/place/data/app'))['data']).toEqual({ v: 1 });
    expect((await failure(as('read', 'old/data/app'))).status).toBe(404);
    await as('update', 'new/place/data/app', { data: { v: 2 } });
    expect((data(await as('read', 'new/place/data/app'))['metadata'] as Body)['version']).toBe(2);
  });

  it('refuses to move a mount onto a used or reserved path, between tables, or a built-in one', async () => {
    const { as, core } = await setup();
    await as('update', 'sys/mounts/a', { type: 'kv' });
    await as('update', 'sys/mounts/b', { type: 'kv' });
    expect((await failure(as('update', 'sys/remount', { from: 'a', to: 'b' }))).status).toBe(400);
    expect((await failure(as('update', 'sys/remount', { from: 'a', to: 'b/c' }))).status).toBe(400);
    expect((await failure(as('update', 'sys/remount', { from: 'a', to: 'sys/a' }))).status).toBe(400);
    expect((await failure(as('update', 'sys/remount', { from: 'a', to: 'auth/a' }))).status).toBe(400);
    expect((await failure(as('update', 'sys/remount', { from: 'sys', to: 'system' }))).status).toBe(400);
    expect((await failure(as('update', 'sys/remount', { from: 'auth/token', to: 'auth/tok' }))).status).toBe(400);
    expect((await failure(as('update', 'sys/remount', { from: 'nothing', to: 'c' }))).status).toBe(400);
    expect(core.mounts.get('a/')).toBeDefined();
  });

  it('requires sudo to move a mount', async () => {
    const { as, core, rootToken } = await setup();
    await as('update', 'sys/mounts/a', { type: 'kv' });
    const noSudo = await tokenWithPolicy(core, rootToken, 'mover', 'path "sys/remount" { capabilities = ["update"] }');
    expect((await failure(call(core, 'update', 'sys/remount', { from: 'a', to: 'b' }, noSudo))).status).toBe(403);
    expect(core.mounts.get('a/')).toBeDefined();
    const withSudo = await tokenWithPolicy(core, rootToken, 'mover2', 'path "sys/remount" { capabilities = ["update", "sudo"] }');
    expect((await call(core, 'update', 'sys/remount', { from: 'a', to: 'b' }, withSudo)).status).toBe(200);
    expect(core.mounts.get('b/')).toBeDefined();
  });
});

describe('auth methods', () => {
  it('lists token/ in sys/auth', async () => {
    const { as } = await setup();
    const reply = await as('read', 'sys/auth');
    const token = data(reply)['token/'] as Body;
    expect(token).toMatchObject({ type: 'token', description: expect.any(String), options: {} });
    expect(token['accessor']).toMatch(/^token_[0-9a-f]{8}$/);
    expect(body(reply)['token/']).toEqual(token);
  });

  it('refuses to disable token/', async () => {
    const { as, core } = await setup();
    const err = await failure(as('delete', 'sys/auth/token'));
    expect(err.status).toBe(400);
    expect(core.auths.get('token/')).toBeDefined();
    expect((await as('read', 'auth/token/lookup-self')).status).toBe(200);
  });

  it('refuses an unknown auth type, and a secrets engine as an auth method', async () => {
    const { as, core } = await setup();
    let err = await failure(as('update', 'sys/auth/userpass', { type: 'userpass' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('userpass');
    err = await failure(as('update', 'sys/auth/kv', { type: 'kv' }));
    expect(err.status).toBe(400);
    expect(core.auths.get('kv/')).toBeUndefined();
  });

  it('refuses a second token method', async () => {
    const { as } = await setup();
    expect((await failure(as('update', 'sys/auth/token2', { type: 'token' }))).status).toBe(400);
    expect((await failure(as('update', 'sys/auth/token', { type: 'token' }))).status).toBe(400);
  });

  it('needs sudo to read, enable, tune or disable auth methods by path', async () => {
    const { core, rootToken } = await setup();
    const token = await tokenWithPolicy(core, rootToken, 'auth-admin', `
      path "sys/auth" { capabilities = ["read"] }
      path "sys/auth/*" { capabilities = ["create", "read", "update", "delete"] }
    `);
    expect((await call(core, 'read', 'sys/auth', {}, token)).status).toBe(200);
    expect((await failure(call(core, 'read', 'sys/auth/token', {}, token))).status).toBe(403);
    expect((await failure(call(core, 'read', 'sys/auth/token/tune', {}, token))).status).toBe(403);
    expect((await failure(call(core, 'update', 'sys/auth/token/tune', { default_lease_ttl: '1h' }, token))).status).toBe(403);
    expect((await failure(call(core, 'delete', 'sys/auth/token', {}, token))).status).toBe(403);
    expect((await failure(call(core, 'update', 'sys/auth/other', { type: 'token' }, token))).status).toBe(403);
    // Tuning through sys/mounts/auth/... needs no sudo, as in Vault.
    const tuner = await tokenWithPolicy(core, rootToken, 'auth-tuner', 'path "sys/mounts/auth/*" { capabilities = ["read", "update"] }');
    expect((await call(core, 'update', 'sys/mounts/auth/token/tune', { max_lease_ttl: '2h' }, tuner)).status).toBe(204);
    expect(core.auths.get('token/')?.config.max_lease_ttl).toBe(7200);
    expect(core.auths.get('token/')?.config.default_lease_ttl).toBe(0);
  });
});

describe('mount tables across seal and restart', () => {
  it('survives seal/unseal and a restart over the same storage, and the data with them', async () => {
    const storage = new MemoryStorage();
    const { as, core, keys, rootToken } = await setup(storage);
    await as('update', 'sys/mounts/secret', { type: 'kv-v2', description: 'v2', config: { max_lease_ttl: '5h' } });
    await as('update', 'sys/mounts/legacy', { type: 'kv' });
    await as('update', 'sys/mounts/moved', { type: 'kv' });
    await as('update', 'sys/remount', { from: 'moved', to: 'here' });
    await as('update', 'sys/mounts/gone', { type: 'kv' });
    await as('delete', 'sys/mounts/gone');
    await as('update', 'sys/auth/token/tune', { default_lease_ttl: '1h' });
    await as('update', 'secret/data/a', { data: { v: 'a' } });
    await as('update', 'legacy/b', { v: 'b' });
    await as('update', 'here/c', { v: 'c' });
    const mountsBefore = data(await as('read', 'sys/mounts'));
    const authsBefore = data(await as('read', 'sys/auth'));

    const check = async (c: Core) => {
      expect(data(await call(c, 'read', 'sys/mounts', {}, rootToken))).toEqual(mountsBefore);
      expect(data(await call(c, 'read', 'sys/auth', {}, rootToken))).toEqual(authsBefore);
      expect(Object.keys(mountsBefore).sort()).toEqual(['here/', 'legacy/', 'secret/', 'sys/']);
      expect(data(await call(c, 'read', 'secret/data/a', {}, rootToken))['data']).toEqual({ v: 'a' });
      expect(data(await call(c, 'read', 'legacy/b', {}, rootToken))).toEqual({ v: 'b' });
      expect(data(await call(c, 'read', 'here/c', {}, rootToken))).toEqual({ v: 'c' });
    };

    await as('update', 'sys/seal');
    await core.unseal(keys[0] as Buffer);
    await check(core);
    const restarted = newCore(storage);
    await restarted.unseal(keys[0] as Buffer);
    await check(restarted);
  });
});

describe('concurrent mount table changes', () => {
  it('keeps every mount enabled at the same time, also after a restart', async () => {
    const storage = new MemoryStorage();
    const { as, keys, rootToken } = await setup(storage);
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => as('update', `sys/mounts/m${i}`, { type: 'kv' })));
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(204));
    const expected = ['m0/', 'm1/', 'm2/', 'm3/', 'm4/', 'm5/', 'm6/', 'm7/', 'sys/'];
    expect(Object.keys(data(await as('read', 'sys/mounts'))).sort()).toEqual(expected);
    const restarted = newCore(storage);
    await restarted.unseal(keys[0] as Buffer);
    expect(Object.keys(data(await call(restarted, 'read', 'sys/mounts', {}, rootToken))).sort()).toEqual(expected);
  });

  it('lets only one of two concurrent enables of the same path win', async () => {
    const { as, core } = await setup();
    const results = await Promise.allSettled([as('update', 'sys/mounts/same', { type: 'kv' }), as('update', 'sys/mounts/same', { type: 'kv-v2' })]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((rejected.reason as StrongroomError).status).toBe(400);
    expect(core.mounts.all().filter((e) => e.path === 'same/')).toHaveLength(1);
  });

  it('keeps a tune and an enable that run at the same time', async () => {
    const storage = new MemoryStorage();
    const { as, core, keys } = await setup(storage);
    await as('update', 'sys/mounts/a', { type: 'kv' });
    await Promise.all([as('update', 'sys/mounts/a/tune', { default_lease_ttl: '1h' }), as('update', 'sys/mounts/b', { type: 'kv' }), as('delete', 'sys/mounts/nothing')]);
    const restarted = newCore(storage);
    await restarted.unseal(keys[0] as Buffer);
    for (const c of [core, restarted]) {
      expect(c.mounts.get('a/')?.config.default_lease_ttl).toBe(3600);
      expect(c.mounts.get('b/')).toBeDefined();
    }
  });
});
