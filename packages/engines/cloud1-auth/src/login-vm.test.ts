import { expectFailure } from '@strongroom/core';
import { backendRig, EmulatorFixture, type BackendRig } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

async function setup(roleExtra: Record<string, unknown> = {}, seed: Record<string, unknown> = {}) {
  const r = await backendRig(fixture);
  const role = fixture.emulator.createRole(r.accountId, { roleName: 'web', instanceProfile: true });
  const instance = fixture.instance({ accountId: r.accountId, imageId: 'ami-0abc', instanceProfileName: 'web', ...seed });
  await r.write('role/web', { auth_type: 'vm', bound_image_id: 'ami-0abc', token_policies: 'app', ...roleExtra });
  return { r, instance, role };
}

async function refused(r: BackendRig, data: Record<string, unknown>, status: number, text: string | RegExp): Promise<void> {
  const err = await expectFailure(r.h.request('write', 'login', data), status);
  expect(err.message).toMatch(text);
}

describe('vm login', () => {
  it('logs an instance in with its PKCS#7 document, returning a nonce and the role\'s token', async () => {
    const { r, instance } = await setup({ token_ttl: '1h', token_max_ttl: '2h' });
    const login = await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'WEB' }));
    expect(login).toMatchObject({ policies: ['app'], ttl: 3600, maxTtl: 7200, displayName: instance.instanceId });
    expect(login.metadata).toMatchObject({ account_id: r.accountId, auth_type: 'vm', role: 'web' });
    expect(login.metadata?.['nonce']).toMatch(/^[0-9a-f-]{36}$/);
    const entry = (await r.read(`identity-accesslist/${instance.instanceId}`))?.data;
    expect(entry).toMatchObject({ role: 'web', disallow_reauthentication: false });
    expect(entry).not.toHaveProperty('client_nonce');
  });

  it('logs in with the identity document and its signature, finding the role by image ID', async () => {
    const { r, instance } = await setup();
    await r.write('role/ami-0abc', { auth_type: 'vm', bound_account_id: r.accountId });
    const login = await r.login(await fixture.identityLogin(instance.instanceId));
    expect(login.metadata?.['role']).toBe('ami-0abc');
  });

  it('refuses a document no registered certificate verifies', async () => {
    const { r, instance } = await setup();
    await r.h.request('delete', 'config/certificate/emulator-pkcs7');
    await refused(r, await fixture.pkcs7Login(instance.instanceId), 400, /no registered pkcs7 certificate verifies/);
    const data = await fixture.identityLogin(instance.instanceId);
    const forged = Buffer.from(Buffer.from(data['identity'] as string, 'base64').toString().replace('ami-0abc', 'ami-0fff')).toString('base64');
    await refused(r, { ...data, identity: forged }, 400, /no registered identity certificate verifies/);
  });

  it('refuses a PKCS#7 signature whose encapsulated document was altered', async () => {
    const { r, instance } = await setup();
    const { pkcs7 } = await fixture.pkcs7Login(instance.instanceId);
    const der = Buffer.from(pkcs7 as string, 'base64');
    const at = der.indexOf('ami-0abc');
    expect(at).toBeGreaterThan(0);
    der.write('ami-0fff', at);
    await refused(r, { pkcs7: der.toString('base64'), role: 'web' }, 400, /no registered pkcs7 certificate verifies/);
  });

  it('refuses mixed or partial proofs, and an unknown role', async () => {
    const { r, instance } = await setup();
    const both = { ...(await fixture.pkcs7Login(instance.instanceId)), ...(await fixture.identityLogin(instance.instanceId)) };
    await refused(r, both, 400, /not both/);
    await refused(r, { identity: 'e30=' }, 400, /"signature"/);
    await refused(r, { pkcs7: 'bm90IGRlcg==' }, 400, /not a PKCS#7 signature/);
    await refused(r, await fixture.pkcs7Login(instance.instanceId, { role: 'nope' }), 403, /role "nope" does not exist/);
    await refused(r, await fixture.pkcs7Login(instance.instanceId), 403, /no role is named after the image ID "ami-0abc"/);
  });

  it('refuses an instance that is not running', async () => {
    const { r, instance } = await setup();
    const data = await fixture.pkcs7Login(instance.instanceId, { role: 'web' });
    fixture.emulator.setInstanceState(instance.instanceId, 'stopped');
    await refused(r, data, 403, /is not running \(its state is stopped\)/);
  });

  it.each([
    ['bound_image_id', 'ami-0fff'],
    ['bound_account_id', '999999999999'],
    ['bound_region', 'eu-west-1'],
    ['bound_vpc_id', 'vpc-0fff'],
    ['bound_subnet_id', 'subnet-0fff'],
    ['bound_vm_instance_id', 'i-0fffffffffffffff0'],
    ['bound_iam_instance_profile_arn', 'arn:aws:iam::999999999999:instance-profile/*'],
    ['bound_iam_role_arn', 'arn:aws:iam::999999999999:role/web'],
  ])('refuses an instance outside %s', async (bound, value) => {
    const { r, instance } = await setup({ [bound]: value });
    await refused(r, await fixture.pkcs7Login(instance.instanceId, { role: 'web' }), 403, new RegExp(`does not satisfy "${bound}" of role "web"`));
  });

  it('accepts instances inside every bound, wildcards included', async () => {
    const { r, instance, role } = await setup();
    await r.write('role/web', {
      bound_account_id: r.accountId, bound_region: 'us-east-1', bound_vpc_id: instance.vpcId, bound_subnet_id: instance.subnetId,
      bound_vm_instance_id: instance.instanceId, bound_iam_instance_profile_arn: `arn:aws:iam::${r.accountId}:instance-profile/w*`,
      bound_iam_role_arn: role.arn,
    });
    await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'web' }));
  });

  it('refuses a replayed document without the nonce of the first login, and accepts it with the nonce', async () => {
    const { r, instance } = await setup();
    const data = await fixture.pkcs7Login(instance.instanceId, { role: 'web' });
    const first = await r.login(data);
    await refused(r, data, 403, /client nonce mismatch/);
    await refused(r, { ...data, nonce: 'guessed' }, 403, /client nonce mismatch/);
    const again = await r.login({ ...data, nonce: first.metadata?.['nonce'] });
    expect(again.metadata).not.toHaveProperty('nonce');
  });

  it('lets only one of two simultaneous first logins with one document through', async () => {
    const { r, instance } = await setup();
    const data = await fixture.pkcs7Login(instance.instanceId, { role: 'web' });
    const results = await Promise.allSettled([r.login(data), r.login(data)]);
    expect(results.map((x) => x.status).sort()).toEqual(['fulfilled', 'rejected']);
  });

  it('uses a client nonce, and an empty nonce disables reauthentication until the entry is deleted', async () => {
    const { r, instance } = await setup();
    const data = await fixture.pkcs7Login(instance.instanceId, { role: 'web' });
    await r.login({ ...data, nonce: '' });
    expect((await r.read(`identity-accesslist/${instance.instanceId}`))?.data).toMatchObject({ disallow_reauthentication: true });
    await refused(r, { ...data, nonce: '' }, 403, /reauthentication is disabled/);
    await r.h.request('delete', `identity-accesslist/${instance.instanceId}`);
    await r.login({ ...data, nonce: 'my-strong-nonce' });
    await r.login({ ...data, nonce: 'my-strong-nonce' });
    await refused(r, { ...data, nonce: 'x'.repeat(129) }, 400, /"nonce"/);
  });

  it('with disallow_reauthentication, allows one login per instance', async () => {
    const { r, instance } = await setup({ disallow_reauthentication: true });
    const data = await fixture.pkcs7Login(instance.instanceId, { role: 'web' });
    const first = await r.login(data);
    expect(first.metadata).not.toHaveProperty('nonce');
    await refused(r, data, 403, /reauthentication is disabled for instance/);
  });

  it('with allow_instance_migration, accepts a new nonce only with a newer pendingTime, and never an older document', async () => {
    const { r, instance } = await setup({ allow_instance_migration: true });
    const old = await fixture.pkcs7Login(instance.instanceId, { role: 'web' });
    await r.login(old);
    await refused(r, old, 403, /not newer \(pendingTime\)/);
    fixture.emulator.advanceTime(60_000);
    fixture.emulator.setInstanceState(instance.instanceId, 'stopped');
    fixture.emulator.setInstanceState(instance.instanceId, 'running');
    const migrated = await r.login(await fixture.pkcs7Login(instance.instanceId, { role: 'web' }));
    await refused(r, { ...old, nonce: migrated.metadata?.['nonce'] }, 403, /older than the one of its previous login/);
  });

  it('checks a vm role with an STS role for a satellite account through that role', async () => {
    const r = await backendRig(fixture);
    const { accountId: satellite, root: satelliteRoot } = fixture.account();
    const trust = { Statement: [{ Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${r.accountId}:root` }, Action: 'sts:AssumeRole' }] };
    const stsRole = fixture.emulator.createRole(satellite, { roleName: 'strongroom-verify', trustPolicy: trust });
    const instance = fixture.instance({ accountId: satellite, imageId: 'ami-0sat' });
    await r.write('role/sat', { auth_type: 'vm', bound_account_id: satellite });
    const data = await fixture.pkcs7Login(instance.instanceId, { role: 'sat' });
    // The mount's own account cannot see the other account's instance.
    await refused(r, data, 403, /was not found in region us-east-1 of account/);
    await r.write(`config/sts/${satellite}`, { sts_role: stsRole.arn });
    expect((await r.read(`config/sts/${satellite}`))?.data).toEqual({ sts_role: stsRole.arn });
    const login = await r.login(data);
    expect(login.metadata?.['account_id']).toBe(satellite);
    expect(satelliteRoot.accessKeyId).toBeDefined();
  });
});
