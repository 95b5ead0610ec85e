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
    expect((await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'web' }))).policies).toEqual([]);
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
  it('lists, reads and deletes entries by the tag or its base64, under both names', async () => {
    const { r, tag } = await setup();
    const { tag_value: value } = await tag();
    await r.write(`roletag-denylist/${value}`);
    const keys = (await r.h.request('list', 'roletag-denylist'))?.data?.['keys'] as string[];
    expect(keys).toHaveLength(1);
    expect((await r.read(`roletag-blacklist/${keys[0]}`))?.data).toMatchObject({ expiration_time: expect.any(String) });
    expect((await r.read(`roletag-denylist/${Buffer.from(value).toString('base64')}`))?.data).toBeDefined();
    await r.h.request('delete', `roletag-blacklist/${value}`);
    expect(await r.read(`roletag-denylist/${value}`)).toBeNull();
  });

  it('refuses a tag that is not one of the role\'s', async () => {
    const { r, tag } = await setup();
    const { tag_value: value } = await tag();
    await expectBadRequest(r.write(`roletag-denylist/${value.slice(0, -4)}AAA=`), 'role_tag');
    await expectBadRequest(r.write('roletag-denylist/bm90LWEtdGFn'), 'role_tag');
  });
});
