import { SYSTEM_DEFAULT_TTL, SYSTEM_MAX_TTL, type Core } from '../index';
import { data, failure, rig, type Body, type Reply } from '../testing/core-rig';
import { storeEngine } from '../test-support/store-engine';

/** Core's own behaviour needs only some mount of the kv type, not the KV engine. */
const kvStandIn = storeEngine('kv');

async function allKeys(core: Core, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for (const child of await core.barrier.list(prefix)) {
    if (child.endsWith('/')) out.push(...(await allKeys(core, prefix + child)));
    else out.push(prefix + child);
  }
  return out;
}

describe('enabling secrets engines', () => {
  it('accepts options.version as a number', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv', options: { version: 2 } });
    expect(r.core.mounts.get('secret/')?.options).toEqual({ version: '2' });
  });

  it('treats the kv-v2 type as kv with version 2', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/versioned', r.root, { type: 'kv-v2' });
    const entry = r.core.mounts.get('versioned/');
    expect(entry?.type).toBe('kv');
    expect(entry?.options).toEqual({ version: '2' });
    await r.ok('update', 'versioned/data/x', r.root, { data: { a: 1 } });
    expect(data(await r.ok('read', 'versioned/data/x', r.root))['data']).toEqual({ a: 1 });
  });

  it('lists every mount in sys/mounts with its full description, in data and at the top level', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, {
      type: 'kv', options: { version: '2' }, description: 'app secrets', config: { default_lease_ttl: '1h', max_lease_ttl: '2h' },
    });
    const reply = await r.call('read', 'sys/mounts', r.root);
    expect(reply.status).toBe(200);
    const mounts = data(reply);
    expect(Object.keys(mounts).sort()).toEqual(['identity/', 'secret/', 'sys/']);
    const secret = mounts['secret/'] as Body;
    expect(secret).toMatchObject({
      type: 'kv', description: 'app secrets', local: false, seal_wrap: false, external_entropy_access: false,
      options: { version: '2' }, config: { default_lease_ttl: 3600, max_lease_ttl: 7200, force_no_cache: false },
    });
    expect(secret['accessor']).toMatch(/^kv_[0-9a-f]{8}$/);
    expect(secret['uuid']).toMatch(/^[0-9a-f-]{36}$/);
    expect(mounts['sys/']).toMatchObject({ type: 'system', config: { default_lease_ttl: 0, max_lease_ttl: 0 } });
    // Old clients read the mounts from the top level of the reply.
    expect(reply.body['secret/']).toEqual(secret);
    expect(reply.body['sys/']).toEqual(mounts['sys/']);
    expect(reply.body['request_id']).toEqual(expect.any(String));
  });

  it('reads one mount at sys/mounts/:path, with or without the trailing slash', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/team/app', r.root, { type: 'kv-v2', description: 'nested' });
    const listed = data(await r.ok('read', 'sys/mounts', r.root))['team/app/'];
    expect(data(await r.ok('read', 'sys/mounts/team/app', r.root))).toEqual(listed);
    expect(data(await r.ok('read', 'sys/mounts/team/app/', r.root))).toEqual(listed);
    expect((await failure(r.call('read', 'sys/mounts/nothing', r.root))).status).toBe(404);
  });

  it('refuses an unknown engine type with a 400 naming the type', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const err = await failure(r.call('update', 'sys/mounts/x', r.root, { type: 'no-such-engine' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('no-such-engine');
    expect(r.core.mounts.get('x/')).toBeUndefined();
  });

  it.each(['system', 'token'])('refuses to mount the built-in %s type again', async (type) => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await failure(r.call('update', 'sys/mounts/again', r.root, { type }))).status).toBe(400);
  });

  it('requires a type', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const err = await failure(r.call('update', 'sys/mounts/x', r.root));
    expect(err.status).toBe(400);
    expect(err.message).toContain('type');
  });

  it('refuses an options.version other than 1 or 2', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const err = await failure(r.call('update', 'sys/mounts/x', r.root, { type: 'kv', options: { version: '3' } }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('options.version');
  });

  it.each([
    ['secret', 'secret/sub'],
    ['secret/sub', 'secret'],
    ['secret', 'secret'],
    ['a/b/c', 'a/b'],
  ])('refuses %s and then %s as overlapping mounts', async (first, second) => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', `sys/mounts/${first}`, r.root, { type: 'kv' });
    const err = await failure(r.call('update', `sys/mounts/${second}`, r.root, { type: 'kv' }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/already in use/);
  });

  it('allows mounts that only share a name prefix', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv' });
    await r.ok('update', 'sys/mounts/secret2', r.root, { type: 'kv' });
    expect(r.core.mounts.get('secret2/')).toBeDefined();
  });

  it.each(['sys', 'sys/foo', 'auth', 'auth/foo', 'identity', 'cubbyhole', 'cubbyhole/x'])('refuses the reserved path %s', async (path) => {
    const r = await rig({ engines: [kvStandIn] });
    const err = await failure(r.call('update', `sys/mounts/${path}`, r.root, { type: 'kv' }));
    expect(err.status).toBe(400);
  });

  it.each(['a//b', 'a/../b', './a'])('refuses the unclean path %s', async (path) => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await failure(r.call('update', `sys/mounts/${path}`, r.root, { type: 'kv' }))).status).toBe(400);
  });

  it('refuses a default lease TTL above the max lease TTL in config', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const err = await failure(r.call('update', 'sys/mounts/x', r.root, { type: 'kv', config: { default_lease_ttl: '2h', max_lease_ttl: '1h' } }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('default_lease_ttl');
  });

  it('needs update on sys/mounts/:path but not sudo', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const token = await r.tokenWithPolicy('mounter', 'path "sys/mounts/*" { capabilities = ["create", "update", "read"] }');
    expect((await r.call('update', 'sys/mounts/mine', token, { type: 'kv' })).status).toBe(204);
    const reader = await r.tokenWithPolicy('reader', 'path "sys/mounts/*" { capabilities = ["read"] }');
    expect((await failure(r.call('update', 'sys/mounts/other', reader, { type: 'kv' }))).status).toBe(403);
  });
});

describe('tuning mounts', () => {
  it('reads the effective TTLs, system defaults when unset', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2', description: 'desc' });
    const reply = await r.ok('read', 'sys/mounts/secret/tune', r.root);
    expect(data(reply)).toMatchObject({
      description: 'desc', default_lease_ttl: SYSTEM_DEFAULT_TTL, max_lease_ttl: SYSTEM_MAX_TTL, force_no_cache: false, options: { version: '2' },
    });
    expect(reply.body['default_lease_ttl']).toBe(SYSTEM_DEFAULT_TTL);
  });

  it('tunes TTLs given as duration strings or seconds and keeps what was not sent', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    expect((await r.call('update', 'sys/mounts/secret/tune', r.root, { max_lease_ttl: '48h', default_lease_ttl: '1h30m' })).status).toBe(204);
    expect(data(await r.ok('read', 'sys/mounts/secret/tune', r.root))).toMatchObject({ default_lease_ttl: 5400, max_lease_ttl: 172800 });
    await r.ok('update', 'sys/mounts/secret/tune', r.root, { default_lease_ttl: 7200 });
    expect(r.core.mounts.get('secret/')?.config).toMatchObject({ default_lease_ttl: 7200, max_lease_ttl: 172800 });
    await r.ok('update', 'sys/mounts/secret/tune', r.root, { description: 'new words' });
    expect(r.core.mounts.get('secret/')?.description).toBe('new words');
    expect(r.core.mounts.get('secret/')?.config).toMatchObject({ default_lease_ttl: 7200, max_lease_ttl: 172800 });
    // "system" puts a TTL back to the system default.
    await r.ok('update', 'sys/mounts/secret/tune', r.root, { default_lease_ttl: 'system', max_lease_ttl: 'system' });
    expect(data(await r.ok('read', 'sys/mounts/secret/tune', r.root))).toMatchObject({ default_lease_ttl: SYSTEM_DEFAULT_TTL, max_lease_ttl: SYSTEM_MAX_TTL });
  });

  it('refuses a default lease TTL above the max, whether set together or against the stored max', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    let err = await failure(r.call('update', 'sys/mounts/secret/tune', r.root, { default_lease_ttl: '3h', max_lease_ttl: '2h' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('default_lease_ttl');
    await r.ok('update', 'sys/mounts/secret/tune', r.root, { max_lease_ttl: '2h' });
    err = await failure(r.call('update', 'sys/mounts/secret/tune', r.root, { default_lease_ttl: '3h' }));
    expect(err.status).toBe(400);
    // Lowering the max below the stored default is refused too.
    await r.ok('update', 'sys/mounts/secret/tune', r.root, { default_lease_ttl: '90m' });
    err = await failure(r.call('update', 'sys/mounts/secret/tune', r.root, { max_lease_ttl: '1h' }));
    expect(err.status).toBe(400);
    expect(r.core.mounts.get('secret/')?.config).toMatchObject({ default_lease_ttl: 5400, max_lease_ttl: 7200 });
  });

  it('refuses a max lease TTL above the system maximum, and a default above it when max is unset', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    let err = await failure(r.call('update', 'sys/mounts/secret/tune', r.root, { max_lease_ttl: `${SYSTEM_MAX_TTL + 1}s` }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('max_lease_ttl');
    err = await failure(r.call('update', 'sys/mounts/secret/tune', r.root, { default_lease_ttl: `${SYSTEM_MAX_TTL + 1}s` }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('default_lease_ttl');
  });

  it.each([['soon'], [-5], ['-1h'], [{}]])('refuses the TTL %j', async (value) => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    const err = await failure(r.call('update', 'sys/mounts/secret/tune', r.root, { default_lease_ttl: value }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('default_lease_ttl');
  });

  it('upgrades kv version 1 to 2 but refuses to downgrade', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/kv', r.root, { type: 'kv' });
    await r.ok('update', 'sys/mounts/kv/tune', r.root, { options: { version: '2' } });
    expect(r.core.mounts.get('kv/')?.options['version']).toBe('2');
    const err = await failure(r.call('update', 'sys/mounts/kv/tune', r.root, { options: { version: '1' } }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('options.version');
    expect(r.core.mounts.get('kv/')?.options['version']).toBe('2');
  });

  it('answers 400 for tuning what is not mounted', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await failure(r.call('read', 'sys/mounts/nothing/tune', r.root))).status).toBe(400);
    expect((await failure(r.call('update', 'sys/mounts/nothing/tune', r.root, { default_lease_ttl: '1h' }))).status).toBe(400);
  });

  it('tunes an auth method, through sys/auth/:path/tune and through sys/mounts/auth/:path/tune', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/auth/token/tune', r.root, { default_lease_ttl: '2h' });
    expect(r.core.auths.get('token/')?.config.default_lease_ttl).toBe(7200);
    expect(data(await r.ok('read', 'sys/auth/token/tune', r.root))['default_lease_ttl']).toBe(7200);
    await r.ok('update', 'sys/mounts/auth/token/tune', r.root, { max_lease_ttl: '3h' });
    expect(r.core.auths.get('token/')?.config.max_lease_ttl).toBe(10800);
    expect(data(await r.ok('read', 'sys/mounts/auth/token/tune', r.root))).toMatchObject({ default_lease_ttl: 7200, max_lease_ttl: 10800 });
  });
});

describe('disabling and moving mounts', () => {
  it('deletes all of a mount\'s data when it is disabled', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    const uuid = r.core.mounts.get('secret/')?.uuid as string;
    for (let i = 0; i < 20; i++) await r.ok('update', `secret/data/dir${i % 3}/s${i}`, r.root, { data: { i } });
    await r.ok('update', 'secret/config', r.root, { max_versions: 3 });
    expect(await allKeys(r.core, `logical/${uuid}/`)).toHaveLength(21);
    expect((await r.call('delete', 'sys/mounts/secret', r.root)).status).toBe(204);
    expect(await allKeys(r.core, `logical/${uuid}/`)).toEqual([]);
    expect(await r.core.barrier.list(`logical/${uuid}/`)).toEqual([]);
    expect(r.core.mounts.get('secret/')).toBeUndefined();
    expect((await failure(r.call('read', 'secret/data/dir0/s0', r.root))).status).toBe(404);
    // Mounting again at the same path starts empty.
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2' });
    expect((await failure(r.call('read', 'secret/data/dir0/s0', r.root))).status).toBe(404);
  });

  it('answers 204 for disabling a path where nothing is mounted', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await r.call('delete', 'sys/mounts/nothing', r.root)).status).toBe(204);
  });

  it('refuses to disable sys/', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await failure(r.call('delete', 'sys/mounts/sys', r.root))).status).toBe(400);
    expect(r.core.mounts.get('sys/')).toBeDefined();
  });

  it('leaves other mounts\' data alone', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/a', r.root, { type: 'kv-v2' });
    await r.ok('update', 'sys/mounts/b', r.root, { type: 'kv-v2' });
    await r.ok('update', 'a/data/x', r.root, { data: { v: 'a' } });
    await r.ok('update', 'b/data/x', r.root, { data: { v: 'b' } });
    await r.ok('delete', 'sys/mounts/a', r.root);
    expect(data(await r.ok('read', 'b/data/x', r.root))['data']).toEqual({ v: 'b' });
    expect(r.core.mounts.get('b/')).toBeDefined();
  });

  it('moves a mount with sys/remount and its data stays readable at the new path', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/old', r.root, { type: 'kv-v2', description: 'moving' });
    const before = r.core.mounts.get('old/');
    await r.ok('update', 'old/data/app', r.root, { data: { v: 1 } });
    const reply = await r.call('update', 'sys/remount', r.root, { from: 'old', to: 'new/place' });
    expect(reply.status).toBe(200);
    expect(data(reply)['migration_id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.core.mounts.get('old/')).toBeUndefined();
    const after = r.core.mounts.get('new/place/');
    expect(after).toMatchObject({ uuid: before?.uuid, accessor: before?.accessor, description: 'moving', type: 'kv' });
    expect(data(await r.ok('read', 'new/place/data/app', r.root))['data']).toEqual({ v: 1 });
    expect((await failure(r.call('read', 'old/data/app', r.root))).status).toBe(404);
    await r.ok('update', 'new/place/data/app', r.root, { data: { v: 2 } });
    expect(data(await r.ok('read', 'new/place/data/app', r.root))['data']).toEqual({ v: 2 });
  });

  it('refuses to move a mount onto a used or reserved path, between tables, or a built-in one', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/a', r.root, { type: 'kv' });
    await r.ok('update', 'sys/mounts/b', r.root, { type: 'kv' });
    expect((await failure(r.call('update', 'sys/remount', r.root, { from: 'a', to: 'b' }))).status).toBe(400);
    expect((await failure(r.call('update', 'sys/remount', r.root, { from: 'a', to: 'b/c' }))).status).toBe(400);
    expect((await failure(r.call('update', 'sys/remount', r.root, { from: 'a', to: 'sys/a' }))).status).toBe(400);
    expect((await failure(r.call('update', 'sys/remount', r.root, { from: 'a', to: 'auth/a' }))).status).toBe(400);
    expect((await failure(r.call('update', 'sys/remount', r.root, { from: 'sys', to: 'system' }))).status).toBe(400);
    expect((await failure(r.call('update', 'sys/remount', r.root, { from: 'auth/token', to: 'auth/tok' }))).status).toBe(400);
    expect((await failure(r.call('update', 'sys/remount', r.root, { from: 'nothing', to: 'c' }))).status).toBe(400);
    expect(r.core.mounts.get('a/')).toBeDefined();
  });

  it('refuses mount paths and remount targets no URL could name, with a 400 naming the field', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/a', r.root, { type: 'kv' });
    const mounted = Object.keys(data(await r.ok('read', 'sys/mounts', r.root))).sort();
    const bad = ['a\u0000b', 'a\ud800b', 'x'.repeat(1024 * 1024), 'x/../y', 'tab\there'];
    for (const path of bad) {
      for (const group of ['mounts', 'auth']) {
        const err = await failure(r.call('update', `sys/${group}/${path}`, r.root, { type: group === 'auth' ? 'userpass' : 'kv' }));
        expect(err.status).toBe(400);
        expect(err.message).toMatch(/^invalid value for "path"/);
      }
      const to = await failure(r.call('update', 'sys/remount', r.root, { from: 'a', to: path }));
      expect(to.status).toBe(400);
      expect(to.message).toMatch(/^invalid value for "to"/);
      const from = await failure(r.call('update', 'sys/remount', r.root, { from: path, to: 'b' }));
      expect(from.message).toMatch(/^invalid value for "from"/);
    }
    expect(Object.keys(data(await r.ok('read', 'sys/mounts', r.root))).sort()).toEqual(mounted);
  });

  it('requires sudo to move a mount', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/a', r.root, { type: 'kv' });
    const noSudo = await r.tokenWithPolicy('mover', 'path "sys/remount" { capabilities = ["update"] }');
    expect((await failure(r.call('update', 'sys/remount', noSudo, { from: 'a', to: 'b' }))).status).toBe(403);
    expect(r.core.mounts.get('a/')).toBeDefined();
    const withSudo = await r.tokenWithPolicy('mover2', 'path "sys/remount" { capabilities = ["update", "sudo"] }');
    expect((await r.call('update', 'sys/remount', withSudo, { from: 'a', to: 'b' })).status).toBe(200);
    expect(r.core.mounts.get('b/')).toBeDefined();
  });
});

describe('auth methods', () => {
  it('lists token/ in sys/auth', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const reply = await r.ok('read', 'sys/auth', r.root);
    const token = data(reply)['token/'] as Body;
    expect(token).toMatchObject({ type: 'token', description: expect.any(String), options: {} });
    expect(token['accessor']).toMatch(/^token_[0-9a-f]{8}$/);
    expect(reply.body['token/']).toEqual(token);
  });

  it('refuses to disable token/', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const err = await failure(r.call('delete', 'sys/auth/token', r.root));
    expect(err.status).toBe(400);
    expect(r.core.auths.get('token/')).toBeDefined();
    expect((await r.call('read', 'auth/token/lookup-self', r.root)).status).toBe(200);
  });

  it('refuses an unknown auth type, and a secrets engine as an auth method', async () => {
    const r = await rig({ engines: [kvStandIn] });
    let err = await failure(r.call('update', 'sys/auth/userpass', r.root, { type: 'userpass' }));
    expect(err.status).toBe(400);
    expect(err.message).toContain('userpass');
    err = await failure(r.call('update', 'sys/auth/kv', r.root, { type: 'kv' }));
    expect(err.status).toBe(400);
    expect(r.core.auths.get('kv/')).toBeUndefined();
  });

  it('refuses a second token method', async () => {
    const r = await rig({ engines: [kvStandIn] });
    expect((await failure(r.call('update', 'sys/auth/token2', r.root, { type: 'token' }))).status).toBe(400);
    expect((await failure(r.call('update', 'sys/auth/token', r.root, { type: 'token' }))).status).toBe(400);
  });

  it('needs sudo to read, enable, tune or disable auth methods by path', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const token = await r.tokenWithPolicy('auth-admin', `
      path "sys/auth" { capabilities = ["read"] }
      path "sys/auth/*" { capabilities = ["create", "read", "update", "delete"] }
    `);
    expect((await r.call('read', 'sys/auth', token)).status).toBe(200);
    expect((await failure(r.call('read', 'sys/auth/token', token))).status).toBe(403);
    expect((await failure(r.call('read', 'sys/auth/token/tune', token))).status).toBe(403);
    expect((await failure(r.call('update', 'sys/auth/token/tune', token, { default_lease_ttl: '1h' }))).status).toBe(403);
    expect((await failure(r.call('delete', 'sys/auth/token', token))).status).toBe(403);
    expect((await failure(r.call('update', 'sys/auth/other', token, { type: 'token' }))).status).toBe(403);
    // Tuning through sys/mounts/auth/... needs no sudo, as in Vault.
    const tuner = await r.tokenWithPolicy('auth-tuner', 'path "sys/mounts/auth/*" { capabilities = ["read", "update"] }');
    expect((await r.call('update', 'sys/mounts/auth/token/tune', tuner, { max_lease_ttl: '2h' })).status).toBe(204);
    expect(r.core.auths.get('token/')?.config.max_lease_ttl).toBe(7200);
    expect(r.core.auths.get('token/')?.config.default_lease_ttl).toBe(0);
  });
});

describe('mount tables across seal and restart', () => {
  it('survives seal/unseal and a restart over the same storage, and the data with them', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/secret', r.root, { type: 'kv-v2', description: 'v2', config: { max_lease_ttl: '5h' } });
    await r.ok('update', 'sys/mounts/legacy', r.root, { type: 'kv' });
    await r.ok('update', 'sys/mounts/moved', r.root, { type: 'kv' });
    await r.ok('update', 'sys/remount', r.root, { from: 'moved', to: 'here' });
    await r.ok('update', 'sys/mounts/gone', r.root, { type: 'kv' });
    await r.ok('delete', 'sys/mounts/gone', r.root);
    await r.ok('update', 'sys/auth/token/tune', r.root, { default_lease_ttl: '1h' });
    await r.ok('update', 'secret/data/a', r.root, { data: { v: 'a' } });
    await r.ok('update', 'legacy/b', r.root, { v: 'b' });
    await r.ok('update', 'here/c', r.root, { v: 'c' });
    const mountsBefore = data(await r.ok('read', 'sys/mounts', r.root));
    const authsBefore = data(await r.ok('read', 'sys/auth', r.root));

    const check = async () => {
      expect(data(await r.ok('read', 'sys/mounts', r.root))).toEqual(mountsBefore);
      expect(data(await r.ok('read', 'sys/auth', r.root))).toEqual(authsBefore);
      expect(Object.keys(mountsBefore).sort()).toEqual(['here/', 'identity/', 'legacy/', 'secret/', 'sys/']);
      expect(data(await r.ok('read', 'secret/data/a', r.root))['data']).toEqual({ v: 'a' });
      expect(data(await r.ok('read', 'legacy/b', r.root))).toEqual({ v: 'b' });
      expect(data(await r.ok('read', 'here/c', r.root))).toEqual({ v: 'c' });
    };

    await r.ok('update', 'sys/seal', r.root);
    await r.core.unseal(r.key);
    await check();
    await r.restart();
    await check();
  });
});

describe('concurrent mount table changes', () => {
  it('keeps every mount enabled at the same time, also after a restart', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => r.call('update', `sys/mounts/m${i}`, r.root, { type: 'kv' })));
    expect(replies.map((reply) => reply.status)).toEqual(Array(8).fill(204));
    const expected = ['identity/', 'm0/', 'm1/', 'm2/', 'm3/', 'm4/', 'm5/', 'm6/', 'm7/', 'sys/'];
    expect(Object.keys(data(await r.ok('read', 'sys/mounts', r.root))).sort()).toEqual(expected);
    await r.restart();
    expect(Object.keys(data(await r.ok('read', 'sys/mounts', r.root))).sort()).toEqual(expected);
  });

  it('lets only one of two concurrent enables of the same path win', async () => {
    const r = await rig({ engines: [kvStandIn] });
    const replies = await Promise.all([r.call('update', 'sys/mounts/same', r.root, { type: 'kv' }), r.call('update', 'sys/mounts/same', r.root, { type: 'kv-v2' })]);
    expect(replies.filter((reply) => reply.status < 400)).toHaveLength(1);
    const refused = replies.find((reply) => reply.status >= 400) as Reply;
    expect(refused.status).toBe(400);
    expect(r.core.mounts.all().filter((e) => e.path === 'same/')).toHaveLength(1);
  });

  it('keeps a tune and an enable that run at the same time', async () => {
    const r = await rig({ engines: [kvStandIn] });
    await r.ok('update', 'sys/mounts/a', r.root, { type: 'kv' });
    await Promise.all([r.ok('update', 'sys/mounts/a/tune', r.root, { default_lease_ttl: '1h' }), r.ok('update', 'sys/mounts/b', r.root, { type: 'kv' }), r.ok('delete', 'sys/mounts/nothing', r.root)]);
    for (const restart of [false, true]) {
      if (restart) await r.restart();
      expect(r.core.mounts.get('a/')?.config.default_lease_ttl).toBe(3600);
      expect(r.core.mounts.get('b/')).toBeDefined();
    }
  });
});
