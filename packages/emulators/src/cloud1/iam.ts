/**
 * IAM (awsQuery, version 2010-05-08): the calls the auth method and the secrets engine make,
 * plus the ones a test needs to set the scene or look at the result. Every call acts on the
 * caller's account. Permission policies are stored and returned but not evaluated: any valid
 * credential of an account may call any action on it, except that the provider's two blanket
 * restrictions on temporary credentials are kept (see `checkIamAllowed`).
 */
import { accessDenied, deleteConflict, entityAlreadyExists, limitExceeded, noSuchEntity, validationError } from './errors';
import { uniqueId } from './ids';
import { memberList, optional, optionalBool, optionalInt, required, tagsParam, type Params } from './query';
import type { ActionHandler, CallContext } from './service';
import {
  checkMaxSessionDuration,
  checkName,
  checkPath,
  checkPolicyDocument,
  mergeTags,
  type Account,
  type AccessKey,
  type Group,
  type InstanceProfile,
  type ManagedPolicy,
  type PolicyHolder,
  type Role,
  type Tag,
  type User,
} from './state';
import { isoSeconds, type XmlObject, type XmlValue } from './xml';

/** Policy documents travel URL-encoded inside IAM responses, as the provider sends them. */
const encodeDocument = (document: string): string => encodeURIComponent(document);

const tagsXml = (tags: Tag[]): XmlValue => (tags.length === 0 ? undefined : tags.map((t) => ({ Key: t.key, Value: t.value })));

function boundaryXml(arn: string | undefined): XmlValue {
  return arn === undefined ? undefined : { PermissionsBoundaryType: 'PermissionsBoundaryPolicy', PermissionsBoundaryArn: arn };
}

export function userXml(user: User, withDetails = false): XmlObject {
  return {
    Path: user.path,
    UserName: user.userName,
    UserId: user.userId,
    Arn: user.arn,
    CreateDate: isoSeconds(user.createDate),
    PermissionsBoundary: withDetails ? boundaryXml(user.permissionsBoundaryArn) : undefined,
    Tags: withDetails ? tagsXml(user.tags) : undefined,
  };
}

export function roleXml(role: Role, withDetails = true): XmlObject {
  return {
    Path: role.path,
    RoleName: role.roleName,
    RoleId: role.roleId,
    Arn: role.arn,
    CreateDate: isoSeconds(role.createDate),
    AssumeRolePolicyDocument: encodeDocument(role.assumeRolePolicyDocument),
    Description: role.description,
    MaxSessionDuration: role.maxSessionDuration,
    PermissionsBoundary: withDetails ? boundaryXml(role.permissionsBoundaryArn) : undefined,
    Tags: withDetails ? tagsXml(role.tags) : undefined,
  };
}

const groupXml = (group: Group): XmlObject => ({
  Path: group.path,
  GroupName: group.groupName,
  GroupId: group.groupId,
  Arn: group.arn,
  CreateDate: isoSeconds(group.createDate),
});

function policyXml(ctx: CallContext, policy: ManagedPolicy): XmlObject {
  let boundaryUses = 0;
  for (const holder of [...ctx.account.users.values(), ...ctx.account.roles.values()]) {
    if (holder.permissionsBoundaryArn === policy.arn) boundaryUses++;
  }
  return {
    PolicyName: policy.policyName,
    PolicyId: policy.policyId,
    Arn: policy.arn,
    Path: policy.path,
    DefaultVersionId: policy.defaultVersionId,
    AttachmentCount: ctx.state.attachmentCount(ctx.account, policy.arn),
    PermissionsBoundaryUsageCount: boundaryUses,
    IsAttachable: true,
    Description: policy.description,
    CreateDate: isoSeconds(policy.createDate),
    UpdateDate: isoSeconds(policy.updateDate),
    Tags: tagsXml(policy.tags),
  };
}

function instanceProfileXml(account: Account, profile: InstanceProfile): XmlObject {
  return {
    Path: profile.path,
    InstanceProfileName: profile.instanceProfileName,
    InstanceProfileId: profile.instanceProfileId,
    Arn: profile.arn,
    CreateDate: isoSeconds(profile.createDate),
    Roles: profile.roleNames.flatMap((name) => {
      const role = account.roles.get(name);
      return role ? [roleXml(role, false)] : [];
    }),
    Tags: tagsXml(profile.tags),
  };
}

const accessKeyMetadataXml = (key: AccessKey, userName: string | undefined): XmlObject => ({
  UserName: userName,
  AccessKeyId: key.accessKeyId,
  Status: key.status,
  CreateDate: isoSeconds(key.createDate),
});

/**
 * IAM's Marker/MaxItems paging. The marker is an opaque offset; callers only hand it back.
 */
function page<T>(params: Params, items: T[]): { items: T[]; IsTruncated: boolean; Marker: string | undefined } {
  const maxItems = optionalInt(params, 'MaxItems') ?? 100;
  if (maxItems < 1 || maxItems > 1000) throw validationError('MaxItems must be between 1 and 1000');
  const marker = optional(params, 'Marker');
  const start = marker === undefined ? 0 : Number(Buffer.from(marker, 'base64').toString('utf8'));
  if (!Number.isInteger(start) || start < 0) throw validationError('Invalid Marker');
  const slice = items.slice(start, start + maxItems);
  const truncated = start + maxItems < items.length;
  return {
    items: slice,
    IsTruncated: truncated,
    Marker: truncated ? Buffer.from(String(start + maxItems)).toString('base64') : undefined,
  };
}

const byPathPrefix = <T extends { path: string }>(params: Params, items: Iterable<T>): T[] => {
  const prefix = optional(params, 'PathPrefix') ?? '/';
  return [...items].filter((i) => i.path.startsWith(prefix));
};

/**
 * The user a call is about: the named one, or the caller when no name is given (GetUser,
 * CreateAccessKey... without UserName act on the signing user, or on the root account).
 */
function subjectUser(ctx: CallContext, action: string): User | undefined {
  const name = optional(ctx.params, 'UserName');
  if (name !== undefined) return ctx.state.user(ctx.account, name);
  switch (ctx.caller.kind) {
    case 'root':
      return undefined;
    case 'user':
      return ctx.state.user(ctx.account, ctx.caller.userName);
    default:
      throw validationError(`Must specify userName when calling ${action} with non-User credentials`);
  }
}

/**
 * The provider forbids IAM calls with GetFederationToken credentials, and with GetSessionToken
 * credentials obtained without MFA.
 */
export function checkIamAllowed(ctx: CallContext): void {
  if (ctx.record.kind !== 'temporary') return;
  const { origin, mfaAuthenticated } = ctx.record.credentials;
  if (origin === 'GetFederationToken') {
    throw accessDenied('Cannot call IAM API operations with credentials obtained from GetFederationToken.');
  }
  if (origin === 'GetSessionToken' && !mfaAuthenticated) {
    throw accessDenied('Cannot call IAM API operations with GetSessionToken credentials unless MFA authentication information is included.');
  }
}

// --- inline and managed policies, shared by users, groups and roles ---------------------------

type HolderKind = 'User' | 'Group' | 'Role';

function holderActions(kind: HolderKind, lookup: (ctx: CallContext) => PolicyHolder): Array<[string, ActionHandler]> {
  const lower = kind.toLowerCase();
  return [
    [
      `Put${kind}Policy`,
      (ctx) => {
        const holder = lookup(ctx);
        const name = required(ctx.params, 'PolicyName');
        checkName('policyName', name, 128);
        const document = required(ctx.params, 'PolicyDocument');
        checkPolicyDocument(document);
        holder.inlinePolicies.set(name, document);
        return undefined;
      },
    ],
    [
      `Get${kind}Policy`,
      (ctx) => {
        const holder = lookup(ctx);
        const name = required(ctx.params, 'PolicyName');
        const document = holder.inlinePolicies.get(name);
        if (document === undefined) throw noSuchEntity(`The ${lower} policy with name ${name} cannot be found.`);
        return {
          [`${kind}Name`]: required(ctx.params, `${kind}Name`),
          PolicyName: name,
          PolicyDocument: encodeDocument(document),
        };
      },
    ],
    [
      `Delete${kind}Policy`,
      (ctx) => {
        const holder = lookup(ctx);
        const name = required(ctx.params, 'PolicyName');
        if (!holder.inlinePolicies.delete(name)) throw noSuchEntity(`The ${lower} policy with name ${name} cannot be found.`);
        return undefined;
      },
    ],
    [
      `List${kind}Policies`,
      (ctx) => {
        const p = page(ctx.params, [...lookup(ctx).inlinePolicies.keys()]);
        return { PolicyNames: p.items, IsTruncated: p.IsTruncated, Marker: p.Marker };
      },
    ],
    [
      `Attach${kind}Policy`,
      (ctx) => {
        const holder = lookup(ctx);
        const policy = ctx.state.policy(ctx.account, required(ctx.params, 'PolicyArn'));
        if (!holder.attachedPolicyArns.has(policy.arn) && holder.attachedPolicyArns.size >= 10) {
          throw limitExceeded(`Cannot exceed quota for PoliciesPer${kind}: 10`);
        }
        holder.attachedPolicyArns.add(policy.arn);
        return undefined;
      },
    ],
    [
      `Detach${kind}Policy`,
      (ctx) => {
        const holder = lookup(ctx);
        const arn = required(ctx.params, 'PolicyArn');
        if (!holder.attachedPolicyArns.delete(arn)) throw noSuchEntity(`Policy ${arn} was not found.`);
        return undefined;
      },
    ],
    [
      `ListAttached${kind}Policies`,
      (ctx) => {
        const holder = lookup(ctx);
        const attached = [...holder.attachedPolicyArns].map((arn) => ctx.state.policy(ctx.account, arn));
        const p = page(ctx.params, byPathPrefix(ctx.params, attached));
        return {
          AttachedPolicies: p.items.map((policy) => ({ PolicyName: policy.policyName, PolicyArn: policy.arn })),
          IsTruncated: p.IsTruncated,
          Marker: p.Marker,
        };
      },
    ],
  ];
}

function tagActions(kind: 'User' | 'Role', lookup: (ctx: CallContext) => { tags: Tag[] }): Array<[string, ActionHandler]> {
  return [
    [
      `Tag${kind}`,
      (ctx) => {
        mergeTags(lookup(ctx).tags, tagsParam(ctx.params));
        return undefined;
      },
    ],
    [
      `Untag${kind}`,
      (ctx) => {
        const target = lookup(ctx);
        const keys = new Set(memberList(ctx.params, 'TagKeys'));
        target.tags = target.tags.filter((t) => !keys.has(t.key));
        return undefined;
      },
    ],
    [
      `List${kind}Tags`,
      (ctx) => {
        const p = page(ctx.params, lookup(ctx).tags);
        return { Tags: p.items.map((t) => ({ Key: t.key, Value: t.value })), IsTruncated: p.IsTruncated, Marker: p.Marker };
      },
    ],
  ];
}

const namedUser = (ctx: CallContext): User => ctx.state.user(ctx.account, required(ctx.params, 'UserName'));
const namedRole = (ctx: CallContext): Role => ctx.state.role(ctx.account, required(ctx.params, 'RoleName'));
function namedGroup(ctx: CallContext): Group {
  const name = required(ctx.params, 'GroupName');
  const group = ctx.account.groups.get(name.toLowerCase());
  if (!group) throw noSuchEntity(`The group with name ${name} cannot be found.`);
  return group;
}
function ownPolicy(ctx: CallContext): ManagedPolicy {
  const arn = required(ctx.params, 'PolicyArn');
  const policy = ctx.account.policies.get(arn);
  if (!policy) throw noSuchEntity(`Policy ${arn} was not found.`);
  return policy;
}

// --- the table -------------------------------------------------------------------------------

const actions: Array<[string, ActionHandler]> = [
  // Users
  [
    'CreateUser',
    (ctx) => {
      const user = ctx.state.createUser(ctx.account, {
        userName: required(ctx.params, 'UserName'),
        path: optional(ctx.params, 'Path'),
        tags: tagsParam(ctx.params),
        permissionsBoundaryArn: optional(ctx.params, 'PermissionsBoundary'),
      });
      return { User: userXml(user, true) };
    },
  ],
  [
    'GetUser',
    (ctx) => {
      const user = subjectUser(ctx, 'GetUser');
      if (!user) {
        return { User: { UserId: ctx.account.id, Arn: `arn:aws:iam::${ctx.account.id}:root`, CreateDate: isoSeconds(ctx.account.createDate) } };
      }
      return { User: userXml(user, true) };
    },
  ],
  [
    'ListUsers',
    (ctx) => {
      const p = page(ctx.params, byPathPrefix(ctx.params, ctx.account.users.values()));
      return { Users: p.items.map((u) => userXml(u)), IsTruncated: p.IsTruncated, Marker: p.Marker };
    },
  ],
  [
    'UpdateUser',
    (ctx) => {
      const user = namedUser(ctx);
      const newPath = optional(ctx.params, 'NewPath');
      const newName = optional(ctx.params, 'NewUserName');
      if (newPath !== undefined) checkPath(newPath);
      if (newName !== undefined) {
        checkName('newUserName', newName, 64);
        if (newName.toLowerCase() !== user.userName.toLowerCase() && ctx.account.users.has(newName.toLowerCase())) {
          throw entityAlreadyExists(`User with name ${newName} already exists.`);
        }
        ctx.account.users.delete(user.userName.toLowerCase());
        for (const group of ctx.account.groups.values()) {
          if (group.members.delete(user.userName.toLowerCase())) group.members.add(newName.toLowerCase());
        }
        for (const keyId of user.accessKeyIds) {
          const record = ctx.state.keys.get(keyId);
          if (record?.kind === 'long-term') record.key.userName = newName;
        }
        user.userName = newName;
        ctx.account.users.set(newName.toLowerCase(), user);
      }
      if (newPath !== undefined) user.path = newPath;
      user.arn = `arn:aws:iam::${ctx.account.id}:user${user.path}${user.userName}`;
      return undefined;
    },
  ],
  [
    'DeleteUser',
    (ctx) => {
      ctx.state.deleteUser(ctx.account, required(ctx.params, 'UserName'));
      return undefined;
    },
  ],
  [
    'PutUserPermissionsBoundary',
    (ctx) => {
      ctx.state.setPermissionsBoundary(ctx.account, namedUser(ctx), required(ctx.params, 'PermissionsBoundary'));
      return undefined;
    },
  ],
  [
    'DeleteUserPermissionsBoundary',
    (ctx) => {
      const user = namedUser(ctx);
      if (user.permissionsBoundaryArn === undefined) throw noSuchEntity(`The user ${user.userName} has no permissions boundary.`);
      user.permissionsBoundaryArn = undefined;
      return undefined;
    },
  ],
  ...tagActions('User', namedUser),
  ...holderActions('User', namedUser),

  // Access keys
  [
    'CreateAccessKey',
    (ctx) => {
      const user = subjectUser(ctx, 'CreateAccessKey');
      const key = ctx.state.createAccessKey(ctx.account, user?.userName);
      return {
        AccessKey: {
          UserName: user?.userName,
          AccessKeyId: key.accessKeyId,
          Status: key.status,
          SecretAccessKey: key.secretAccessKey,
          CreateDate: isoSeconds(key.createDate),
        },
      };
    },
  ],
  [
    'ListAccessKeys',
    (ctx) => {
      const user = subjectUser(ctx, 'ListAccessKeys');
      const ids = user ? user.accessKeyIds : ctx.account.rootKeyIds;
      const keys = ids.map((id) => ctx.state.accessKey(ctx.account, user?.userName, id));
      const p = page(ctx.params, keys);
      return {
        AccessKeyMetadata: p.items.map((k) => accessKeyMetadataXml(k, user?.userName)),
        IsTruncated: p.IsTruncated,
        Marker: p.Marker,
      };
    },
  ],
  [
    'UpdateAccessKey',
    (ctx) => {
      const user = subjectUser(ctx, 'UpdateAccessKey');
      const key = ctx.state.accessKey(ctx.account, user?.userName, required(ctx.params, 'AccessKeyId'));
      const status = required(ctx.params, 'Status');
      if (status !== 'Active' && status !== 'Inactive') throw validationError(`Invalid status ${status}`);
      key.status = status;
      return undefined;
    },
  ],
  [
    'DeleteAccessKey',
    (ctx) => {
      const user = subjectUser(ctx, 'DeleteAccessKey');
      ctx.state.deleteAccessKey(ctx.account, user?.userName, required(ctx.params, 'AccessKeyId'));
      return undefined;
    },
  ],
  [
    'GetAccessKeyLastUsed',
    (ctx) => {
      const id = required(ctx.params, 'AccessKeyId');
      const record = ctx.state.keys.get(id);
      if (record?.kind !== 'long-term' || record.key.accountId !== ctx.account.id) {
        throw accessDenied(`User is not authorized to perform iam:GetAccessKeyLastUsed on access key ${id}`);
      }
      const used = record.key.lastUsed;
      return {
        UserName: record.key.userName,
        AccessKeyLastUsed: used
          ? { LastUsedDate: isoSeconds(used.date), ServiceName: used.service, Region: used.region }
          : { ServiceName: 'N/A', Region: 'N/A' },
      };
    },
  ],

  // MFA devices (created through the admin API; listed here as the provider lists them)
  [
    'ListMFADevices',
    (ctx) => {
      const user = subjectUser(ctx, 'ListMFADevices');
      const devices = [...ctx.account.mfaDevices.values()].filter(
        (d) => user !== undefined && d.userName.toLowerCase() === user.userName.toLowerCase(),
      );
      const p = page(ctx.params, devices);
      return {
        MFADevices: p.items.map((d) => ({ UserName: d.userName, SerialNumber: d.serialNumber, EnableDate: isoSeconds(d.enableDate) })),
        IsTruncated: p.IsTruncated,
        Marker: p.Marker,
      };
    },
  ],

  // Groups
  [
    'CreateGroup',
    (ctx) => {
      const name = required(ctx.params, 'GroupName');
      const path = optional(ctx.params, 'Path') ?? '/';
      checkName('groupName', name, 128);
      checkPath(path);
      if (ctx.account.groups.has(name.toLowerCase())) throw entityAlreadyExists(`Group with name ${name} already exists.`);
      const group: Group = {
        groupName: name,
        path,
        groupId: uniqueId('AGPA'),
        arn: `arn:aws:iam::${ctx.account.id}:group${path}${name}`,
        createDate: ctx.now,
        members: new Set(),
        inlinePolicies: new Map(),
        attachedPolicyArns: new Set(),
      };
      ctx.account.groups.set(name.toLowerCase(), group);
      return { Group: groupXml(group) };
    },
  ],
  [
    'GetGroup',
    (ctx) => {
      const group = namedGroup(ctx);
      const members = [...group.members].flatMap((n) => {
        const user = ctx.account.users.get(n);
        return user ? [user] : [];
      });
      const p = page(ctx.params, members);
      return { Group: groupXml(group), Users: p.items.map((u) => userXml(u)), IsTruncated: p.IsTruncated, Marker: p.Marker };
    },
  ],
  [
    'ListGroups',
    (ctx) => {
      const p = page(ctx.params, byPathPrefix(ctx.params, ctx.account.groups.values()));
      return { Groups: p.items.map(groupXml), IsTruncated: p.IsTruncated, Marker: p.Marker };
    },
  ],
  [
    'DeleteGroup',
    (ctx) => {
      const group = namedGroup(ctx);
      if (group.members.size > 0) throw deleteConflict('Cannot delete entity, must remove users from group first.');
      if (group.inlinePolicies.size > 0) throw deleteConflict('Cannot delete entity, must delete policies first.');
      if (group.attachedPolicyArns.size > 0) throw deleteConflict('Cannot delete entity, must detach all policies first.');
      ctx.account.groups.delete(group.groupName.toLowerCase());
      return undefined;
    },
  ],
  [
    'AddUserToGroup',
    (ctx) => {
      const group = namedGroup(ctx);
      const user = namedUser(ctx);
      group.members.add(user.userName.toLowerCase());
      user.groups.add(group.groupName.toLowerCase());
      return undefined;
    },
  ],
  [
    'RemoveUserFromGroup',
    (ctx) => {
      const group = namedGroup(ctx);
      const user = namedUser(ctx);
      if (!group.members.delete(user.userName.toLowerCase())) {
        throw noSuchEntity(`The user with name ${user.userName} cannot be found in group ${group.groupName}.`);
      }
      user.groups.delete(group.groupName.toLowerCase());
      return undefined;
    },
  ],
  [
    'ListGroupsForUser',
    (ctx) => {
      const user = namedUser(ctx);
      const groups = [...user.groups].flatMap((n) => {
        const group = ctx.account.groups.get(n);
        return group ? [group] : [];
      });
      const p = page(ctx.params, groups);
      return { Groups: p.items.map(groupXml), IsTruncated: p.IsTruncated, Marker: p.Marker };
    },
  ],
  ...holderActions('Group', namedGroup),

  // Roles
  [
    'CreateRole',
    (ctx) => {
      const role = ctx.state.createRole(ctx.account, {
        roleName: required(ctx.params, 'RoleName'),
        path: optional(ctx.params, 'Path'),
        assumeRolePolicyDocument: required(ctx.params, 'AssumeRolePolicyDocument'),
        description: optional(ctx.params, 'Description'),
        maxSessionDuration: optionalInt(ctx.params, 'MaxSessionDuration'),
        tags: tagsParam(ctx.params),
        permissionsBoundaryArn: optional(ctx.params, 'PermissionsBoundary'),
      });
      return { Role: roleXml(role) };
    },
  ],
  ['GetRole', (ctx) => ({ Role: roleXml(namedRole(ctx)) })],
  [
    'ListRoles',
    (ctx) => {
      const p = page(ctx.params, byPathPrefix(ctx.params, ctx.account.roles.values()));
      return { Roles: p.items.map((r) => roleXml(r, false)), IsTruncated: p.IsTruncated, Marker: p.Marker };
    },
  ],
  [
    'UpdateRole',
    (ctx) => {
      const role = namedRole(ctx);
      const max = optionalInt(ctx.params, 'MaxSessionDuration');
      if (max !== undefined) {
        checkMaxSessionDuration(max);
        role.maxSessionDuration = max;
      }
      const description = optional(ctx.params, 'Description');
      if (description !== undefined) role.description = description;
      return {};
    },
  ],
  [
    'UpdateAssumeRolePolicy',
    (ctx) => {
      const role = namedRole(ctx);
      const document = required(ctx.params, 'PolicyDocument');
      checkPolicyDocument(document);
      role.assumeRolePolicyDocument = document;
      return undefined;
    },
  ],
  [
    'DeleteRole',
    (ctx) => {
      const role = namedRole(ctx);
      const key = role.roleName.toLowerCase();
      for (const profile of ctx.account.instanceProfiles.values()) {
        if (profile.roleNames.includes(key)) throw deleteConflict('Cannot delete entity, must remove roles from instance profile first.');
      }
      if (role.inlinePolicies.size > 0) throw deleteConflict('Cannot delete entity, must delete policies first.');
      if (role.attachedPolicyArns.size > 0) throw deleteConflict('Cannot delete entity, must detach all policies first.');
      ctx.account.roles.delete(key);
      return undefined;
    },
  ],
  [
    'PutRolePermissionsBoundary',
    (ctx) => {
      ctx.state.setPermissionsBoundary(ctx.account, namedRole(ctx), required(ctx.params, 'PermissionsBoundary'));
      return undefined;
    },
  ],
  [
    'DeleteRolePermissionsBoundary',
    (ctx) => {
      namedRole(ctx).permissionsBoundaryArn = undefined;
      return undefined;
    },
  ],
  ...tagActions('Role', namedRole),
  ...holderActions('Role', namedRole),

  // Managed policies
  [
    'CreatePolicy',
    (ctx) => {
      const policy = ctx.state.createPolicy(ctx.account, {
        policyName: required(ctx.params, 'PolicyName'),
        path: optional(ctx.params, 'Path'),
        document: required(ctx.params, 'PolicyDocument'),
        description: optional(ctx.params, 'Description'),
        tags: tagsParam(ctx.params),
      });
      return { Policy: policyXml(ctx, policy) };
    },
  ],
  ['GetPolicy', (ctx) => ({ Policy: policyXml(ctx, ctx.state.policy(ctx.account, required(ctx.params, 'PolicyArn'))) })],
  [
    'ListPolicies',
    (ctx) => {
      const scope = optional(ctx.params, 'Scope') ?? 'All';
      const onlyAttached = optionalBool(ctx.params, 'OnlyAttached') ?? false;
      let policies = [
        ...(scope === 'Local' ? [] : ctx.state.awsPolicies.values()),
        ...(scope === 'AWS' ? [] : ctx.account.policies.values()),
      ];
      if (onlyAttached) policies = policies.filter((p) => ctx.state.attachmentCount(ctx.account, p.arn) > 0);
      const p = page(ctx.params, byPathPrefix(ctx.params, policies));
      return { Policies: p.items.map((policy) => policyXml(ctx, policy)), IsTruncated: p.IsTruncated, Marker: p.Marker };
    },
  ],
  [
    'DeletePolicy',
    (ctx) => {
      const policy = ownPolicy(ctx);
      if (ctx.state.attachmentCount(ctx.account, policy.arn) > 0) throw deleteConflict('Cannot delete a policy attached to entities.');
      if (policy.versions.size > 1) {
        throw deleteConflict(
          "This policy has more than one version. Before you delete a policy, you must delete the policy's versions. " +
            'The default version is deleted with the policy.',
        );
      }
      ctx.account.policies.delete(policy.arn);
      return undefined;
    },
  ],
  [
    'CreatePolicyVersion',
    (ctx) => {
      const policy = ownPolicy(ctx);
      const document = required(ctx.params, 'PolicyDocument');
      checkPolicyDocument(document);
      if (policy.versions.size >= 5) {
        throw limitExceeded(
          'A managed policy can have up to 5 versions. Before you create a new version, you must delete an existing version.',
        );
      }
      const versionId = `v${policy.nextVersion++}`;
      policy.versions.set(versionId, { versionId, document, createDate: ctx.now });
      const setAsDefault = optionalBool(ctx.params, 'SetAsDefault') ?? false;
      if (setAsDefault) policy.defaultVersionId = versionId;
      policy.updateDate = ctx.now;
      return { PolicyVersion: { VersionId: versionId, IsDefaultVersion: setAsDefault, CreateDate: isoSeconds(ctx.now) } };
    },
  ],
  [
    'GetPolicyVersion',
    (ctx) => {
      const policy = ctx.state.policy(ctx.account, required(ctx.params, 'PolicyArn'));
      const versionId = required(ctx.params, 'VersionId');
      const version = policy.versions.get(versionId);
      if (!version) throw noSuchEntity(`Policy ${policy.arn} version ${versionId} does not exist or is not attachable.`);
      return {
        PolicyVersion: {
          Document: encodeDocument(version.document),
          VersionId: version.versionId,
          IsDefaultVersion: version.versionId === policy.defaultVersionId,
          CreateDate: isoSeconds(version.createDate),
        },
      };
    },
  ],
  [
    'ListPolicyVersions',
    (ctx) => {
      const policy = ctx.state.policy(ctx.account, required(ctx.params, 'PolicyArn'));
      const versions = [...policy.versions.values()].reverse();
      const p = page(ctx.params, versions);
      return {
        Versions: p.items.map((v) => ({
          VersionId: v.versionId,
          IsDefaultVersion: v.versionId === policy.defaultVersionId,
          CreateDate: isoSeconds(v.createDate),
        })),
        IsTruncated: p.IsTruncated,
        Marker: p.Marker,
      };
    },
  ],
  [
    'DeletePolicyVersion',
    (ctx) => {
      const policy = ownPolicy(ctx);
      const versionId = required(ctx.params, 'VersionId');
      if (!policy.versions.has(versionId)) throw noSuchEntity(`Policy ${policy.arn} version ${versionId} does not exist.`);
      if (versionId === policy.defaultVersionId) throw deleteConflict('Cannot delete the default version of a policy.');
      policy.versions.delete(versionId);
      return undefined;
    },
  ],
  [
    'SetDefaultPolicyVersion',
    (ctx) => {
      const policy = ownPolicy(ctx);
      const versionId = required(ctx.params, 'VersionId');
      if (!policy.versions.has(versionId)) throw noSuchEntity(`Policy ${policy.arn} version ${versionId} does not exist.`);
      policy.defaultVersionId = versionId;
      policy.updateDate = ctx.now;
      return undefined;
    },
  ],
  [
    'ListEntitiesForPolicy',
    (ctx) => {
      const arn = ctx.state.policy(ctx.account, required(ctx.params, 'PolicyArn')).arn;
      const attached = <T extends PolicyHolder>(items: Iterable<T>): T[] => [...items].filter((h) => h.attachedPolicyArns.has(arn));
      return {
        PolicyGroups: attached(ctx.account.groups.values()).map((g) => ({ GroupName: g.groupName, GroupId: g.groupId })),
        PolicyUsers: attached(ctx.account.users.values()).map((u) => ({ UserName: u.userName, UserId: u.userId })),
        PolicyRoles: attached(ctx.account.roles.values()).map((r) => ({ RoleName: r.roleName, RoleId: r.roleId })),
        IsTruncated: false,
      };
    },
  ],

  // Instance profiles
  [
    'CreateInstanceProfile',
    (ctx) => {
      const profile = ctx.state.createInstanceProfile(ctx.account, {
        instanceProfileName: required(ctx.params, 'InstanceProfileName'),
        path: optional(ctx.params, 'Path'),
        tags: tagsParam(ctx.params),
      });
      return { InstanceProfile: instanceProfileXml(ctx.account, profile) };
    },
  ],
  [
    'GetInstanceProfile',
    (ctx) => ({
      InstanceProfile: instanceProfileXml(ctx.account, ctx.state.instanceProfile(ctx.account, required(ctx.params, 'InstanceProfileName'))),
    }),
  ],
  [
    'ListInstanceProfiles',
    (ctx) => {
      const p = page(ctx.params, byPathPrefix(ctx.params, ctx.account.instanceProfiles.values()));
      return { InstanceProfiles: p.items.map((ip) => instanceProfileXml(ctx.account, ip)), IsTruncated: p.IsTruncated, Marker: p.Marker };
    },
  ],
  [
    'ListInstanceProfilesForRole',
    (ctx) => {
      const role = namedRole(ctx);
      const profiles = [...ctx.account.instanceProfiles.values()].filter((ip) => ip.roleNames.includes(role.roleName.toLowerCase()));
      const p = page(ctx.params, profiles);
      return { InstanceProfiles: p.items.map((ip) => instanceProfileXml(ctx.account, ip)), IsTruncated: p.IsTruncated, Marker: p.Marker };
    },
  ],
  [
    'DeleteInstanceProfile',
    (ctx) => {
      const profile = ctx.state.instanceProfile(ctx.account, required(ctx.params, 'InstanceProfileName'));
      if (profile.roleNames.length > 0) throw deleteConflict('Cannot delete entity, must remove roles from instance profile first.');
      ctx.account.instanceProfiles.delete(profile.instanceProfileName.toLowerCase());
      return undefined;
    },
  ],
  [
    'AddRoleToInstanceProfile',
    (ctx) => {
      ctx.state.addRoleToInstanceProfile(ctx.account, required(ctx.params, 'InstanceProfileName'), required(ctx.params, 'RoleName'));
      return undefined;
    },
  ],
  [
    'RemoveRoleFromInstanceProfile',
    (ctx) => {
      const profile = ctx.state.instanceProfile(ctx.account, required(ctx.params, 'InstanceProfileName'));
      const role = namedRole(ctx);
      const index = profile.roleNames.indexOf(role.roleName.toLowerCase());
      if (index < 0) throw noSuchEntity(`The role with name ${role.roleName} cannot be found in instance profile ${profile.instanceProfileName}.`);
      profile.roleNames.splice(index, 1);
      return undefined;
    },
  ],
];

export const IAM_ACTIONS: ReadonlyMap<string, ActionHandler> = new Map(actions);
