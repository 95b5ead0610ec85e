/**
 * End to end through a real Core: the engine mounted at auth/cloud1, logins answered with
 * tokens whose policies, TTLs, bound CIDRs and uses follow the role, identity aliases per
 * config/identity, and renewals that recheck the login.
 */
import { testing } from '@strongroom/core';
import { cloud1AuthEngineWith } from './cloud1-auth-engine';
import { EmulatorFixture, iamLogin } from './test-support/cloud1-rig';

const { rig } = testing;
type Rig = testing.Rig;

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

interface Setup {
  r: Rig;
  accountId: string;
  accessor: string;
  login(data: Record<string, unknown>, remoteAddress?: string): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function setup(): Promise<Setup> {
  const r = await rig({ engines: [cloud1AuthEngineWith(fixture.options())] });
  await r.ok('update', 'sys/auth/cloud1', r.root, { type: 'cloud1' });
  const accessor = (await r.ok('read', 'sys/auth', r.root)).body.data['cloud1/'].accessor as string;
  const { accountId, root } = fixture.account();
  await r.ok('update', 'auth/cloud1/config/client', r.root, fixture.clientConfig(root));
  await r.ok('update', 'auth/cloud1/config/certificate/emulator', r.root, { cloud1_public_cert: fixture.certificate(), type: 'pkcs7' });
  await r.policy('app', 'path "sys/policies/acl/app" { capabilities = ["read"] }');
  return {
    r, accountId, accessor,
    login: async (data, remoteAddress) => (await r.ok('update', 'auth/cloud1/login', undefined, data, remoteAddress)).body.auth,
  };
}

describe('cloud1 logins through core', () => {
  it('issues a vm token with the role\'s policies and TTL, and an entity alias named by the role ID', async () => {
    const { r, accountId, accessor, login } = await setup();
    const instance = fixture.instance({ accountId });
    await r.ok('update', 'auth/cloud1/role/web', r.root, { auth_type: 'vm', bound_account_id: accountId, token_policies: 'app', token_ttl: '1h' });
    const roleId = (await r.ok('read', 'auth/cloud1/role/web', r.root)).body.data.role_id;
    const auth = await login(await fixture.pkcs7Login(instance.instanceId, { role: 'web' }));
    expect(auth).toMatchObject({ policies: ['app', 'default'], lease_duration: 3600, renewable: true, token_type: 'service' });
    expect(auth.metadata).toMatchObject({ account_id: accountId, auth_type: 'vm', role: 'web', nonce: expect.any(String) });
    expect((await r.call('read', 'sys/policies/acl/app', auth.client_token)).status).toBe(200);
    const self = (await r.ok('read', 'auth/token/lookup-self', auth.client_token)).body.data;
    expect(self).toMatchObject({ path: 'auth/cloud1/login', display_name: `cloud1-${instance.instanceId}` });
    const entity = (await r.ok('update', 'identity/lookup/entity', r.root, { alias_name: roleId, alias_mount_accessor: accessor })).body.data;
    expect(entity.id).toBe(auth.entity_id);
    // The per-login nonce stays out of the alias, so the alias is not rewritten at every login.
    expect(entity.aliases[0].metadata).toEqual({ account_id: accountId, auth_type: 'vm' });
  });

  it('applies num uses, bound CIDRs, period, explicit max TTL, no default policy and batch type', async () => {
    const { r, accountId, login } = await setup();
    const base = { auth_type: 'vm', bound_account_id: accountId, token_policies: 'app' };
    await r.ok('update', 'auth/cloud1/role/uses', r.root, { ...base, token_num_uses: 2, token_no_default_policy: true, token_explicit_max_ttl: '30m', token_ttl: '1h' });
    const a = await login(await fixture.pkcs7Login(fixture.instance({ accountId }).instanceId, { role: 'uses' }));
    expect(a).toMatchObject({ policies: ['app'], num_uses: 2, lease_duration: 1800 });
    await r.ok('update', 'auth/cloud1/role/cidr', r.root, { ...base, token_bound_cidrs: '10.1.0.0/16' });
    const cidrData = await fixture.pkcs7Login(fixture.instance({ accountId }).instanceId, { role: 'cidr' });
    expect((await r.call('update', 'auth/cloud1/login', undefined, cidrData, '192.168.1.1')).status).toBe(403);
    const c = await login(cidrData, '10.1.2.3');
    expect(await r.works(c.client_token, '10.1.9.9')).toBe(true);
    expect(await r.works(c.client_token, '192.168.1.1')).toBe(false);
    await r.ok('update', 'auth/cloud1/role/periodic', r.root, { ...base, token_period: '2h' });
    const p = await login(await fixture.pkcs7Login(fixture.instance({ accountId }).instanceId, { role: 'periodic' }));
    expect((await r.ok('read', 'auth/token/lookup-self', p.client_token)).body.data).toMatchObject({ period: 7200, ttl: 7200 });
    await r.ok('update', 'auth/cloud1/role/batch', r.root, { ...base, token_type: 'batch' });
    const b = await login(await fixture.pkcs7Login(fixture.instance({ accountId }).instanceId, { role: 'batch' }));
    expect(b).toMatchObject({ token_type: 'batch', renewable: false });
    expect(await r.works(b.client_token)).toBe(true);
  });

  it('renews a vm token with the role\'s current TTLs, and refuses once the instance stops or the role is gone', async () => {
    const { r, accountId, login } = await setup();
    const instance = fixture.instance({ accountId });
    await r.ok('update', 'auth/cloud1/role/web', r.root, { auth_type: 'vm', bound_account_id: accountId, token_ttl: '1h', token_max_ttl: '3h' });
    const auth = await login(await fixture.pkcs7Login(instance.instanceId, { role: 'web' }));
    await r.clock.advance(30 * 60_000);
    await r.ok('update', 'auth/cloud1/role/web', r.root, { token_ttl: '2h' });
    const renewed = (await r.ok('update', 'auth/token/renew-self', auth.client_token)).body.auth;
    expect(renewed.lease_duration).toBe(7200);
    await r.ok('update', 'auth/cloud1/role/web', r.root, { token_ttl: '1h', token_max_ttl: '1h' });
    const capped = (await r.ok('update', 'auth/token/renew-self', auth.client_token)).body;
    expect(capped.auth.lease_duration).toBe(1800);
    await r.ok('update', 'auth/cloud1/role/web', r.root, { token_max_ttl: '3h' });
    fixture.emulator.setInstanceState(instance.instanceId, 'stopped');
    const stopped = await r.call('update', 'auth/token/renew-self', auth.client_token);
    expect(stopped.status).toBe(403);
    expect(stopped.body.errors[0]).toMatch(/is not running/);
    fixture.emulator.setInstanceState(instance.instanceId, 'running');
    await r.ok('update', 'auth/token/renew-self', auth.client_token);
    await r.ok('delete', 'auth/cloud1/role/web', r.root);
    expect((await r.call('update', 'auth/token/renew-self', auth.client_token)).body.errors[0]).toMatch(/role "web" no longer exists/);
    // A role made again under the same name is another role.
    await r.ok('update', 'auth/cloud1/role/web', r.root, { auth_type: 'vm', bound_account_id: accountId });
    expect((await r.call('update', 'auth/token/renew-self', auth.client_token)).body.errors[0]).toMatch(/deleted and made again/);
  });

  it('refuses to renew a vm token whose access list entry was deleted', async () => {
    const { r, accountId, login } = await setup();
    const instance = fixture.instance({ accountId });
    await r.ok('update', 'auth/cloud1/role/web', r.root, { auth_type: 'vm', bound_account_id: accountId });
    const auth = await login(await fixture.pkcs7Login(instance.instanceId, { role: 'web' }));
    await r.ok('delete', `auth/cloud1/identity-accesslist/${instance.instanceId}`, r.root);
    expect((await r.call('update', 'auth/token/renew-self', auth.client_token)).body.errors[0]).toMatch(/no longer on the identity access list/);
  });

  it('issues iam tokens aliased by unique ID, and refuses renewal once inference is turned on or the principal is unbound', async () => {
    const { r, accountId, accessor, login } = await setup();
    const alice = fixture.emulator.createUser(accountId, { userName: 'alice', accessKeys: 1 });
    const bob = fixture.emulator.createUser(accountId, { userName: 'bob' });
    await r.ok('update', 'auth/cloud1/config/identity', r.root, { iam_alias: 'unique_id', iam_metadata: 'default,client_arn' });
    await r.ok('update', 'auth/cloud1/role/dev', r.root, { bound_iam_principal_arn: alice.arn, token_policies: 'app' });
    const auth = await login({ role: 'dev', ...(await iamLogin(alice.accessKeys[0]!)) });
    expect(auth.metadata).toMatchObject({ client_arn: alice.arn, auth_type: 'iam', account_id: accountId });
    const entity = (await r.ok('update', 'identity/lookup/entity', r.root, { alias_name: alice.userId, alias_mount_accessor: accessor })).body.data;
    expect(entity.id).toBe(auth.entity_id);
    await r.ok('update', 'auth/token/renew-self', auth.client_token);
    await r.ok('update', 'auth/cloud1/role/dev', r.root, { bound_iam_principal_arn: bob.arn });
    expect((await r.call('update', 'auth/token/renew-self', auth.client_token)).body.errors[0]).toMatch(/does not match "bound_iam_principal_arn"/);
    await r.ok('update', 'auth/cloud1/role/dev', r.root, {
      bound_iam_principal_arn: alice.arn, inferred_entity_type: 'vm_instance', inferred_cloud1_region: 'us-east-1',
    });
    expect((await r.call('update', 'auth/token/renew-self', auth.client_token)).body.errors[0]).toMatch(/inferred_entity_type of role "dev" changed/);
  });
});
