import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { GetUserCommand, ListUsersCommand } from '@aws-sdk/client-iam';
import { AssumeRoleCommand, GetCallerIdentityCommand, GetFederationTokenCommand, GetSessionTokenCommand } from '@aws-sdk/client-sts';
import { fromSts, Harness, sdkError } from './test-support/harness';

const trustAccount = (accountId: string, extra: object = {}) =>
  JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${accountId}:root` }, Action: 'sts:AssumeRole', ...extra }],
  });

describe('cloud1 STS', () => {
  const h = new Harness();

  beforeAll(async () => {
    await h.start();
  });
  afterAll(() => h.stop());
  beforeEach(() => h.emulator.reset());

  it('GetCallerIdentity names roots, users, assumed roles and federated users', async () => {
    const { accountId, root } = h.account('111122223333');
    const rootClients = h.clients(root);
    expect(await rootClients.sts.send(new GetCallerIdentityCommand({}))).toMatchObject({
      Account: accountId,
      Arn: `arn:aws:iam::${accountId}:root`,
      UserId: accountId,
    });

    const user = h.emulator.createUser(accountId, { userName: 'alice', path: '/people/', accessKeys: 1 });
    const alice = h.clients(user.accessKeys[0]!);
    expect(await alice.sts.send(new GetCallerIdentityCommand({}))).toMatchObject({
      Account: accountId,
      Arn: `arn:aws:iam::${accountId}:user/people/alice`,
      UserId: user.userId,
    });

    const role = h.emulator.createRole(accountId, { roleName: 'deployer' });
    const assumed = await alice.sts.send(new AssumeRoleCommand({ RoleArn: role.arn, RoleSessionName: 'build-42' }));
    expect(assumed.AssumedRoleUser).toEqual({
      AssumedRoleId: `${role.roleId}:build-42`,
      Arn: `arn:aws:sts::${accountId}:assumed-role/deployer/build-42`,
    });
    const asRole = h.clients(fromSts(assumed.Credentials));
    expect(await asRole.sts.send(new GetCallerIdentityCommand({}))).toMatchObject({
      Account: accountId,
      Arn: `arn:aws:sts::${accountId}:assumed-role/deployer/build-42`,
      UserId: `${role.roleId}:build-42`,
    });

    const federated = await alice.sts.send(new GetFederationTokenCommand({ Name: 'bob', Policy: '{"Version":"2012-10-17","Statement":[]}' }));
    expect(federated.FederatedUser).toEqual({ FederatedUserId: `${accountId}:bob`, Arn: `arn:aws:sts::${accountId}:federated-user/bob` });
    expect(federated.PackedPolicySize).toBeGreaterThan(0);
    const asBob = h.clients(fromSts(federated.Credentials));
    expect(await asBob.sts.send(new GetCallerIdentityCommand({}))).toMatchObject({
      Account: accountId,
      Arn: `arn:aws:sts::${accountId}:federated-user/bob`,
      UserId: `${accountId}:bob`,
    });
  });

  it('assumed-role credentials work on every service until they expire', async () => {
    const { accountId, root } = h.account();
    const role = h.emulator.createRole(accountId, { roleName: 'reader', maxSessionDuration: 7200 });
    const rootClients = h.clients(root);
    const assumed = await rootClients.sts.send(new AssumeRoleCommand({ RoleArn: role.arn, RoleSessionName: 's1', DurationSeconds: 900 }));
    const creds = fromSts(assumed.Credentials);
    expect(creds.accessKeyId).toMatch(/^ASIA[A-Z0-9]{16}$/);
    expect(assumed.Credentials?.Expiration?.getTime()).toBeGreaterThan(Date.now() + 800_000);

    const asRole = h.clients(creds);
    expect((await asRole.iam.send(new ListUsersCommand({}))).Users).toEqual([]);
    expect((await asRole.ec2.send(new DescribeInstancesCommand({}))).Reservations).toEqual([]);
    // Without a name, GetUser has no user to describe for a role session.
    expect(await sdkError(asRole.iam.send(new GetUserCommand({})))).toMatchObject({ name: 'ValidationError', status: 400 });

    // Temporary keys need their session token.
    const noToken = h.clients({ accessKeyId: creds.accessKeyId, secretAccessKey: creds.secretAccessKey });
    expect(await sdkError(noToken.sts.send(new GetCallerIdentityCommand({})))).toMatchObject({ name: 'InvalidClientTokenId', status: 403 });

    // Past expiry (by the emulator's clock; the SDK adopts it from the Date header and re-signs).
    h.emulator.advanceTime(901_000);
    expect(await sdkError(asRole.sts.send(new GetCallerIdentityCommand({})))).toMatchObject({
      name: 'ExpiredToken',
      status: 403,
      message: 'The security token included in the request is expired',
    });
    expect(await sdkError(asRole.ec2.send(new DescribeInstancesCommand({})))).toMatchObject({ name: 'RequestExpired' });

    const tooLong = await sdkError(rootClients.sts.send(new AssumeRoleCommand({ RoleArn: role.arn, RoleSessionName: 's2', DurationSeconds: 7201 })));
    expect(tooLong).toMatchObject({ name: 'ValidationError', status: 400 });
  });

  it('AssumeRole follows the trust policy', async () => {
    const a = h.account('111111111111');
    const b = h.account('222222222222');
    const onlyA = h.emulator.createRole(b.accountId, { roleName: 'for-a', trustPolicy: trustAccount(a.accountId) });
    const withExternalId = h.emulator.createRole(b.accountId, {
      roleName: 'external',
      trustPolicy: trustAccount(a.accountId, { Condition: { StringEquals: { 'sts:ExternalId': 'secret-123' } } }),
    });
    const fromA = h.clients(a.root);
    const fromB = h.clients(b.root);

    await fromA.sts.send(new AssumeRoleCommand({ RoleArn: onlyA.arn, RoleSessionName: 'ok' }));
    const denied = await sdkError(fromB.sts.send(new AssumeRoleCommand({ RoleArn: onlyA.arn, RoleSessionName: 'no' })));
    expect(denied).toMatchObject({
      name: 'AccessDenied',
      status: 403,
      message: `User: arn:aws:iam::${b.accountId}:root is not authorized to perform: sts:AssumeRole on resource: ${onlyA.arn}`,
    });
    const missing = await sdkError(fromA.sts.send(new AssumeRoleCommand({ RoleArn: `arn:aws:iam::${b.accountId}:role/none`, RoleSessionName: 'x1' })));
    expect(missing).toMatchObject({ name: 'AccessDenied', status: 403 });

    expect(await sdkError(fromA.sts.send(new AssumeRoleCommand({ RoleArn: withExternalId.arn, RoleSessionName: 'x2' })))).toMatchObject({
      name: 'AccessDenied',
    });
    await fromA.sts.send(new AssumeRoleCommand({ RoleArn: withExternalId.arn, RoleSessionName: 'x3', ExternalId: 'secret-123' }));
  });

  it('credentials for a role in another account see that account', async () => {
    const home = h.account('111111111111');
    const satellite = h.account('999999999999');
    h.emulator.createInstance({ accountId: home.accountId, instanceId: 'i-0aaaaaaaaaaaaaaaa' });
    h.emulator.createInstance({ accountId: satellite.accountId, instanceId: 'i-0bbbbbbbbbbbbbbbb' });
    const role = h.emulator.createRole(satellite.accountId, { roleName: 'vault-describe', trustPolicy: trustAccount(home.accountId) });
    const service = h.emulator.createUser(home.accountId, { userName: 'vault', accessKeys: 1 });
    const asService = h.clients(service.accessKeys[0]!);

    const assumed = await asService.sts.send(new AssumeRoleCommand({ RoleArn: role.arn, RoleSessionName: 'vault-login' }));
    const inSatellite = h.clients(fromSts(assumed.Credentials));
    const seen = await inSatellite.ec2.send(new DescribeInstancesCommand({}));
    expect(seen.Reservations?.flatMap((r) => r.Instances?.map((i) => i.InstanceId))).toEqual(['i-0bbbbbbbbbbbbbbbb']);
    expect(seen.Reservations?.[0]?.OwnerId).toBe(satellite.accountId);
    const ownSeen = await asService.ec2.send(new DescribeInstancesCommand({}));
    expect(ownSeen.Reservations?.flatMap((r) => r.Instances?.map((i) => i.InstanceId))).toEqual(['i-0aaaaaaaaaaaaaaaa']);

    // Role chaining is capped at an hour, whatever the next role allows.
    const next = h.emulator.createRole(satellite.accountId, { roleName: 'next', maxSessionDuration: 7200 });
    const chained = await sdkError(inSatellite.sts.send(new AssumeRoleCommand({ RoleArn: next.arn, RoleSessionName: 'again', DurationSeconds: 7200 })));
    expect(chained).toMatchObject({
      name: 'ValidationError',
      message: 'The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.',
    });
  });

  it('GetFederationToken credentials are refused by IAM and by STS beyond GetCallerIdentity', async () => {
    const { accountId, root } = h.account();
    const user = h.emulator.createUser(accountId, { userName: 'issuer', accessKeys: 1 });
    const issuer = h.clients(user.accessKeys[0]!);
    const token = await issuer.sts.send(new GetFederationTokenCommand({ Name: 'vault-fed', DurationSeconds: 900 }));
    const federated = h.clients(fromSts(token.Credentials));
    expect(await sdkError(federated.iam.send(new ListUsersCommand({})))).toMatchObject({ name: 'AccessDenied', status: 403 });
    expect(await sdkError(federated.sts.send(new GetSessionTokenCommand({})))).toMatchObject({ name: 'AccessDenied' });
    // Only long-term credentials may ask for a federation token, and the name is 2-32 characters.
    expect(await sdkError(federated.sts.send(new GetFederationTokenCommand({ Name: 'again' })))).toMatchObject({ name: 'AccessDenied' });
    expect(await sdkError(h.clients(root).sts.send(new GetFederationTokenCommand({ Name: 'x'.repeat(33) })))).toMatchObject({
      name: 'ValidationError',
    });
  });

  it('GetSessionToken checks MFA codes from TOTP and fixed-code devices', async () => {
    const { accountId } = h.account();
    const user = h.emulator.createUser(accountId, { userName: 'mfa-user', accessKeys: 1 });
    const totp = h.emulator.createMfaDevice(accountId, { userName: 'mfa-user' });
    expect(totp.serialNumber).toBe(`arn:aws:iam::${accountId}:mfa/mfa-user`);
    expect(totp.totpSecret).toMatch(/^[A-Z2-7]{32}$/);
    const hardware = h.emulator.createMfaDevice(accountId, { userName: 'mfa-user', serialNumber: 'GAHT12345678', fixedCode: '123456' });
    const asUser = h.clients(user.accessKeys[0]!);

    const good = await asUser.sts.send(
      new GetSessionTokenCommand({ SerialNumber: totp.serialNumber, TokenCode: h.emulator.mfaCode(totp.serialNumber), DurationSeconds: 900 }),
    );
    const session = h.clients(fromSts(good.Credentials));
    // The identity of a session token is the user itself; with MFA, IAM calls are allowed.
    expect((await session.sts.send(new GetCallerIdentityCommand({}))).Arn).toBe(user.arn);
    expect((await session.iam.send(new GetUserCommand({}))).User?.UserName).toBe('mfa-user');

    await asUser.sts.send(new GetSessionTokenCommand({ SerialNumber: hardware.serialNumber, TokenCode: '123456' }));
    const wrong = await sdkError(asUser.sts.send(new GetSessionTokenCommand({ SerialNumber: hardware.serialNumber, TokenCode: '654321' })));
    expect(wrong).toMatchObject({ name: 'AccessDenied', status: 403, message: 'MultiFactorAuthentication failed with invalid MFA one time pass code.' });
    const stale = h.emulator.mfaCode(totp.serialNumber);
    h.emulator.advanceTime(120_000);
    expect(await sdkError(asUser.sts.send(new GetSessionTokenCommand({ SerialNumber: totp.serialNumber, TokenCode: stale })))).toMatchObject({
      name: 'AccessDenied',
    });
    h.emulator.advanceTime(-120_000);

    // Without MFA the session works for STS but not for IAM, and cannot mint another session.
    const plain = h.clients(fromSts((await asUser.sts.send(new GetSessionTokenCommand({}))).Credentials));
    expect((await plain.sts.send(new GetCallerIdentityCommand({}))).Arn).toBe(user.arn);
    expect(await sdkError(plain.iam.send(new ListUsersCommand({})))).toMatchObject({ name: 'AccessDenied' });
    expect(await sdkError(plain.sts.send(new GetSessionTokenCommand({})))).toMatchObject({ name: 'AccessDenied' });
  });
});
