import { DeleteAccessKeyCommand, DeleteUserCommand, IAMClient } from '@aws-sdk/client-iam';
import { expectFailure } from '@strongroom/core';
import { backendRig, EmulatorFixture, iamLogin, type BackendRig } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

async function refused(r: BackendRig, data: Record<string, unknown>, status: number, text: string | RegExp): Promise<void> {
  const err = await expectFailure(r.h.request('write', 'login', data), status);
  expect(err.message).toMatch(text);
}

async function setup(clientExtra: Record<string, unknown> = {}) {
  const r = await backendRig(fixture, clientExtra);
  const alice = fixture.emulator.createUser(r.accountId, { userName: 'alice', path: '/team/', accessKeys: 1 });
  const key = alice.accessKeys[0];
  if (!key) throw new Error('no key');
  return { r, alice, key };
}

describe('iam login', () => {
  it('logs a user in from a signed GetCallerIdentity, bound by its resolved unique ID', async () => {
    const { r, alice, key } = await setup();
    await r.write('role/dev', { bound_iam_principal_arn: alice.arn, token_policies: ['dev'], token_ttl: 600 });
    const login = await r.login({ role: 'dev', ...(await iamLogin(key)) });
    expect(login).toMatchObject({ policies: ['dev'], ttl: 600, displayName: 'alice' });
    expect(login.metadata).toEqual({ account_id: r.accountId, auth_type: 'iam', role: 'dev', role_id: expect.any(String) });
    expect(login.internal).toMatchObject({ client_user_id: alice.userId, canonical_arn: `arn:aws:iam::${r.accountId}:user/alice` });
  });

  it('finds the role by the principal\'s friendly name when none is given', async () => {
    const { r, alice, key } = await setup();
    await r.write('role/alice', { bound_iam_principal_arn: alice.arn });
    expect((await r.login(await iamLogin(key))).metadata?.['role']).toBe('alice');
    await r.h.request('delete', 'role/alice');
    await refused(r, await iamLogin(key), 403, /no role is named after the principal "alice"/);
  });

  it('refuses a principal outside bound_iam_principal_arn, and a user recreated under the same name', async () => {
    const { r, alice, key } = await setup();
    const bob = fixture.emulator.createUser(r.accountId, { userName: 'bob', accessKeys: 1 });
    await r.write('role/dev', { bound_iam_principal_arn: alice.arn });
    await refused(r, { role: 'dev', ...(await iamLogin(bob.accessKeys[0]!)) }, 403, /does not match "bound_iam_principal_arn" of role "dev"/);
    // Deleting alice and making her again gives a new unique ID: the role's resolved one no longer matches.
    const iam = new IAMClient({ endpoint: fixture.endpoints.api, region: 'us-east-1', credentials: r.root });
    await iam.send(new DeleteAccessKeyCommand({ UserName: 'alice', AccessKeyId: key.accessKeyId }));
    await iam.send(new DeleteUserCommand({ UserName: 'alice' }));
    iam.destroy();
    const again = fixture.emulator.createUser(r.accountId, { userName: 'alice', path: '/team/', accessKeys: 1 });
    const newKey = again.accessKeys[0]!;
    await refused(r, { role: 'dev', ...(await iamLogin(newKey)) }, 403, /does not match/);
    // Writing the role again with the same ARN re-resolves it (rule 5).
    await r.write('role/dev', { bound_iam_principal_arn: alice.arn });
    await r.login({ role: 'dev', ...(await iamLogin(newKey)) });
  });

  it('matches wildcard bounds against the canonical and the full ARN', async () => {
    const { r, key } = await setup();
    await r.write('role/team', { bound_iam_principal_arn: `arn:aws:iam::${r.accountId}:user/team/*` });
    await r.login({ role: 'team', ...(await iamLogin(key)) });
    await r.write('role/acct', { bound_iam_principal_arn: `arn:aws:iam::${r.accountId}:*` });
    await r.login({ role: 'acct', ...(await iamLogin(key)) });
    await r.write('role/other', { bound_iam_principal_arn: 'arn:aws:iam::999999999999:*' });
    await refused(r, { role: 'other', ...(await iamLogin(key)) }, 403, /does not match/);
  });

  it('without unique-ID resolution, compares the canonical ARN, which has no path', async () => {
    const { r, key } = await setup();
    const err = await expectFailure(r.write('role/dev', {
      bound_iam_principal_arn: `arn:aws:iam::${r.accountId}:user/team/alice`, resolve_cloud1_unique_ids: false,
    }), 400);
    expect(err.message).toMatch(/"bound_iam_principal_arn".*has a path/);
    await r.write('role/dev', { bound_iam_principal_arn: `arn:aws:iam::${r.accountId}:user/alice`, resolve_cloud1_unique_ids: false });
    await r.login({ role: 'dev', ...(await iamLogin(key)) });
  });

  it('refuses requests that are not exactly a signed GetCallerIdentity', async () => {
    const { r, alice, key } = await setup();
    await r.write('role/dev', { bound_iam_principal_arn: alice.arn });
    const good = { role: 'dev', ...(await iamLogin(key)) };
    await refused(r, { ...good, iam_http_request_method: 'GET' }, 400, /"iam_http_request_method"/);
    await refused(r, { ...good, iam_request_url: Buffer.from('https://sts.amazonaws.com/?Action=GetCallerIdentity').toString('base64') }, 400, /"iam_request_url"/);
    const other = await iamLogin(key, { body: 'Action=GetSessionToken&Version=2011-06-15' });
    await refused(r, { role: 'dev', ...other }, 400, /the action must be GetCallerIdentity/);
    const extra = await iamLogin(key, { body: 'Action=GetCallerIdentity&Version=2011-06-15&DurationSeconds=1' });
    await refused(r, { role: 'dev', ...extra }, 400, /only Action and Version/);
    const odd = await iamLogin(key, { headers: { 'x-amz-target': 'x' } });
    await refused(r, { role: 'dev', ...odd }, 400, /header "x-amz-target" is not allowed/);
    await r.write('config/client', { allowed_sts_header_values: 'X-Amz-Target' });
    await r.login({ role: 'dev', ...odd });
  });

  it('takes the headers as a JSON object too, and STS refuses a tampered signature', async () => {
    const { r, alice, key } = await setup();
    await r.write('role/dev', { bound_iam_principal_arn: alice.arn });
    const data = await iamLogin(key);
    const headers = JSON.parse(Buffer.from(data['iam_request_headers'] as string, 'base64').toString()) as Record<string, string[]>;
    await r.login({ role: 'dev', ...data, iam_request_headers: headers });
    const tampered = { ...headers, 'content-type': ['application/x-www-form-urlencoded'] };
    await refused(r, { role: 'dev', ...data, iam_request_headers: tampered }, 400, /received error code 403 from STS: SignatureDoesNotMatch/);
  });

  it('requires the configured server ID header, signed', async () => {
    const { r, alice, key } = await setup({ iam_server_id_header_value: 'vault.example.com' });
    await r.write('role/dev', { bound_iam_principal_arn: alice.arn });
    await refused(r, { role: 'dev', ...(await iamLogin(key)) }, 403, /lacks the X-Service-Cloud1-IAM-Server-ID header/);
    await refused(r, { role: 'dev', ...(await iamLogin(key, { serverId: 'other.example.com' })) }, 403, /does not name this server/);
    const unsigned = await iamLogin(key);
    const headers = JSON.parse(Buffer.from(unsigned['iam_request_headers'] as string, 'base64').toString()) as Record<string, string[]>;
    await refused(r, { role: 'dev', ...unsigned, iam_request_headers: { ...headers, 'X-Service-Cloud1-IAM-Server-ID': ['vault.example.com'] } }, 403, /not among the signed headers/);
    await r.login({ role: 'dev', ...(await iamLogin(key, { serverId: 'vault.example.com' })) });
  });

  it('sends the request to the STS region of the client\'s signature when use_sts_region_from_client is on', async () => {
    const { r, alice, key } = await setup({ use_sts_region_from_client: true, sts_endpoint: 'http://127.0.0.1:9' });
    await r.write('role/dev', { bound_iam_principal_arn: alice.arn });
    await r.login({ role: 'dev', ...(await iamLogin(key, { region: 'eu-west-1', host: 'sts.eu-west-1.amazonaws.com' })) });
  });

  it('infers the instance of an instance-role session, checks it runs and meets the role', async () => {
    const { r } = await setup();
    const web = fixture.emulator.createRole(r.accountId, { roleName: 'web', instanceProfile: true });
    const instance = fixture.instance({ accountId: r.accountId, imageId: 'ami-0abc', instanceProfileName: 'web' });
    await r.write('role/web', {
      bound_iam_principal_arn: web.arn, inferred_entity_type: 'vm_instance', inferred_cloud1_region: 'us-east-1', bound_image_id: 'ami-0abc',
    });
    await r.write('config/identity', { iam_metadata: 'default,inferred_entity_id,client_arn', iam_alias: 'full_arn' });
    const credentials = await fixture.instanceCredentials(instance.instanceId);
    const login = await r.login({ role: 'web', ...(await iamLogin(credentials)) });
    expect(login.metadata).toMatchObject({ inferred_entity_id: instance.instanceId, client_arn: `arn:aws:sts::${r.accountId}:assumed-role/web/${instance.instanceId}` });
    expect(login.aliasName).toBe(`arn:aws:sts::${r.accountId}:assumed-role/web/${instance.instanceId}`);
    await r.write('role/web', { bound_image_id: 'ami-0fff' });
    await refused(r, { role: 'web', ...(await iamLogin(credentials)) }, 403, /does not satisfy "bound_image_id"/);
    await r.write('role/web', { bound_image_id: 'ami-0abc' });
    fixture.emulator.setInstanceState(instance.instanceId, 'stopped');
    await refused(r, { role: 'web', ...(await iamLogin(credentials)) }, 403, /is not running/);
  });

  it('refuses a vm role for an iam login and the reverse', async () => {
    const { r, key } = await setup();
    await r.write('role/box', { auth_type: 'vm', bound_region: 'us-east-1' });
    await refused(r, { role: 'box', ...(await iamLogin(key)) }, 403, /has auth_type vm, not iam/);
  });
});
