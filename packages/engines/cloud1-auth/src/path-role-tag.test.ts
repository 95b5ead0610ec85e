import { expectBadRequest, expectFailure } from '@strongroom/core';
import { backendRig, EmulatorFixture } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

/** A vm role with a tag key, an instance carrying `tags`, and a function that makes a tag. */
async function setup() {
  const r = await backendRig(fixture);
  await r.write('role/web', { auth_type: 'vm', bound_account_id: r.accountId, role_tag: 'VaultRole', token_policies: 'a,b', token_max_ttl: '10h' });
  const tag = async (data: Record<string, unknown> = {}) => (await r.write('role/web/tag', data))?.data as { tag_key: string; tag_value: string };
  const instanceWith = (value?: string) => fixture.instance({ accountId: r.accountId, ...(value ? { tags: { VaultRole: value } } : {}) });
  return { r, tag, instanceWith };
}

describe('role tags', () => {
  it('makes a tag whose policies narrow the token, and whose max TTL caps it', async () => {
    const { r, tag, instanceWith } = await setup();
    const made = await tag({ policies: 'a', max_ttl: '1h' });
    expect(made.tag_key).toBe('VaultRole');
    expect(made.tag_value).toMatch(/^v1:/);
    const instance = instanceWith(made.tag_value);
    const login = await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'web' }));
    expect(login).toMatchObject({ policies: ['a'], maxTtl: 3600 });
    expect(login.metadata?.['role_tag_max_ttl']).toBe('3600');
  });

  it('gives only default for a tag with empty policies', async () => {
    const { r, tag, instanceWith } = await setup();
    const instance = instanceWith((await tag({ policies: [] })).tag_value);
    const login = await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'web' }));
    expect(login).toMatchObject({ policies: ['default'], noDefaultPolicy: false });
  });

  it('with token_no_default_policy, gives no policies for a tag with empty policies, and default only if the role names it', async () => {
    const { r, tag, instanceWith } = await setup();
    await r.write('role/web', { token_no_default_policy: true });
    const instance = instanceWith((await tag({ policies: [] })).tag_value);
    const login = await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'web' }));
    // Neither default (the role withholds it) nor the role's policies (the tag asked for none).
    expect(login).toMatchObject({ policies: [], noDefaultPolicy: true });
    // A role that names default among its policies grants it, so the spec's "only default" applies.
    await r.write('role/web', { token_policies: 'a,b,default' });
    const named = instanceWith((await tag({ policies: [] })).tag_value);
    expect(await r.login(await fixture.pkcs7Login(named.instanceId, { role: 'web' }))).toMatchObject({ policies: ['default'], noDefaultPolicy: true });
  });

  it('allows default in a tag only when the role grants it', async () => {
    const { r, tag, instanceWith } = await setup();
    const made = (await tag({ policies: 'a,default' })).tag_value;
    const first = instanceWith(made);
    expect((await r.login(await fixture.pkcs7Login(first.instanceId, { role: 'web' }))).policies).toEqual(['a', 'default']);
    await r.write('role/web', { token_no_default_policy: true });
    const message = await expectBadRequest(tag({ policies: 'a,default' }), 'policies');
    expect(message).toMatch(/subset of the role's policies.*default.*token_no_default_policy/);
    await expectBadRequest(tag({ policies: 'Default' }), 'policies');
    // The tag made before the role dropped default no longer logs in.
    const withDefault = instanceWith(made);
    const err = await expectFailure(r.h.request('write', 'login', await fixture.pkcs7Login(withDefault.instanceId, { role: 'web' })), 403);
    expect(err.message).toMatch(/asks for policies the role no longer grants: default/);
    await r.write('role/web', { token_policies: 'a,b,default' });
    expect((await r.login(await fixture.pkcs7Login(withDefault.instanceId, { role: 'web' }))).policies).toEqual(['a', 'default']);
  });

  it('refuses a tag allowing instance migration on a role that does not', async () => {
    const { r, tag } = await setup();
    const message = await expectBadRequest(tag({ allow_instance_migration: true }), 'allow_instance_migration');
    expect(message).toMatch(/subset of its role's.*allow_instance_migration false/);
    await r.write('role/web', { allow_instance_migration: true });
    expect((await tag({ allow_instance_migration: true })).tag_value).toMatch(/:m=true:/);
  });

  it('allows instance migration only when both the role and the tag do, also for a tag made before the role changed', async () => {
    const { r, tag, instanceWith } = await setup();
    await r.write('role/web', { allow_instance_migration: true });
    const migrate = async (instanceId: string) => {
      await r.login(await fixture.pkcs7Login(instanceId, { role: 'web' }));
      fixture.emulator.advanceTime(60_000);
      fixture.emulator.setInstanceState(instanceId, 'stopped');
      fixture.emulator.setInstanceState(instanceId, 'running');
      // A newer document without the first login's nonce: accepted only with migration.
      return r.h.request('write', 'login', await fixture.pkcs7Login(instanceId, { role: 'web' }));
    };
    const made = (await tag({ allow_instance_migration: true })).tag_value;
    await migrate(instanceWith(made).instanceId);
    // A tag without it takes migration away from the role.
    const without = instanceWith((await tag()).tag_value);
    expect((await expectFailure(migrate(without.instanceId), 403)).message).toMatch(/client nonce mismatch/);
    // The role no longer allows it: the older tag that does must not bring it back.
    await r.write('role/web', { allow_instance_migration: false });
    const err = await expectFailure(migrate(instanceWith(made).instanceId), 403);
    expect(err.message).toMatch(/client nonce mismatch/);
  });

  it('refuses tags that would widen the role', async () => {
    const { r, tag } = await setup();
    await expectBadRequest(tag({ policies: 'a,c' }), 'policies');
    await expectBadRequest(tag({ max_ttl: '11h' }), 'max_ttl');
    await expectBadRequest(tag({ allow_instance_migration: true, disallow_reauthentication: true }), 'allow_instance_migration');
    await r.write('role/plain', { auth_type: 'vm', bound_region: 'us-east-1' });
    await expectBadRequest(r.write('role/plain/tag', {}), 'role');
  });

  it('refuses logins with a forged, missing, foreign-instance or deny-listed tag', async () => {
    const { r, tag, instanceWith } = await setup();
    const untagged = instanceWith();
    await expect(r.login(await fixture.pkcs7Login(untagged.instanceId, { role: 'web' }))).rejects.toThrow(/has no tag "VaultRole"/);
    const made = await tag({ policies: 'a' });
    const forged = instanceWith(made.tag_value.replace('p=a', 'p=b'));
    await expect(r.login(await fixture.pkcs7Login(forged.instanceId, { role: 'web' }))).rejects.toThrow(/was not made by role "web"/);
    const pinned = instanceWith((await tag({ instance_id: 'i-0000000000000000f' })).tag_value);
    await expect(r.login(await fixture.pkcs7Login(pinned.instanceId, { role: 'web' }))).rejects.toThrow(/is for instance i-0000000000000000f/);
    const listed = instanceWith(made.tag_value);
    await r.write(`roletag-denylist/${Buffer.from(made.tag_value).toString('base64')}`);
    const err = await expectFailure(r.h.request('write', 'login', await fixture.pkcs7Login(listed.instanceId, { role: 'web' })), 403);
    expect(err.message).toMatch(/is deny-listed/);
  });

  it('applies the tag\'s disallow_reauthentication', async () => {
    const { r, tag, instanceWith } = await setup();
    const instance = instanceWith((await tag({ disallow_reauthentication: true })).tag_value);
    const data = await fixture.pkcs7Login(instance.instanceId, { role: 'web' });
    await r.login(data);
    await expect(r.login(data)).rejects.toThrow(/reauthentication is disabled/);
  });
});

describe('the role tag deny list', () => {
  it('lists the tags themselves, and reads and deletes entries by the tag or its base64, under both names', async () => {
    const { r, tag } = await setup();
    // Tags carry base64 (a nonce and a MAC), so most hold a '/' or a '+' and all an '='; the
    // first one holding all three is the one that shows a key is never split or re-encoded.
    let value = '';
    for (let i = 0; i < 200 && !(value.includes('/') && value.includes('+')); i++) value = (await tag()).tag_value;
    expect([...'/+='].every((c) => value.includes(c))).toBe(true);
    await r.write(`roletag-denylist/${value}`);
    expect((await r.h.request('list', 'roletag-denylist'))?.data?.['keys']).toEqual([value]);
    expect((await r.h.request('list', 'roletag-blacklist'))?.data?.['keys']).toEqual([value]);
    expect((await r.read(`roletag-blacklist/${value}`))?.data).toMatchObject({ expiration_time: expect.any(String) });
    expect((await r.read(`roletag-denylist/${Buffer.from(value).toString('base64')}`))?.data).toBeDefined();
    await r.h.request('delete', `roletag-blacklist/${value}`);
    expect(await r.read(`roletag-denylist/${value}`)).toBeNull();
    expect((await r.h.request('list', 'roletag-denylist'))?.data?.['keys'] ?? []).toEqual([]);
  });

  it('refuses a tag that is not one of the role\'s', async () => {
    const { r, tag } = await setup();
    const { tag_value: value } = await tag();
    await expectBadRequest(r.write(`roletag-denylist/${value.slice(0, -4)}AAA=`), 'role_tag');
    await expectBadRequest(r.write('roletag-denylist/bm90LWEtdGFn'), 'role_tag');
  });
});
