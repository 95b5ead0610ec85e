/**
 * The emulator's whole world, in memory: accounts and what IAM keeps in them, the instances EC2
 * reports, and every access key (long-term or temporary) the signature check may meet.
 *
 * Operations that both the IAM API and the admin API perform (create a user, a key, a role...)
 * live here so the two cannot drift apart; the service files only translate parameters and
 * render XML. Nothing here reads the system time: `now()` is the emulator's clock.
 */
import {
  deleteConflict,
  entityAlreadyExists,
  limitExceeded,
  malformedPolicy,
  noSuchEntity,
  validationError,
} from './errors';
import * as ids from './ids';

export interface Tag {
  key: string;
  value: string;
}

/** Name → document; documents are kept exactly as sent (JSON text). */
export interface PolicyHolder {
  inlinePolicies: Map<string, string>;
  /** Attached managed policies by ARN, in attachment order. */
  attachedPolicyArns: Set<string>;
}

export interface AccessKey {
  accessKeyId: string;
  secretAccessKey: string;
  status: 'Active' | 'Inactive';
  createDate: number;
  accountId: string;
  /** Undefined for the account's root keys. */
  userName: string | undefined;
  lastUsed?: { date: number; service: string; region: string };
}

export interface User extends PolicyHolder {
  userName: string;
  path: string;
  userId: string;
  arn: string;
  createDate: number;
  tags: Tag[];
  /** Lower-cased group names. */
  groups: Set<string>;
  permissionsBoundaryArn: string | undefined;
  accessKeyIds: string[];
}

export interface Group extends PolicyHolder {
  groupName: string;
  path: string;
  groupId: string;
  arn: string;
  createDate: number;
  /** Lower-cased user names. */
  members: Set<string>;
}

export interface Role extends PolicyHolder {
  roleName: string;
  path: string;
  roleId: string;
  arn: string;
  createDate: number;
  assumeRolePolicyDocument: string;
  description: string | undefined;
  maxSessionDuration: number;
  tags: Tag[];
  permissionsBoundaryArn: string | undefined;
}

export interface PolicyVersion {
  versionId: string;
  document: string;
  createDate: number;
}

export interface ManagedPolicy {
  policyName: string;
  path: string;
  policyId: string;
  arn: string;
  createDate: number;
  updateDate: number;
  description: string | undefined;
  defaultVersionId: string;
  versions: Map<string, PolicyVersion>;
  nextVersion: number;
  tags: Tag[];
}

export interface InstanceProfile {
  instanceProfileName: string;
  path: string;
  instanceProfileId: string;
  arn: string;
  createDate: number;
  /** Lower-cased role names; the provider allows at most one. */
  roleNames: string[];
  tags: Tag[];
}

/**
 * A virtual MFA device. With `totpSecret` (base32) the expected code is the RFC 6238 TOTP of the
 * emulator clock (30 s steps, 6 digits, SHA-1, one step of tolerance either side); with
 * `fixedCode` that exact code is always expected.
 */
export interface MfaDevice {
  serialNumber: string;
  accountId: string;
  userName: string;
  totpSecret: string | undefined;
  fixedCode: string | undefined;
  enableDate: number;
}

export type InstanceStateName = 'pending' | 'running' | 'shutting-down' | 'terminated' | 'stopping' | 'stopped';

export const INSTANCE_STATE_CODES: Record<InstanceStateName, number> = {
  pending: 0,
  running: 16,
  'shutting-down': 32,
  terminated: 48,
  stopping: 64,
  stopped: 80,
};

export interface Instance {
  instanceId: string;
  accountId: string;
  reservationId: string;
  region: string;
  availabilityZone: string;
  state: InstanceStateName;
  imageId: string;
  instanceType: string;
  architecture: string;
  vpcId: string;
  subnetId: string;
  privateIp: string;
  /** Name of an instance profile in the instance's account. */
  instanceProfileName: string | undefined;
  tags: Tag[];
  /** When the instance last entered `pending` (the identity document's pendingTime). */
  pendingTime: number;
}

export interface Account {
  id: string;
  alias: string | undefined;
  createDate: number;
  users: Map<string, User>;
  groups: Map<string, Group>;
  roles: Map<string, Role>;
  /** Customer managed policies by ARN. */
  policies: Map<string, ManagedPolicy>;
  instanceProfiles: Map<string, InstanceProfile>;
  mfaDevices: Map<string, MfaDevice>;
  rootKeyIds: string[];
}

/** Who signed a request. ARNs and IDs are fixed when the credentials are issued. */
export type Principal =
  | { kind: 'root'; accountId: string }
  | { kind: 'user'; accountId: string; userName: string; userId: string; arn: string }
  | {
      kind: 'assumed-role';
      accountId: string;
      roleName: string;
      roleId: string;
      roleArn: string;
      sessionName: string;
    }
  | { kind: 'federated-user'; accountId: string; name: string };

export type TemporaryOrigin = 'AssumeRole' | 'GetFederationToken' | 'GetSessionToken' | 'InstanceMetadata';

export interface TemporaryCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiration: number;
  principal: Principal;
  origin: TemporaryOrigin;
  /** GetSessionToken called with a valid MFA code. */
  mfaAuthenticated: boolean;
}

/** What the signature check needs to know about an access key ID. */
export type KeyRecord = { kind: 'long-term'; key: AccessKey } | { kind: 'temporary'; credentials: TemporaryCredentials };

export const MAX_ACCESS_KEYS_PER_USER = 2;
const NAME_PATTERN = /^[\w+=,.@-]+$/;
const PATH_PATTERN = /^(\/|\/[\u0021-\u007e]+\/)$/;

export function principalArn(p: Principal): string {
  switch (p.kind) {
    case 'root':
      return `arn:aws:iam::${p.accountId}:root`;
    case 'user':
      return p.arn;
    case 'assumed-role':
      return `arn:aws:sts::${p.accountId}:assumed-role/${p.roleName}/${p.sessionName}`;
    case 'federated-user':
      return `arn:aws:sts::${p.accountId}:federated-user/${p.name}`;
  }
}

/** The `UserId` GetCallerIdentity reports. */
export function principalUserId(p: Principal): string {
  switch (p.kind) {
    case 'root':
      return p.accountId;
    case 'user':
      return p.userId;
    case 'assumed-role':
      return `${p.roleId}:${p.sessionName}`;
    case 'federated-user':
      return `${p.accountId}:${p.name}`;
  }
}

export function checkName(kind: string, name: string, max: number): void {
  if (name.length < 1 || name.length > max || !NAME_PATTERN.test(name)) {
    throw validationError(
      `1 validation error detected: Value '${name}' at '${kind}' failed to satisfy constraint: ` +
        `Member must satisfy regular expression pattern: [\\w+=,.@-]+ and have length between 1 and ${max}`,
    );
  }
}

export function checkPath(path: string): void {
  if (path.length > 512 || !PATH_PATTERN.test(path)) {
    throw validationError(
      'The specified value for path is invalid. It must begin and end with / and contain only ' +
        'alphanumeric characters and/or / characters.',
    );
  }
}

export function checkPolicyDocument(document: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(document);
  } catch {
    throw malformedPolicy('Syntax errors in policy.');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !('Statement' in parsed)) {
    throw malformedPolicy('Syntax errors in policy.');
  }
}

function checkTags(tags: Tag[]): void {
  if (tags.length > 50) throw limitExceeded('Cannot exceed quota for TagsPerUser: 50');
}

/** Merges tags the way Tag* calls do: a key that exists is overwritten in place. */
export function mergeTags(existing: Tag[], added: Tag[]): void {
  for (const tag of added) {
    const found = existing.find((t) => t.key === tag.key);
    if (found) found.value = tag.value;
    else existing.push({ ...tag });
  }
  checkTags(existing);
}

/** Provider-managed policies tests commonly attach; documents abridged, since nothing evaluates them. */
const AWS_MANAGED_POLICIES: Record<string, { Action?: string | string[]; NotAction?: string[] }> = {
  AdministratorAccess: { Action: '*' },
  PowerUserAccess: { NotAction: ['iam:*', 'organizations:*', 'account:*'] },
  ReadOnlyAccess: { Action: ['ec2:Describe*', 'iam:Get*', 'iam:List*', 's3:Get*', 's3:List*'] },
  IAMReadOnlyAccess: { Action: ['iam:GenerateCredentialReport', 'iam:Get*', 'iam:List*'] },
  AmazonEC2ReadOnlyAccess: { Action: 'ec2:Describe*' },
  AmazonS3ReadOnlyAccess: { Action: ['s3:Get*', 's3:List*'] },
};

export class Cloud1State {
  readonly accounts = new Map<string, Account>();
  /** Provider-owned policies (`arn:aws:iam::aws:policy/...`), visible from every account. */
  readonly awsPolicies = new Map<string, ManagedPolicy>();
  readonly keys = new Map<string, KeyRecord>();
  readonly instances = new Map<string, Instance>();

  constructor(readonly now: () => number) {
    for (const [name, statement] of Object.entries(AWS_MANAGED_POLICIES)) {
      const arn = `arn:aws:iam::aws:policy/${name}`;
      const document = JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', ...statement, Resource: '*' }] });
      this.awsPolicies.set(arn, newPolicy(name, '/', arn, document, undefined, 0));
    }
  }

  // --- accounts -------------------------------------------------------------------------------

  createAccount(id: string = ids.accountId(), alias?: string): Account {
    if (!/^\d{12}$/.test(id)) throw validationError(`Account ID must be 12 digits, got '${id}'`);
    if (this.accounts.has(id)) throw entityAlreadyExists(`Account ${id} already exists.`);
    const account: Account = {
      id,
      alias,
      createDate: this.now(),
      users: new Map(),
      groups: new Map(),
      roles: new Map(),
      policies: new Map(),
      instanceProfiles: new Map(),
      mfaDevices: new Map(),
      rootKeyIds: [],
    };
    this.accounts.set(id, account);
    return account;
  }

  account(id: string): Account {
    const account = this.accounts.get(id);
    if (!account) throw noSuchEntity(`The account ${id} does not exist.`);
    return account;
  }

  // --- users and keys -------------------------------------------------------------------------

  createUser(
    account: Account,
    input: { userName: string; path?: string; tags?: Tag[]; permissionsBoundaryArn?: string },
  ): User {
    const path = input.path ?? '/';
    checkName('userName', input.userName, 64);
    checkPath(path);
    const key = input.userName.toLowerCase();
    if (account.users.has(key)) throw entityAlreadyExists(`User with name ${input.userName} already exists.`);
    if (input.permissionsBoundaryArn !== undefined) this.boundaryPolicy(account, input.permissionsBoundaryArn);
    const tags: Tag[] = [];
    mergeTags(tags, input.tags ?? []);
    const user: User = {
      userName: input.userName,
      path,
      userId: ids.uniqueId('AIDA'),
      arn: `arn:aws:iam::${account.id}:user${path}${input.userName}`,
      createDate: this.now(),
      tags,
      groups: new Set(),
      permissionsBoundaryArn: input.permissionsBoundaryArn,
      accessKeyIds: [],
      inlinePolicies: new Map(),
      attachedPolicyArns: new Set(),
    };
    account.users.set(key, user);
    return user;
  }

  user(account: Account, userName: string): User {
    const user = account.users.get(userName.toLowerCase());
    if (!user) throw noSuchEntity(`The user with name ${userName} cannot be found.`);
    return user;
  }

  /** The provider refuses to delete a user that still owns anything. */
  deleteUser(account: Account, userName: string): void {
    const user = this.user(account, userName);
    if (user.accessKeyIds.length > 0) throw deleteConflict('Cannot delete entity, must delete access keys first.');
    if (user.inlinePolicies.size > 0) throw deleteConflict('Cannot delete entity, must delete policies first.');
    if (user.attachedPolicyArns.size > 0) throw deleteConflict('Cannot delete entity, must detach all policies first.');
    if (user.groups.size > 0) throw deleteConflict('Cannot delete entity, must remove users from group first.');
    for (const device of account.mfaDevices.values()) {
      if (device.userName.toLowerCase() === user.userName.toLowerCase()) {
        throw deleteConflict('Cannot delete entity, must delete MFA device first.');
      }
    }
    account.users.delete(userName.toLowerCase());
  }

  /**
   * Creates a key for a user, or for the account root when `userName` is undefined. Callers may
   * choose the key (demo seeds want stable credentials); otherwise one is generated.
   */
  createAccessKey(
    account: Account,
    userName: string | undefined,
    fixed?: { accessKeyId: string; secretAccessKey: string },
  ): AccessKey {
    const owned = userName === undefined ? account.rootKeyIds : this.user(account, userName).accessKeyIds;
    if (owned.length >= MAX_ACCESS_KEYS_PER_USER) {
      throw limitExceeded(`Cannot exceed quota for AccessKeysPerUser: ${MAX_ACCESS_KEYS_PER_USER}`);
    }
    if (fixed) {
      if (!/^AKIA[A-Z0-9]{12,124}$/.test(fixed.accessKeyId) || fixed.secretAccessKey.length < 16) {
        throw validationError('A fixed access key ID must match AKIA[A-Z0-9]{12,} and its secret be 16+ characters');
      }
      if (this.keys.has(fixed.accessKeyId)) throw entityAlreadyExists(`Access key ${fixed.accessKeyId} already exists.`);
    }
    const key: AccessKey = {
      accessKeyId: fixed?.accessKeyId ?? ids.accessKeyId(false),
      secretAccessKey: fixed?.secretAccessKey ?? ids.secretAccessKey(),
      status: 'Active',
      createDate: this.now(),
      accountId: account.id,
      userName: userName === undefined ? undefined : this.user(account, userName).userName,
    };
    owned.push(key.accessKeyId);
    this.keys.set(key.accessKeyId, { kind: 'long-term', key });
    return key;
  }

  /** A key of the given user (or root) by ID; keys of other users are "not found", as on the provider. */
  accessKey(account: Account, userName: string | undefined, accessKeyId: string): AccessKey {
    const owned = userName === undefined ? account.rootKeyIds : this.user(account, userName).accessKeyIds;
    const record = this.keys.get(accessKeyId);
    if (!owned.includes(accessKeyId) || record?.kind !== 'long-term') {
      throw noSuchEntity(`The Access Key with id ${accessKeyId} cannot be found.`);
    }
    return record.key;
  }

  deleteAccessKey(account: Account, userName: string | undefined, accessKeyId: string): void {
    this.accessKey(account, userName, accessKeyId);
    const owned = userName === undefined ? account.rootKeyIds : this.user(account, userName).accessKeyIds;
    owned.splice(owned.indexOf(accessKeyId), 1);
    this.keys.delete(accessKeyId);
  }

  // --- roles and instance profiles ------------------------------------------------------------

  createRole(
    account: Account,
    input: {
      roleName: string;
      path?: string;
      assumeRolePolicyDocument: string;
      description?: string;
      maxSessionDuration?: number;
      tags?: Tag[];
      permissionsBoundaryArn?: string;
    },
  ): Role {
    const path = input.path ?? '/';
    checkName('roleName', input.roleName, 64);
    checkPath(path);
    checkPolicyDocument(input.assumeRolePolicyDocument);
    const maxSessionDuration = input.maxSessionDuration ?? 3600;
    checkMaxSessionDuration(maxSessionDuration);
    const key = input.roleName.toLowerCase();
    if (account.roles.has(key)) throw entityAlreadyExists(`Role with name ${input.roleName} already exists.`);
    if (input.permissionsBoundaryArn !== undefined) this.boundaryPolicy(account, input.permissionsBoundaryArn);
    const tags: Tag[] = [];
    mergeTags(tags, input.tags ?? []);
    const role: Role = {
      roleName: input.roleName,
      path,
      roleId: ids.uniqueId('AROA'),
      arn: `arn:aws:iam::${account.id}:role${path}${input.roleName}`,
      createDate: this.now(),
      assumeRolePolicyDocument: input.assumeRolePolicyDocument,
      description: input.description,
      maxSessionDuration,
      tags,
      permissionsBoundaryArn: input.permissionsBoundaryArn,
      inlinePolicies: new Map(),
      attachedPolicyArns: new Set(),
    };
    account.roles.set(key, role);
    return role;
  }

  role(account: Account, roleName: string): Role {
    const role = account.roles.get(roleName.toLowerCase());
    if (!role) throw noSuchEntity(`The role with name ${roleName} cannot be found.`);
    return role;
  }

  createInstanceProfile(account: Account, input: { instanceProfileName: string; path?: string; tags?: Tag[] }): InstanceProfile {
    const path = input.path ?? '/';
    checkName('instanceProfileName', input.instanceProfileName, 128);
    checkPath(path);
    const key = input.instanceProfileName.toLowerCase();
    if (account.instanceProfiles.has(key)) {
      throw entityAlreadyExists(`Instance Profile ${input.instanceProfileName} already exists.`);
    }
    const tags: Tag[] = [];
    mergeTags(tags, input.tags ?? []);
    const profile: InstanceProfile = {
      instanceProfileName: input.instanceProfileName,
      path,
      instanceProfileId: ids.uniqueId('AIPA'),
      arn: `arn:aws:iam::${account.id}:instance-profile${path}${input.instanceProfileName}`,
      createDate: this.now(),
      roleNames: [],
      tags,
    };
    account.instanceProfiles.set(key, profile);
    return profile;
  }

  instanceProfile(account: Account, name: string): InstanceProfile {
    const profile = account.instanceProfiles.get(name.toLowerCase());
    if (!profile) throw noSuchEntity(`Instance Profile ${name} cannot be found.`);
    return profile;
  }

  addRoleToInstanceProfile(account: Account, profileName: string, roleName: string): void {
    const profile = this.instanceProfile(account, profileName);
    const role = this.role(account, roleName);
    if (profile.roleNames.length >= 1) {
      throw limitExceeded('Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1');
    }
    profile.roleNames.push(role.roleName.toLowerCase());
  }

  // --- managed policies -----------------------------------------------------------------------

  createPolicy(
    account: Account,
    input: { policyName: string; path?: string; document: string; description?: string; tags?: Tag[] },
  ): ManagedPolicy {
    const path = input.path ?? '/';
    checkName('policyName', input.policyName, 128);
    checkPath(path);
    checkPolicyDocument(input.document);
    const arn = `arn:aws:iam::${account.id}:policy${path}${input.policyName}`;
    for (const existing of account.policies.values()) {
      if (existing.policyName.toLowerCase() === input.policyName.toLowerCase()) {
        throw entityAlreadyExists(`A policy called ${input.policyName} already exists. Duplicate names are not allowed.`);
      }
    }
    const policy = newPolicy(input.policyName, path, arn, input.document, input.description, this.now());
    mergeTags(policy.tags, input.tags ?? []);
    account.policies.set(arn, policy);
    return policy;
  }

  /** A managed policy visible from `account`: its own or a provider-owned one. */
  policy(account: Account, arn: string): ManagedPolicy {
    const policy = account.policies.get(arn) ?? this.awsPolicies.get(arn);
    if (!policy) throw noSuchEntity(`Policy ${arn} does not exist or is not attachable.`);
    return policy;
  }

  private boundaryPolicy(account: Account, arn: string): ManagedPolicy {
    const policy = account.policies.get(arn) ?? this.awsPolicies.get(arn);
    if (!policy) throw noSuchEntity(`Scope ARN: ${arn} does not exist or is not attachable.`);
    return policy;
  }

  setPermissionsBoundary(account: Account, holder: { permissionsBoundaryArn: string | undefined }, arn: string): void {
    this.boundaryPolicy(account, arn);
    holder.permissionsBoundaryArn = arn;
  }

  /** How many users, groups and roles of `account` have the policy attached. */
  attachmentCount(account: Account, arn: string): number {
    let count = 0;
    for (const holders of [account.users, account.groups, account.roles] as Array<Map<string, PolicyHolder>>) {
      for (const holder of holders.values()) if (holder.attachedPolicyArns.has(arn)) count++;
    }
    return count;
  }

  // --- MFA ------------------------------------------------------------------------------------

  createMfaDevice(
    account: Account,
    input: { userName: string; serialNumber?: string; totpSecret?: string; fixedCode?: string },
  ): MfaDevice {
    const user = this.user(account, input.userName);
    const serialNumber = input.serialNumber ?? `arn:aws:iam::${account.id}:mfa/${user.userName}`;
    if (account.mfaDevices.has(serialNumber)) throw entityAlreadyExists(`MFA device ${serialNumber} already exists.`);
    if ((input.totpSecret === undefined) === (input.fixedCode === undefined)) {
      throw validationError('An MFA device needs exactly one of totpSecret (base32) or fixedCode');
    }
    if (input.fixedCode !== undefined && !/^\d{6}$/.test(input.fixedCode)) {
      throw validationError('fixedCode must be 6 digits');
    }
    const device: MfaDevice = {
      serialNumber,
      accountId: account.id,
      userName: user.userName,
      totpSecret: input.totpSecret,
      fixedCode: input.fixedCode,
      enableDate: this.now(),
    };
    account.mfaDevices.set(serialNumber, device);
    return device;
  }

  mfaDevice(serialNumber: string): MfaDevice | undefined {
    for (const account of this.accounts.values()) {
      const device = account.mfaDevices.get(serialNumber);
      if (device) return device;
    }
    return undefined;
  }

  // --- temporary credentials ------------------------------------------------------------------

  issueTemporary(
    principal: Principal,
    durationSeconds: number,
    origin: TemporaryOrigin,
    mfaAuthenticated = false,
  ): TemporaryCredentials {
    const credentials: TemporaryCredentials = {
      accessKeyId: ids.accessKeyId(true),
      secretAccessKey: ids.secretAccessKey(),
      sessionToken: ids.sessionToken(),
      // The provider reports whole seconds; keep the stored expiry identical to what clients see.
      expiration: Math.floor((this.now() + durationSeconds * 1000) / 1000) * 1000,
      principal,
      origin,
      mfaAuthenticated,
    };
    this.keys.set(credentials.accessKeyId, { kind: 'temporary', credentials });
    return credentials;
  }

  /** A role session, as AssumeRole and the metadata service's instance credentials produce. */
  roleSession(role: Role, accountId: string, sessionName: string): Principal {
    return {
      kind: 'assumed-role',
      accountId,
      roleName: role.roleName,
      roleId: role.roleId,
      roleArn: role.arn,
      sessionName,
    };
  }

  private lastSweep = 0;

  /**
   * Drops temporary credentials an hour past their expiry (at most once a minute), so long demo
   * runs do not accumulate them; until then they keep answering ExpiredToken.
   */
  sweepExpired(): void {
    const now = this.now();
    if (Math.abs(now - this.lastSweep) < 60_000) return;
    this.lastSweep = now;
    for (const [id, record] of this.keys) {
      if (record.kind === 'temporary' && record.credentials.expiration < now - 3600_000) this.keys.delete(id);
    }
  }

  // --- instances ------------------------------------------------------------------------------

  instance(instanceId: string): Instance | undefined {
    return this.instances.get(instanceId);
  }
}

export function checkMaxSessionDuration(seconds: number): void {
  if (!Number.isInteger(seconds) || seconds < 3600 || seconds > 43200) {
    throw validationError(
      `1 validation error detected: Value '${seconds}' at 'maxSessionDuration' failed to satisfy constraint: ` +
        'Member must have value between 3600 and 43200',
    );
  }
}

function newPolicy(
  policyName: string,
  path: string,
  arn: string,
  document: string,
  description: string | undefined,
  now: number,
): ManagedPolicy {
  return {
    policyName,
    path,
    policyId: ids.uniqueId('ANPA'),
    arn,
    createDate: now,
    updateDate: now,
    description,
    defaultVersionId: 'v1',
    versions: new Map([['v1', { versionId: 'v1', document, createDate: now }]]),
    nextVersion: 2,
    tags: [],
  };
}

/** The principal a verified key speaks for; long-term user keys resolve to the user as it is now. */
export function principalOf(state: Cloud1State, record: KeyRecord): Principal {
  if (record.kind === 'temporary') return record.credentials.principal;
  const { key } = record;
  if (key.userName === undefined) return { kind: 'root', accountId: key.accountId };
  const user = state.user(state.account(key.accountId), key.userName);
  return { kind: 'user', accountId: key.accountId, userName: user.userName, userId: user.userId, arn: user.arn };
}
