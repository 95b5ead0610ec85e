import { DeleteAccessKeyCommand, DeleteUserCommand, IAMClient } from '@aws-sdk/client-iam';
import { expectBadRequest, expectFailure } from '@strongroom/core';
import { backendRig, EmulatorFixture } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

describe('roles', () => {
  it('stores names lower-cased, reads them in any casing, and never shows the tag key\'s secret', async () => {
    const r = await backendRig(fixture);
    await r.write('role/WebServers', { auth_type: 'vm', bound_region: 'us-east-1,eu-west-1', role_tag: 'VaultRole', policies: 'a,b' });
    const read = (await r.read('role/webservers'))?.data ?? {};
    expect(read).toMatchObject({
      auth_type: 'vm', bound_region: ['us-east-1', 'eu-west-1'], role_tag: 'VaultRole', token_policies: ['a', 'b'], policies: ['a', 'b'],
      resolve_cloud1_unique_ids: true, token_type: 'default', role_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(JSON.stringify(read)).not.toMatch(/hmac/i);
    expect((await r.h.request('list', 'roles'))?.data).toEqual({ keys: ['webservers'] });
    await r.write('role/WEBSERVERS', { token_ttl: '1h' });
    expect(r.h.lastOperation).toBe('update');
    expect((await r.read('role/webservers'))?.data).toMatchObject({ token_ttl: 3600, bound_region: ['us-east-1', 'eu-west-1'] });
    await r.h.request('delete', 'role/WebServers');
    expect(await r.read('role/webservers')).toBeNull();
  });

  it('defaults auth_type to iam and refuses to change it', async () => {
    const r = await backendRig(fixture);
    const alice = fixture.emulator.createUser(r.accountId, { userName: 'alice' });
    await r.write('role/dev', { bound_iam_principal_arn: alice.arn });
    expect((await r.read('role/dev'))?.data?.['auth_type']).toBe('iam');
    await expectBadRequest(r.write('role/dev', { auth_type: 'vm' }), 'auth_type');
  });

  it('requires at least one constraint (rule 1)', async () => {
    const r = await backendRig(fixture);
    const err = await expectFailure(r.write('role/empty', { auth_type: 'vm', token_policies: 'x' }), 400);
    expect(err.message).toMatch(/at least one constraint must be set/);
    await expectBadRequest(r.write('role/empty2', { token_policies: 'x' }), 'bound_iam_principal_arn');
  });

  it('refuses constraints the auth type and inference do not check (rule 2)', async () => {
    const r = await backendRig(fixture);
    const arn = `arn:aws:iam::${r.accountId}:role/*`;
    await expectBadRequest(r.write('role/a', { bound_iam_principal_arn: arn, bound_image_id: 'ami-1' }), 'bound_image_id');
    await expectBadRequest(r.write('role/b', { auth_type: 'vm', bound_iam_principal_arn: arn }), 'bound_iam_principal_arn');
    await expectBadRequest(r.write('role/c', { bound_iam_principal_arn: arn, role_tag: 'x' }), 'role_tag');
    await expectBadRequest(r.write('role/d', { bound_iam_principal_arn: arn, allow_instance_migration: true }), 'allow_instance_migration');
    await expectBadRequest(r.write('role/e', { bound_iam_principal_arn: arn, disallow_reauthentication: true }), 'disallow_reauthentication');
    await expectBadRequest(r.write('role/f', { auth_type: 'vm', bound_region: 'x', inferred_entity_type: 'vm_instance', inferred_cloud1_region: 'x' }), 'inferred_entity_type');
    await expectBadRequest(r.write('role/g', { bound_iam_principal_arn: arn, inferred_entity_type: 'vm_instance' }), 'inferred_cloud1_region');
    await expectBadRequest(r.write('role/h', { bound_iam_principal_arn: arn, inferred_entity_type: 'ec2' }), 'inferred_entity_type');
    await expectBadRequest(r.write('role/i', { auth_type: 'vm', bound_region: 'x', allow_instance_migration: true, disallow_reauthentication: true }), 'allow_instance_migration');
    // With inference, the instance constraints apply to an iam role.
    await r.write('role/j', { bound_iam_principal_arn: arn, inferred_entity_type: 'vm_instance', inferred_cloud1_region: 'us-east-1', bound_image_id: 'ami-1' });
  });

  it('checks token parameters', async () => {
    const r = await backendRig(fixture);
    await expectBadRequest(r.write('role/a', { auth_type: 'vm', bound_region: 'x', token_ttl: '2h', token_max_ttl: '1h' }), 'token_ttl');
    await expectBadRequest(r.write('role/a', { auth_type: 'vm', bound_region: 'x', token_bound_cidrs: '10.0.0.0/33' }), 'token_bound_cidrs');
    await expectBadRequest(r.write('role/a', { auth_type: 'vm', bound_region: 'x', token_num_uses: -1 }), 'token_num_uses');
    await expectBadRequest(r.write('role/a', { auth_type: 'vm', bound_region: 'x', token_type: 'weird' }), 'token_type');
    await expectBadRequest(r.write('role/a', { auth_type: 'vm', bound_region: 'x', bound_iam_role_arn: 'arn:aws:iam::1:role/*/x' }), 'bound_iam_role_arn');
  });

  it('resolves bound ARNs when resolution is turned on, refuses when it cannot, and refuses turning it off (rules 4 and 5)', async () => {
    const r = await backendRig(fixture);
    const alice = fixture.emulator.createUser(r.accountId, { userName: 'alice', accessKeys: 1 });
    const ghost = `arn:aws:iam::${r.accountId}:user/ghost`;
    await expectBadRequest(r.write('role/dev', { bound_iam_principal_arn: ghost }), 'bound_iam_principal_arn');
    await r.write('role/dev', { bound_iam_principal_arn: ghost, resolve_cloud1_unique_ids: false });
    await expectBadRequest(r.write('role/dev', { resolve_cloud1_unique_ids: true }), 'bound_iam_principal_arn');
    await r.write('role/dev', { bound_iam_principal_arn: alice.arn, resolve_cloud1_unique_ids: true });
    await expectBadRequest(r.write('role/dev', { resolve_cloud1_unique_ids: false }), 'resolve_cloud1_unique_ids');
    // An update with the same ARN re-resolves it; once the user is gone, the update fails.
    const iam = new IAMClient({ endpoint: fixture.endpoints.api, region: 'us-east-1', credentials: r.root });
    await iam.send(new DeleteAccessKeyCommand({ UserName: 'alice', AccessKeyId: alice.accessKeys[0]!.accessKeyId }));
    await iam.send(new DeleteUserCommand({ UserName: 'alice' }));
    iam.destroy();
    await expectBadRequest(r.write('role/dev', { token_ttl: '1h' }), 'bound_iam_principal_arn');
  });
});
