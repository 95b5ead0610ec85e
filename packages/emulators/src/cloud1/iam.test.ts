import {
  AddRoleToInstanceProfileCommand,
  AddUserToGroupCommand,
  AttachGroupPolicyCommand,
  AttachUserPolicyCommand,
  CreateAccessKeyCommand,
  CreateGroupCommand,
  CreateInstanceProfileCommand,
  CreatePolicyCommand,
  CreatePolicyVersionCommand,
  CreateRoleCommand,
  CreateUserCommand,
  DeleteAccessKeyCommand,
  DeleteGroupPolicyCommand,
  DeletePolicyCommand,
  DeletePolicyVersionCommand,
  DeleteRoleCommand,
  DeleteUserCommand,
  DeleteUserPolicyCommand,
  DetachGroupPolicyCommand,
  DetachUserPolicyCommand,
  GetAccessKeyLastUsedCommand,
  GetGroupCommand,
  GetGroupPolicyCommand,
  GetInstanceProfileCommand,
  GetPolicyCommand,
  GetPolicyVersionCommand,
  GetRoleCommand,
  GetUserCommand,
  GetUserPolicyCommand,
  ListAccessKeysCommand,
  ListAttachedGroupPoliciesCommand,
  ListAttachedUserPoliciesCommand,
  ListGroupPoliciesCommand,
  ListGroupsForUserCommand,
  ListInstanceProfilesForRoleCommand,
  ListPolicyVersionsCommand,
  ListUserPoliciesCommand,
  ListUsersCommand,
  ListUserTagsCommand,
  PutGroupPolicyCommand,
  PutUserPermissionsBoundaryCommand,
  PutUserPolicyCommand,
  RemoveRoleFromInstanceProfileCommand,
  RemoveUserFromGroupCommand,
  SetDefaultPolicyVersionCommand,
  TagUserCommand,
  UntagUserCommand,
  UpdateAccessKeyCommand,
  UpdateRoleCommand,
} from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { Harness, sdkError, type Clients } from './test-support/harness';

const POLICY = JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'ec2:DescribeInstances', Resource: '*' }] });
const TRUST = JSON.stringify({
  Version: '2012-10-17',
  Statement: [{ Effect: 'Allow', Principal: { Service: 'ec2.amazonaws.com' }, Action: 'sts:AssumeRole' }],
});

describe('cloud1 IAM', () => {
  const h = new Harness();
  let accountId: string;
  let admin: Clients;

  beforeAll(async () => {
    await h.start();
  });
  afterAll(() => h.stop());
  beforeEach(() => {
    h.emulator.reset();
    const account = h.account();
    accountId = account.accountId;
    admin = h.clients(account.root);
  });

  it('creates, reads and lists users with paths and tags, and refuses duplicates', async () => {
    const created = await admin.iam.send(
      new CreateUserCommand({ UserName: 'vault-alice', Path: '/vault/', Tags: [{ Key: 'team', Value: 'blue' }] }),
    );
    expect(created.User).toMatchObject({
      UserName: 'vault-alice',
      Path: '/vault/',
      Arn: `arn:aws:iam::${accountId}:user/vault/vault-alice`,
    });
    expect(created.User?.UserId).toMatch(/^AIDA[A-Z0-9]{17}$/);
    expect(created.User?.CreateDate).toBeInstanceOf(Date);

    const read = await admin.iam.send(new GetUserCommand({ UserName: 'vault-alice' }));
    expect(read.User?.Tags).toEqual([{ Key: 'team', Value: 'blue' }]);

    await admin.iam.send(new CreateUserCommand({ UserName: 'bob' }));
    const listed = await admin.iam.send(new ListUsersCommand({ PathPrefix: '/vault/' }));
    expect(listed.Users?.map((u) => u.UserName)).toEqual(['vault-alice']);
    const paged = await admin.iam.send(new ListUsersCommand({ MaxItems: 1 }));
    expect(paged.IsTruncated).toBe(true);
    const rest = await admin.iam.send(new ListUsersCommand({ MaxItems: 1, Marker: paged.Marker }));
    expect(rest.Users?.map((u) => u.UserName)).toEqual(['bob']);

    // Names are unique regardless of case, as on the provider.
    const duplicate = await sdkError(admin.iam.send(new CreateUserCommand({ UserName: 'VAULT-ALICE' })));
    expect(duplicate).toMatchObject({ name: 'EntityAlreadyExistsException', status: 409 });
    const missing = await sdkError(admin.iam.send(new GetUserCommand({ UserName: 'nobody' })));
    expect(missing).toMatchObject({ name: 'NoSuchEntityException', status: 404, message: 'The user with name nobody cannot be found.' });
    const invalid = await sdkError(admin.iam.send(new CreateUserCommand({ UserName: 'carol', Path: 'no-slashes' })));
    expect(invalid).toMatchObject({ name: 'ValidationError', status: 400 });
  });

  it('GetUser without a name describes the caller, root included', async () => {
    const root = await admin.iam.send(new GetUserCommand({}));
    expect(root.User).toMatchObject({ UserId: accountId, Arn: `arn:aws:iam::${accountId}:root` });
    const user = h.emulator.createUser(accountId, { userName: 'svc', accessKeys: 1 });
    const own = h.clients(user.accessKeys[0]!);
    const self = await own.iam.send(new GetUserCommand({}));
    expect(self.User).toMatchObject({ UserName: 'svc', Arn: user.arn, UserId: user.userId });
  });

  it('allows at most two access keys per user', async () => {
    await admin.iam.send(new CreateUserCommand({ UserName: 'keys' }));
    const first = await admin.iam.send(new CreateAccessKeyCommand({ UserName: 'keys' }));
    await admin.iam.send(new CreateAccessKeyCommand({ UserName: 'keys' }));
    expect(first.AccessKey?.AccessKeyId).toMatch(/^AKIA[A-Z0-9]{16}$/);
    expect(first.AccessKey?.SecretAccessKey).toHaveLength(40);
    expect(first.AccessKey?.Status).toBe('Active');

    const third = await sdkError(admin.iam.send(new CreateAccessKeyCommand({ UserName: 'keys' })));
    expect(third).toMatchObject({
      name: 'LimitExceededException',
      status: 409,
      message: 'Cannot exceed quota for AccessKeysPerUser: 2',
    });
    const listed = await admin.iam.send(new ListAccessKeysCommand({ UserName: 'keys' }));
    expect(listed.AccessKeyMetadata).toHaveLength(2);
    expect(listed.AccessKeyMetadata?.[0]).toMatchObject({ UserName: 'keys', AccessKeyId: first.AccessKey?.AccessKeyId, Status: 'Active' });
  });

  it('a deleted or deactivated key stops working at once', async () => {
    const user = h.emulator.createUser(accountId, { userName: 'temp', accessKeys: 2 });
    const [a, b] = user.accessKeys;
    const withA = h.clients(a!);
    expect((await withA.sts.send(new GetCallerIdentityCommand({}))).Arn).toBe(user.arn);

    await admin.iam.send(new DeleteAccessKeyCommand({ UserName: 'temp', AccessKeyId: a!.accessKeyId }));
    const deleted = await sdkError(withA.sts.send(new GetCallerIdentityCommand({})));
    expect(deleted).toMatchObject({ name: 'InvalidClientTokenId', status: 403, message: 'The security token included in the request is invalid.' });
    const again = await sdkError(admin.iam.send(new DeleteAccessKeyCommand({ UserName: 'temp', AccessKeyId: a!.accessKeyId })));
    expect(again).toMatchObject({ name: 'NoSuchEntityException', status: 404 });

    const withB = h.clients(b!);
    await admin.iam.send(new UpdateAccessKeyCommand({ UserName: 'temp', AccessKeyId: b!.accessKeyId, Status: 'Inactive' }));
    expect(await sdkError(withB.iam.send(new GetUserCommand({})))).toMatchObject({ name: 'InvalidClientTokenId' });
    await admin.iam.send(new UpdateAccessKeyCommand({ UserName: 'temp', AccessKeyId: b!.accessKeyId, Status: 'Active' }));
    expect((await withB.iam.send(new GetUserCommand({}))).User?.UserName).toBe('temp');
  });

  it('rotates a key the way the service rotates its own root key', async () => {
    const user = h.emulator.createUser(accountId, { userName: 'vault-root', accessKeys: 1 });
    const old = h.clients(user.accessKeys[0]!);
    // The rotation: find out who we are, create a key, then delete the old one with the new one.
    const me = await old.iam.send(new GetUserCommand({}));
    const created = await old.iam.send(new CreateAccessKeyCommand({ UserName: me.User?.UserName }));
    const fresh = h.clients({ accessKeyId: created.AccessKey!.AccessKeyId!, secretAccessKey: created.AccessKey!.SecretAccessKey! });
    await fresh.iam.send(new DeleteAccessKeyCommand({ UserName: 'vault-root', AccessKeyId: user.accessKeys[0]!.accessKeyId }));

    expect((await fresh.sts.send(new GetCallerIdentityCommand({}))).Arn).toBe(user.arn);
    expect(await sdkError(old.sts.send(new GetCallerIdentityCommand({})))).toMatchObject({ name: 'InvalidClientTokenId' });
    const used = await admin.iam.send(new GetAccessKeyLastUsedCommand({ AccessKeyId: created.AccessKey!.AccessKeyId! }));
    expect(used.AccessKeyLastUsed).toMatchObject({ ServiceName: 'sts', Region: 'us-east-1' });
  });

  it('round-trips inline and managed policies, groups, tags and permissions boundaries', async () => {
    const boundary = await admin.iam.send(new CreatePolicyCommand({ PolicyName: 'boundary', PolicyDocument: POLICY }));
    const boundaryArn = boundary.Policy!.Arn!;
    expect(boundaryArn).toBe(`arn:aws:iam::${accountId}:policy/boundary`);

    await admin.iam.send(
      new CreateUserCommand({ UserName: 'dyn', Path: '/vault/', PermissionsBoundary: boundaryArn, Tags: [{ Key: 'a', Value: '1' }] }),
    );
    expect((await admin.iam.send(new GetUserCommand({ UserName: 'dyn' }))).User?.PermissionsBoundary).toEqual({
      PermissionsBoundaryType: 'PermissionsBoundaryPolicy',
      PermissionsBoundaryArn: boundaryArn,
    });

    // Inline policy: the document comes back URL-encoded, as the provider sends it.
    await admin.iam.send(new PutUserPolicyCommand({ UserName: 'dyn', PolicyName: 'inline', PolicyDocument: POLICY }));
    const inline = await admin.iam.send(new GetUserPolicyCommand({ UserName: 'dyn', PolicyName: 'inline' }));
    expect(decodeURIComponent(inline.PolicyDocument!)).toBe(POLICY);
    expect((await admin.iam.send(new ListUserPoliciesCommand({ UserName: 'dyn' }))).PolicyNames).toEqual(['inline']);

    // Managed policies: provider-owned and customer, with versions.
    const managed = await admin.iam.send(new CreatePolicyCommand({ PolicyName: 'managed', Path: '/vault/', PolicyDocument: POLICY }));
    const managedArn = managed.Policy!.Arn!;
    const v2 = await admin.iam.send(new CreatePolicyVersionCommand({ PolicyArn: managedArn, PolicyDocument: '{"Version":"2012-10-17","Statement":[]}', SetAsDefault: true }));
    expect(v2.PolicyVersion).toMatchObject({ VersionId: 'v2', IsDefaultVersion: true });
    const versions = await admin.iam.send(new ListPolicyVersionsCommand({ PolicyArn: managedArn }));
    expect(versions.Versions?.map((v) => [v.VersionId, v.IsDefaultVersion])).toEqual([['v2', true], ['v1', false]]);
    await admin.iam.send(new SetDefaultPolicyVersionCommand({ PolicyArn: managedArn, VersionId: 'v1' }));
    const v1 = await admin.iam.send(new GetPolicyVersionCommand({ PolicyArn: managedArn, VersionId: 'v1' }));
    expect(decodeURIComponent(v1.PolicyVersion!.Document!)).toBe(POLICY);
    await admin.iam.send(new AttachUserPolicyCommand({ UserName: 'dyn', PolicyArn: managedArn }));
    await admin.iam.send(new AttachUserPolicyCommand({ UserName: 'dyn', PolicyArn: 'arn:aws:iam::aws:policy/ReadOnlyAccess' }));
    const attached = await admin.iam.send(new ListAttachedUserPoliciesCommand({ UserName: 'dyn' }));
    expect(attached.AttachedPolicies).toEqual([
      { PolicyName: 'managed', PolicyArn: managedArn },
      { PolicyName: 'ReadOnlyAccess', PolicyArn: 'arn:aws:iam::aws:policy/ReadOnlyAccess' },
    ]);
    expect((await admin.iam.send(new GetPolicyCommand({ PolicyArn: managedArn }))).Policy?.AttachmentCount).toBe(1);
    const noPolicy = await sdkError(admin.iam.send(new AttachUserPolicyCommand({ UserName: 'dyn', PolicyArn: 'arn:aws:iam::aws:policy/Nope' })));
    expect(noPolicy).toMatchObject({ name: 'NoSuchEntityException', status: 404 });
    const malformed = await sdkError(admin.iam.send(new PutUserPolicyCommand({ UserName: 'dyn', PolicyName: 'bad', PolicyDocument: '{not json' })));
    expect(malformed).toMatchObject({ name: 'MalformedPolicyDocumentException', status: 400 });

    // Groups, with their own policies.
    await admin.iam.send(new CreateGroupCommand({ GroupName: 'readers' }));
    await admin.iam.send(new AddUserToGroupCommand({ GroupName: 'readers', UserName: 'dyn' }));
    await admin.iam.send(new PutGroupPolicyCommand({ GroupName: 'readers', PolicyName: 'gp', PolicyDocument: POLICY }));
    await admin.iam.send(new AttachGroupPolicyCommand({ GroupName: 'readers', PolicyArn: managedArn }));
    expect((await admin.iam.send(new ListGroupsForUserCommand({ UserName: 'dyn' }))).Groups?.map((g) => g.GroupName)).toEqual(['readers']);
    expect((await admin.iam.send(new GetGroupCommand({ GroupName: 'readers' }))).Users?.map((u) => u.UserName)).toEqual(['dyn']);
    expect((await admin.iam.send(new ListGroupPoliciesCommand({ GroupName: 'readers' }))).PolicyNames).toEqual(['gp']);
    const gp = await admin.iam.send(new GetGroupPolicyCommand({ GroupName: 'readers', PolicyName: 'gp' }));
    expect(decodeURIComponent(gp.PolicyDocument!)).toBe(POLICY);
    expect((await admin.iam.send(new ListAttachedGroupPoliciesCommand({ GroupName: 'readers' }))).AttachedPolicies?.[0]?.PolicyArn).toBe(managedArn);

    // Tags and boundary changes.
    await admin.iam.send(new TagUserCommand({ UserName: 'dyn', Tags: [{ Key: 'a', Value: '2' }, { Key: 'b', Value: '3' }] }));
    await admin.iam.send(new UntagUserCommand({ UserName: 'dyn', TagKeys: ['b'] }));
    expect((await admin.iam.send(new ListUserTagsCommand({ UserName: 'dyn' }))).Tags).toEqual([{ Key: 'a', Value: '2' }]);
    await admin.iam.send(new PutUserPermissionsBoundaryCommand({ UserName: 'dyn', PermissionsBoundary: 'arn:aws:iam::aws:policy/PowerUserAccess' }));
    expect((await admin.iam.send(new GetUserCommand({ UserName: 'dyn' }))).User?.PermissionsBoundary?.PermissionsBoundaryArn).toBe(
      'arn:aws:iam::aws:policy/PowerUserAccess',
    );

    // A user that still owns things cannot be deleted; the secrets engine's revocation order can.
    await admin.iam.send(new CreateAccessKeyCommand({ UserName: 'dyn' }));
    const conflict = await sdkError(admin.iam.send(new DeleteUserCommand({ UserName: 'dyn' })));
    expect(conflict).toMatchObject({ name: 'DeleteConflictException', status: 409 });
    for (const key of (await admin.iam.send(new ListAccessKeysCommand({ UserName: 'dyn' }))).AccessKeyMetadata ?? []) {
      await admin.iam.send(new DeleteAccessKeyCommand({ UserName: 'dyn', AccessKeyId: key.AccessKeyId }));
    }
    await admin.iam.send(new DeleteUserPolicyCommand({ UserName: 'dyn', PolicyName: 'inline' }));
    for (const p of attached.AttachedPolicies ?? []) {
      await admin.iam.send(new DetachUserPolicyCommand({ UserName: 'dyn', PolicyArn: p.PolicyArn }));
    }
    await admin.iam.send(new RemoveUserFromGroupCommand({ GroupName: 'readers', UserName: 'dyn' }));
    await admin.iam.send(new DeleteUserCommand({ UserName: 'dyn' }));
    expect(await sdkError(admin.iam.send(new GetUserCommand({ UserName: 'dyn' })))).toMatchObject({ name: 'NoSuchEntityException' });

    // Policies: attached ones and ones with extra versions cannot be deleted.
    expect(await sdkError(admin.iam.send(new DeletePolicyCommand({ PolicyArn: managedArn })))).toMatchObject({ name: 'DeleteConflictException' });
    await admin.iam.send(new DetachGroupPolicyCommand({ GroupName: 'readers', PolicyArn: managedArn }));
    await admin.iam.send(new DeleteGroupPolicyCommand({ GroupName: 'readers', PolicyName: 'gp' }));
    expect(await sdkError(admin.iam.send(new DeletePolicyCommand({ PolicyArn: managedArn })))).toMatchObject({ name: 'DeleteConflictException' });
    await admin.iam.send(new DeletePolicyVersionCommand({ PolicyArn: managedArn, VersionId: 'v2' }));
    await admin.iam.send(new DeletePolicyCommand({ PolicyArn: managedArn }));
    expect(await sdkError(admin.iam.send(new GetPolicyCommand({ PolicyArn: managedArn })))).toMatchObject({ name: 'NoSuchEntityException' });
  });

  it('manages roles and instance profiles', async () => {
    const created = await admin.iam.send(
      new CreateRoleCommand({ RoleName: 'web', Path: '/app/', AssumeRolePolicyDocument: TRUST, MaxSessionDuration: 7200 }),
    );
    expect(created.Role).toMatchObject({ RoleName: 'web', Arn: `arn:aws:iam::${accountId}:role/app/web`, MaxSessionDuration: 7200 });
    expect(created.Role?.RoleId).toMatch(/^AROA[A-Z0-9]{17}$/);
    const read = await admin.iam.send(new GetRoleCommand({ RoleName: 'web' }));
    expect(decodeURIComponent(read.Role!.AssumeRolePolicyDocument!)).toBe(TRUST);
    await admin.iam.send(new UpdateRoleCommand({ RoleName: 'web', MaxSessionDuration: 3600 }));
    expect((await admin.iam.send(new GetRoleCommand({ RoleName: 'web' }))).Role?.MaxSessionDuration).toBe(3600);

    const profile = await admin.iam.send(new CreateInstanceProfileCommand({ InstanceProfileName: 'web-profile' }));
    expect(profile.InstanceProfile?.InstanceProfileId).toMatch(/^AIPA/);
    await admin.iam.send(new AddRoleToInstanceProfileCommand({ InstanceProfileName: 'web-profile', RoleName: 'web' }));
    const got = await admin.iam.send(new GetInstanceProfileCommand({ InstanceProfileName: 'web-profile' }));
    expect(got.InstanceProfile).toMatchObject({ Arn: `arn:aws:iam::${accountId}:instance-profile/web-profile` });
    expect(got.InstanceProfile?.Roles?.map((r) => r.Arn)).toEqual([created.Role?.Arn]);
    expect((await admin.iam.send(new ListInstanceProfilesForRoleCommand({ RoleName: 'web' }))).InstanceProfiles).toHaveLength(1);

    await admin.iam.send(new CreateRoleCommand({ RoleName: 'other', AssumeRolePolicyDocument: TRUST }));
    const second = await sdkError(admin.iam.send(new AddRoleToInstanceProfileCommand({ InstanceProfileName: 'web-profile', RoleName: 'other' })));
    expect(second).toMatchObject({ name: 'LimitExceededException', status: 409 });
    expect(await sdkError(admin.iam.send(new DeleteRoleCommand({ RoleName: 'web' })))).toMatchObject({ name: 'DeleteConflictException' });
    await admin.iam.send(new RemoveRoleFromInstanceProfileCommand({ InstanceProfileName: 'web-profile', RoleName: 'web' }));
    await admin.iam.send(new DeleteRoleCommand({ RoleName: 'web' }));
    expect(await sdkError(admin.iam.send(new GetRoleCommand({ RoleName: 'web' })))).toMatchObject({ name: 'NoSuchEntityException', status: 404 });
    const tooLong = await sdkError(admin.iam.send(new CreateRoleCommand({ RoleName: 'x', AssumeRolePolicyDocument: TRUST, MaxSessionDuration: 100 })));
    expect(tooLong).toMatchObject({ name: 'ValidationError', status: 400 });
  });
});
