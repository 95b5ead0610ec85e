import {
  AttachGroupPolicyCommand, CreateAccessKeyCommand, DeleteAccessKeyCommand, DeleteUserCommand, GetUserCommand, IAMClient,
  ListAccessKeysCommand, ListAttachedUserPoliciesCommand, ListGroupsForUserCommand, ListUserPoliciesCommand, ListUsersCommand,
  PutGroupPolicyCommand, RemoveUserFromGroupCommand,
} from '@aws-sdk/client-iam';
import { expectBadRequest, expectFailure, getJson, putJson } from '@strongroom/core';
import { WAL_ROLLBACK_AFTER_MS } from './iam-user';
import { mergePolicies } from './sts-credentials';
import { backendRig, caller, credentialsOf, EmulatorFixture, type Account, type BackendRig } from './test-support/cloud1-rig';

let fixture: EmulatorFixture;
beforeAll(async () => {
  fixture = await new EmulatorFixture().start();
});
afterAll(() => fixture.stop());

const DOC = JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 's3:GetObject', Resource: '*' }] });
const READ_ONLY = 'arn:aws:iam::aws:policy/ReadOnlyAccess';
const BOUNDARY = 'arn:aws:iam::aws:policy/PowerUserAccess';

async function usersOf(r: BackendRig): Promise<string[]> {
  const iam = fixture.iam(r.account.root);
  try {
    return ((await iam.send(new ListUsersCommand({}))).Users ?? []).map((u) => u.UserName ?? '');
  } finally {
    iam.destroy();
  }
}

/**
 * Runs `race` (as the account root) just before the engine's first IAM command matching
 * `when`, so that command meets a change made meanwhile; every command still reaches the emulator.
 */
function raceBefore(when: (command: unknown) => boolean, race: (iam: IAMClient) => Promise<unknown>, account: Account) {
  const send = IAMClient.prototype.send;
  let raced = false;
  return jest.spyOn(IAMClient.prototype, 'send').mockImplementation(async function (this: IAMClient, ...args: unknown[]) {
    if (!raced && when(args[0])) {
      raced = true;
      const iam = fixture.iam(account.root);
      try {
        await race(iam);
      } finally {
        iam.destroy();
      }
    }
    return (send as (...a: unknown[]) => Promise<unknown>).apply(this, args);
  } as never);
}

describe('iam_user credentials', () => {
  afterEach(() => jest.restoreAllMocks());

  it('make a user with its path, tags, boundary, groups and policies, whose key works until the lease is revoked', async () => {
    const r = await backendRig(fixture);
    await fixture.createGroup(r.account, 'devs');
    await r.write('roles/web', {
      credential_type: 'iam_user', policy_arns: READ_ONLY, policy_document: DOC, iam_groups: 'devs', iam_tags: 'team=web,env=test',
      user_path: '/app/', permissions_boundary_arn: BOUNDARY,
    });
    const resp = await r.read('creds/web', {}, caller('token-alice'));
    expect(resp?.data).toEqual({
      access_key: expect.stringMatching(/^AKIA/), secret_key: expect.any(String), security_token: null, session_token: null,
    });
    expect(resp?.secret).toMatchObject({ type: 'access_keys', ttl: 0, renewable: true });
    expect(JSON.stringify(resp?.secret?.internal)).not.toContain(String(resp?.data?.['secret_key']));
    const userName = String(resp?.secret?.internal['username']);
    expect(userName).toMatch(/^vault-token-alice-web-\d+-[A-Za-z0-9]{20}$/);

    const creds = credentialsOf(resp?.data);
    expect(await fixture.whoAmI(creds)).toBe(`arn:aws:iam::${r.account.accountId}:user/app/${userName}`);
    const iam = fixture.iam(r.account.root);
    try {
      const user = (await iam.send(new GetUserCommand({ UserName: userName }))).User;
      expect(user?.Path).toBe('/app/');
      expect(user?.PermissionsBoundary?.PermissionsBoundaryArn).toBe(BOUNDARY);
      expect(user?.Tags).toEqual(expect.arrayContaining([{ Key: 'team', Value: 'web' }, { Key: 'env', Value: 'test' }]));
      expect((await iam.send(new ListGroupsForUserCommand({ UserName: userName }))).Groups?.map((g) => g.GroupName)).toEqual(['devs']);
      expect((await iam.send(new ListAttachedUserPoliciesCommand({ UserName: userName }))).AttachedPolicies?.map((p) => p.PolicyArn)).toEqual([READ_ONLY]);
      expect((await iam.send(new ListUserPoliciesCommand({ UserName: userName }))).PolicyNames).toEqual(['web']);
    } finally {
      iam.destroy();
    }

    await r.revoke(resp);
    expect(await fixture.userExists(r.account, userName)).toBe(false);
    expect(await fixture.refused(creds)).toBe('InvalidClientTokenId');
    // Revoking again (core retries after a failure it could not see succeed) is harmless.
    await r.revoke(resp);
  });

  it('leases follow config/lease, renewals stop at lease_max', async () => {
    const r = await backendRig(fixture);
    await r.write('config/lease', { lease: '1h', lease_max: '2h' });
    await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const resp = await r.read('creds/web');
    expect(resp?.secret).toMatchObject({ ttl: 3600, renewable: true });
    const renew = r.backend.secretTypes['access_keys']?.renew;
    if (!renew) throw new Error('access_keys leases renew');
    const req = r.internalRequest();
    await r.clock.advance(90 * 60_000);
    expect(await renew(req, resp?.secret?.internal ?? {}, 0)).toEqual({ ttl: 1800 });
    expect(await renew(req, resp?.secret?.internal ?? {}, 600)).toEqual({ ttl: 600 });
    await r.clock.advance(30 * 60_000);
    await expectFailure(renew(req, resp?.secret?.internal ?? {}, 0), 400);
    await r.revoke(resp);
  });

  it('undo a creation that fails half-way, and answer the provider\'s reason', async () => {
    const r = await backendRig(fixture);
    await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY, iam_groups: 'no-such-group' });
    const err = await expectFailure(r.read('creds/web'), 400);
    expect(err.message).toMatch(/creating IAM user vault-.* failed: NoSuchEntity/);
    expect(await usersOf(r)).toEqual(['strongroom']);
    expect(await r.h.storage.list('wal/user/')).toEqual([]);
    expect(r.logger.lines.join('\n')).not.toContain(r.account.engineUser.credentials.secretAccessKey);
  });

  it('roll back, from the periodic task, a creation that died half-way', async () => {
    const r = await backendRig(fixture);
    fixture.emulator.createUser(r.account.accountId, { userName: 'half-made', accessKeys: 1 });
    fixture.emulator.createUser(r.account.accountId, { userName: 'in-progress' });
    await putJson(r.h.storage, 'wal/user/a', { userName: 'half-made', createdAt: r.clock.now() - WAL_ROLLBACK_AFTER_MS - 1, userCreated: true });
    await putJson(r.h.storage, 'wal/user/b', { userName: 'in-progress', createdAt: r.clock.now(), userCreated: true });
    await r.periodic();
    expect((await usersOf(r)).sort()).toEqual(['in-progress', 'strongroom']);
    expect(await r.h.storage.list('wal/user/')).toEqual(['b']);
  });

  it('record CreateUser\'s success in the write-ahead entry, so the periodic task undoes what an undo could not', async () => {
    const r = await backendRig(fixture);
    await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY, iam_groups: 'no-such-group' });
    let userName = '';
    // The immediate undo fails: a key appears before its DeleteUser (DeleteConflict).
    raceBefore((c) => {
      if (c instanceof DeleteUserCommand) userName = String(c.input.UserName);
      return c instanceof DeleteUserCommand;
    }, (iam) => iam.send(new CreateAccessKeyCommand({ UserName: userName })), r.account);
    await expectFailure(r.read('creds/web'), 400);
    jest.restoreAllMocks();
    expect(await fixture.userExists(r.account, userName)).toBe(true);
    const [entry] = await r.h.storage.list('wal/user/');
    expect(await getJson(r.h.storage, `wal/user/${entry}`)).toMatchObject({ userName, userCreated: true });
    await r.clock.advance(WAL_ROLLBACK_AFTER_MS + 1);
    await r.periodic();
    expect(await fixture.userExists(r.account, userName)).toBe(false);
    expect(await r.h.storage.list('wal/user/')).toEqual([]);
  });

  it('never roll back, from the periodic task, a user whose CreateUser did not succeed', async () => {
    const r = await backendRig(fixture);
    const theirs = fixture.emulator.createUser(r.account.accountId, { userName: 'theirs', accessKeys: 1 });
    const old = r.clock.now() - WAL_ROLLBACK_AFTER_MS - 1;
    // CreateUser failed (or died in flight): the entry was never marked; a release before the mark
    // wrote the same shape.
    await putJson(r.h.storage, 'wal/user/a', { userName: 'theirs', createdAt: old });
    await putJson(r.h.storage, 'wal/user/b', { userName: 'theirs', createdAt: old, userCreated: false });
    await r.periodic();
    expect((await usersOf(r)).sort()).toEqual(['strongroom', 'theirs']);
    expect(await fixture.whoAmI(theirs.accessKeys[0] as never)).toMatch(/:user\/theirs$/);
    expect(await r.h.storage.list('wal/user/')).toEqual([]);
  });

  it('delete nothing when CreateUser fails because the user already exists, and say which user', async () => {
    const r = await backendRig(fixture, { username_template: '{{.PolicyName}}' });
    await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const first = await r.read('creds/web');
    expect(first?.secret?.internal['username']).toBe('web');
    const err = await expectFailure(r.read('creds/web'), 400);
    expect(err.message).toMatch(/IAM user web: a user of that name already exists and was left alone/);
    // The first lease's user and key are untouched, and no write-ahead entry is left to undo them.
    expect(await fixture.whoAmI(credentialsOf(first?.data))).toMatch(/:user\/web$/);
    expect(await r.h.storage.list('wal/user/')).toEqual([]);
    await r.clock.advance(WAL_ROLLBACK_AFTER_MS + 1);
    await r.periodic();
    expect(await fixture.whoAmI(credentialsOf(first?.data))).toMatch(/:user\/web$/);
    await r.revoke(first);
    expect(await fixture.userExists(r.account, 'web')).toBe(false);
  });

  it('leave alone a user of the same name the engine never made', async () => {
    const r = await backendRig(fixture, { username_template: 'ops-{{.PolicyName}}' });
    const theirs = fixture.emulator.createUser(r.account.accountId, { userName: 'ops-web', accessKeys: 2 });
    await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const err = await expectFailure(r.read('creds/web'), 400);
    expect(err.message).toMatch(/IAM user ops-web: a user of that name already exists/);
    for (const key of theirs.accessKeys) expect(await fixture.whoAmI(key)).toMatch(/:user\/ops-web$/);
    expect(await r.h.storage.list('wal/user/')).toEqual([]);
  });

  describe('revocation, when something of the user goes meanwhile,', () => {
    it('still removes the other keys and the user when a key disappears mid-loop', async () => {
      const r = await backendRig(fixture);
      await fixture.createGroup(r.account, 'devs');
      await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY, policy_document: DOC, iam_groups: 'devs' });
      const resp = await r.read('creds/web');
      const userName = String(resp?.secret?.internal['username']);
      const extra = fixture.emulator.createAccessKey(r.account.accountId, userName);
      const spy = raceBefore(
        (c) => c instanceof DeleteAccessKeyCommand,
        (iam) => iam.send(new DeleteAccessKeyCommand({ UserName: userName, AccessKeyId: resp?.data?.['access_key'] as string })),
        r.account,
      );
      await r.revoke(resp);
      spy.mockRestore();
      expect(await fixture.userExists(r.account, userName)).toBe(false);
      expect(await fixture.refused(extra)).toBe('InvalidClientTokenId');
    });

    it('still removes the other memberships and the user when a membership disappears', async () => {
      const r = await backendRig(fixture);
      await fixture.createGroup(r.account, 'devs');
      await fixture.createGroup(r.account, 'ops');
      await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY, iam_groups: 'devs,ops' });
      const resp = await r.read('creds/web');
      const userName = String(resp?.secret?.internal['username']);
      const spy = raceBefore(
        (c) => c instanceof RemoveUserFromGroupCommand,
        (iam) => iam.send(new RemoveUserFromGroupCommand({ UserName: userName, GroupName: 'devs' })),
        r.account,
      );
      await r.revoke(resp);
      spy.mockRestore();
      expect(await fixture.userExists(r.account, userName)).toBe(false);
      expect(await fixture.refused(credentialsOf(resp?.data))).toBe('InvalidClientTokenId');
    });

    it('counts the user itself gone as done', async () => {
      const r = await backendRig(fixture);
      await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY });
      const resp = await r.read('creds/web');
      const userName = String(resp?.secret?.internal['username']);
      // Someone else removes the whole user between the engine's listing and its DeleteUser.
      const spy = raceBefore((c) => c instanceof DeleteUserCommand, async (iam) => {
        const keys = (await iam.send(new ListAccessKeysCommand({ UserName: userName }))).AccessKeyMetadata ?? [];
        for (const k of keys) await iam.send(new DeleteAccessKeyCommand({ UserName: userName, AccessKeyId: k.AccessKeyId }));
        await iam.send(new DeleteUserCommand({ UserName: userName }));
      }, r.account);
      await r.revoke(resp);
      spy.mockRestore();
      expect(await fixture.userExists(r.account, userName)).toBe(false);
    });

    it('fails on any other provider error (core retries), and succeeds once retried', async () => {
      const r = await backendRig(fixture);
      await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY });
      const resp = await r.read('creds/web');
      const userName = String(resp?.secret?.internal['username']);
      // A key made after the engine listed them: DeleteUser answers DeleteConflict.
      const spy = raceBefore(
        (c) => c instanceof DeleteUserCommand,
        (iam) => iam.send(new CreateAccessKeyCommand({ UserName: userName })),
        r.account,
      );
      const err = await expectFailure(r.revoke(resp), 400);
      expect(err.message).toMatch(/DeleteConflict/);
      spy.mockRestore();
      expect(await fixture.userExists(r.account, userName)).toBe(true);
      await r.revoke(resp);
      expect(await fixture.userExists(r.account, userName)).toBe(false);
    });
  });

  it('take no STS request fields', async () => {
    const r = await backendRig(fixture);
    await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY });
    await expectBadRequest(r.read('creds/web', { ttl: '1h' }), 'ttl');
    await expectBadRequest(r.read('creds/web', { role_arn: 'arn:aws:iam::123456789012:role/x' }), 'role_arn');
    await expectBadRequest(r.read('creds/web', { mfa_code: '123456' }), 'mfa_code');
  });

  it('are a 500 naming the limit when the template makes a name over 64 characters', async () => {
    const r = await backendRig(fixture, { username_template: '{{ printf "%s-%s" .PolicyName (random 70) }}' });
    await r.write('roles/web', { credential_type: 'iam_user', policy_arns: READ_ONLY });
    const err = await expectFailure(r.read('creds/web'), 500);
    expect(err.message).toMatch(/IAM username limit of 64 characters/);
    expect(await usersOf(r)).toEqual(['strongroom']);
  });
});

describe('assumed_role credentials', () => {
  it('assume the role with the requested TTL and a generated session name', async () => {
    const r = await backendRig(fixture);
    const role = fixture.emulator.createRole(r.account.accountId, { roleName: 'deploy' });
    await r.write('roles/deploy', { credential_type: 'assumed_role', role_arns: role.arn });
    const resp = await r.write('sts/deploy', { ttl: '15m' }, caller('token'));
    expect(resp?.secret).toMatchObject({ type: 'sts', ttl: 900, renewable: false });
    expect(resp?.data).toMatchObject({ ttl: 900, arn: expect.stringMatching(new RegExp(`:assumed-role/deploy/vault-token-deploy-\\d+-`)) });
    expect(resp?.data?.['security_token']).toBe(resp?.data?.['session_token']);
    expect(await fixture.whoAmI(credentialsOf(resp?.data))).toBe(resp?.data?.['arn']);
    // The same role through creds/ (current roles answer on both paths).
    expect((await r.read('creds/deploy'))?.secret).toMatchObject({ type: 'sts', ttl: 3600 });
  });

  it('pick the role ARN: the only one, or the one requested among several', async () => {
    const r = await backendRig(fixture);
    const a = fixture.emulator.createRole(r.account.accountId, { roleName: 'a' });
    const b = fixture.emulator.createRole(r.account.accountId, { roleName: 'b' });
    await r.write('roles/two', { credential_type: 'assumed_role', role_arns: [a.arn, b.arn] });
    await expectBadRequest(r.write('sts/two'), 'role_arn');
    await expectBadRequest(r.write('sts/two', { role_arn: `arn:aws:iam::${r.account.accountId}:role/c` }), 'role_arn');
    const resp = await r.write('sts/two', { role_arn: b.arn, role_session_name: 's'.repeat(80) });
    expect(resp?.data?.['arn']).toBe(`arn:aws:sts::${r.account.accountId}:assumed-role/b/${'s'.repeat(64)}`);
  });

  it('use the role\'s default_sts_ttl and cap at its max_sts_ttl', async () => {
    const r = await backendRig(fixture);
    const role = fixture.emulator.createRole(r.account.accountId, { roleName: 'deploy' });
    await r.write('roles/deploy', { credential_type: 'assumed_role', role_arns: role.arn, default_sts_ttl: '20m', max_sts_ttl: '30m' });
    expect((await r.write('sts/deploy'))?.secret?.ttl).toBe(1200);
    const capped = await r.write('sts/deploy', { ttl: '2h' });
    expect(capped?.secret?.ttl).toBe(1800);
    expect(capped?.warnings?.[0]).toMatch(/max_sts_ttl/);
  });

  it('carry the role\'s and its groups\' policies as session policies', async () => {
    const r = await backendRig(fixture);
    const role = fixture.emulator.createRole(r.account.accountId, { roleName: 'deploy' });
    await fixture.createGroup(r.account, 'ops');
    const iam = fixture.iam(r.account.root);
    try {
      await iam.send(new PutGroupPolicyCommand({ GroupName: 'ops', PolicyName: 'ops-inline', PolicyDocument: DOC }));
      await iam.send(new AttachGroupPolicyCommand({ GroupName: 'ops', PolicyArn: READ_ONLY }));
    } finally {
      iam.destroy();
    }
    await r.write('roles/deploy', { credential_type: 'assumed_role', role_arns: role.arn, policy_document: DOC, iam_groups: 'ops' });
    const resp = await r.write('sts/deploy');
    expect(await fixture.whoAmI(credentialsOf(resp?.data))).toMatch(/assumed-role\/deploy\//);
  });

  it('answer the provider\'s refusal (a role that does not trust the engine)', async () => {
    const r = await backendRig(fixture);
    const role = fixture.emulator.createRole(r.account.accountId, {
      roleName: 'locked', trustPolicy: { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { AWS: 'arn:aws:iam::999999999999:root' }, Action: 'sts:AssumeRole' }] },
    });
    await r.write('roles/locked', { credential_type: 'assumed_role', role_arns: role.arn });
    const err = await expectFailure(r.write('sts/locked'), 400);
    expect(err.message).toMatch(/assuming role .* failed: AccessDenied/);
  });
});

describe('federation_token credentials', () => {
  it('get a federation token named by the template within 32 characters', async () => {
    const r = await backendRig(fixture);
    await r.write('roles/fed', { credential_type: 'federation_token', policy_document: DOC, policy_arns: READ_ONLY });
    const resp = await r.write('sts/fed', { ttl: 1800 });
    expect(resp?.secret).toMatchObject({ type: 'sts', ttl: 1800, renewable: false });
    const arn = String(resp?.data?.['arn']);
    expect(arn).toMatch(new RegExp(`^arn:aws:sts::${r.account.accountId}:federated-user/vault-\\d+-[A-Za-z0-9]{15}$`));
    expect(arn.split('/')[1]).toHaveLength(32);
    expect(await fixture.whoAmI(credentialsOf(resp?.data))).toBe(arn);
    await expectBadRequest(r.write('sts/fed', { role_arn: 'arn:aws:iam::123456789012:role/x' }), 'role_arn');
    await expectBadRequest(r.write('sts/fed', { role_session_name: 'x' }), 'role_session_name');
  });

  it('are a 500 naming the limit when the template makes an STS name over 32 characters', async () => {
    const r = await backendRig(fixture, { username_template: '{{ if eq .Type "STS" }}{{ random 33 }}{{ else }}{{ random 10 }}{{ end }}' });
    await r.write('roles/fed', { credential_type: 'federation_token', policy_document: DOC });
    const err = await expectFailure(r.write('sts/fed'), 500);
    expect(err.message).toMatch(/STS username limit of 32 characters/);
  });
});

describe('session_token credentials', () => {
  it('get a session token of the engine\'s own user', async () => {
    const r = await backendRig(fixture);
    await r.write('roles/session', { credential_type: 'session_token' });
    const resp = await r.read('creds/session', { ttl: '1h' });
    expect(resp?.secret).toMatchObject({ type: 'sts', ttl: 3600, renewable: false });
    expect(resp?.data).not.toHaveProperty('arn');
    expect(await fixture.whoAmI(credentialsOf(resp?.data))).toBe(`arn:aws:iam::${r.account.accountId}:user/strongroom`);
  });

  it('pass the MFA code when the role names the device, and need it then', async () => {
    const r = await backendRig(fixture);
    const device = fixture.emulator.createMfaDevice(r.account.accountId, { userName: 'strongroom', totpSecret: 'JBSWY3DPEHPK3PXP' });
    await r.write('roles/mfa', { credential_type: 'session_token', mfa_serial_number: device.serialNumber });
    await expectBadRequest(r.read('creds/mfa'), 'mfa_code');
    const wrongCode = fixture.emulator.mfaCode(device.serialNumber) === '000000' ? '111111' : '000000';
    const wrong = await expectFailure(r.read('creds/mfa', { mfa_code: wrongCode }), 400);
    expect(wrong.message).toMatch(/AccessDenied/);
    const resp = await r.read('creds/mfa', { mfa_code: fixture.emulator.mfaCode(device.serialNumber) });
    expect(await fixture.whoAmI(credentialsOf(resp?.data))).toMatch(/:user\/strongroom$/);
    await r.write('roles/plain', { credential_type: 'session_token' });
    await expectBadRequest(r.read('creds/plain', { mfa_code: '123456' }), 'mfa_code');
  });
});

describe('credential requests', () => {
  it('need an existing role', async () => {
    const r = await backendRig(fixture);
    await expectBadRequest(r.read('creds/none'), 'name');
    await expectBadRequest(r.write('sts/none'), 'name');
  });

  it('of legacy roles give iam_user through creds/ and STS credentials through sts/ only', async () => {
    const r = await backendRig(fixture);
    const role = fixture.emulator.createRole(r.account.accountId, { roleName: 'deploy' });
    await r.write('roles/doc', { policy: DOC });
    await r.write('roles/arn', { arn: role.arn });
    await r.write('roles/pol', { arn: READ_ONLY });
    const user = await r.read('creds/doc');
    expect(user?.secret?.type).toBe('access_keys');
    const fed = await r.write('sts/doc');
    expect(fed?.data?.['arn']).toMatch(/:federated-user\//);
    expect((await r.write('sts/arn'))?.data?.['arn']).toMatch(/:assumed-role\/deploy\//);
    expect((await expectFailure(r.read('creds/arn'), 400)).message).toMatch(/request sts\/arn instead/);
    expect((await expectFailure(r.write('sts/pol'), 400)).message).toMatch(/request creds\/pol instead/);
    await r.revoke(user);
  });

  it('never log or echo the engine\'s secret key on failure', async () => {
    const r = await backendRig(fixture);
    await r.write('config/root', fixture.rootConfig({ accessKeyId: r.account.engineUser.credentials.accessKeyId, secretAccessKey: 'wrong-secret-value-0000' }));
    await r.write('roles/session', { credential_type: 'session_token' });
    const err = await expectFailure(r.read('creds/session'), 400);
    expect(err.message).toMatch(/SignatureDoesNotMatch/);
    expect(err.message).not.toContain('wrong-secret-value-0000');
    expect(r.logger.lines.join('\n')).not.toContain('wrong-secret-value-0000');
  });
});

describe('session policies', () => {
  it('join the role\'s document with its groups\' statements, and every ARN once', () => {
    const a = JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'a:*', Resource: '*' }] });
    const b = JSON.stringify({ Version: '2012-10-17', Statement: { Effect: 'Allow', Action: 'b:*', Resource: '*' } });
    expect(mergePolicies({ policyDocument: a, policyArns: ['x'] }, [])).toEqual({ policyDocument: a, policyArns: ['x'] });
    const merged = mergePolicies({ policyDocument: a, policyArns: ['x'] }, [{ policyDocument: b, policyArns: [] }, { policyDocument: '', policyArns: ['x', 'y'] }]);
    expect(JSON.parse(merged.policyDocument).Statement.map((s: { Action: string }) => s.Action)).toEqual(['a:*', 'b:*']);
    expect(merged.policyArns).toEqual(['x', 'y']);
    expect(mergePolicies({ policyDocument: '', policyArns: [] }, [{ policyDocument: b, policyArns: [] }]).policyDocument).toBe(b);
  });
});
