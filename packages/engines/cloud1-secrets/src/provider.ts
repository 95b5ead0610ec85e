/**
 * Every call this engine makes to the provider goes through here, through the official SDK
 * clients pointed at config/root's endpoints. Clients are made per operation and destroyed after
 * it, so a changed config/root takes effect on the next call. Messages name the call that failed
 * and the provider's error, never a secret.
 */
import type * as Iam from '@aws-sdk/client-iam';
import type * as Sts from '@aws-sdk/client-sts';
import { credentialChain, ProviderError, type CredentialProvider } from '@strongroom/cloud1-client';
import { BadRequestError, StrongroomError } from '@strongroom/core';
import type { Cloud1SecretsOptions } from './context';
import type { RootConfig } from './path-config-root';

// The SDKs are loaded on the first call to the provider, not when a server starts.
const iamSdk = (): typeof Iam => require('@aws-sdk/client-iam') as typeof Iam;
const stsSdk = (): typeof Sts => require('@aws-sdk/client-sts') as typeof Sts;

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** Temporary credentials as STS hands them out, with who they speak for. */
export interface StsResult extends Required<Credentials> {
  /** The assumed-role session's or federated user's ARN (none for session tokens). */
  arn?: string;
}

export interface AccessKeyInfo {
  accessKeyId: string;
  /** Milliseconds since the epoch (0 when the provider did not say). */
  created: number;
}


export { ProviderError };

export function isNoSuchEntity(err: unknown): boolean {
  const name = (err as { name?: string } | null)?.name;
  return name === 'NoSuchEntityException' || name === 'NoSuchEntity';
}

export function isEntityAlreadyExists(err: unknown): boolean {
  const name = (err as { name?: string } | null)?.name;
  return name === 'EntityAlreadyExistsException' || name === 'EntityAlreadyExists';
}

/** Thrown inside `deleteUser` once the user itself is known to be gone; never escapes it. */
const USER_GONE = Symbol('the IAM user is gone');


/** config/root's region, else CLOUD1_REGION, else CLOUD1_DEFAULT_REGION, else us-east-1. */
export function effectiveRegion(config: RootConfig, env: NodeJS.ProcessEnv): string {
  return config.region || env['CLOUD1_REGION'] || env['CLOUD1_DEFAULT_REGION'] || 'us-east-1';
}

function stsResult(c: Sts.Credentials | undefined, arn: string | undefined): StsResult {
  if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken) throw new Error('STS answered without credentials');
  return {
    accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken, ...(arn ? { arn } : {}),
  };
}

/** What a new IAM user gets, in the order it is applied. */
export interface NewUser {
  userName: string;
  path: string;
  permissionsBoundaryArn: string;
  tags: Record<string, string>;
  groups: string[];
  policyArns: string[];
  /** Inline policy (JSON), put under `policyName`; '' for none. */
  policyDocument: string;
  policyName: string;
}

/** Session policies for AssumeRole and GetFederationToken. */
export interface SessionPolicies {
  policyDocument: string;
  policyArns: string[];
}

export class Provider {
  constructor(private readonly options: Cloud1SecretsOptions) {}

  private get env(): NodeJS.ProcessEnv {
    return this.options.env ?? process.env;
  }

  region(config: RootConfig): string {
    return effectiveRegion(config, this.env);
  }

  private common(config: RootConfig, credentials?: Credentials) {
    return {
      region: this.region(config),
      credentials: credentials ?? credentialChain(config, this.env, 'config/root'),
      ...(config.maxRetries >= 0 ? { maxAttempts: config.maxRetries + 1 } : {}),
    };
  }

  private iam(config: RootConfig, credentials?: Credentials): Iam.IAMClient {
    return new (iamSdk().IAMClient)({ ...this.common(config, credentials), ...(config.iamEndpoint ? { endpoint: config.iamEndpoint } : {}) });
  }

  private sts(config: RootConfig): Sts.STSClient {
    return new (stsSdk().STSClient)({ ...this.common(config), ...(config.stsEndpoint ? { endpoint: config.stsEndpoint } : {}) });
  }

  /** Runs `fn` with a client, destroys it, and names `action` in any provider failure. */
  private async using<C extends { destroy(): void }, T>(client: C, action: string, fn: (c: C) => Promise<T>): Promise<T> {
    try {
      return await fn(client);
    } catch (err) {
      if (err instanceof StrongroomError) throw err;
      throw new ProviderError(action, err);
    } finally {
      client.destroy();
    }
  }

  // --- IAM users of iam_user credentials --------------------------------------------------------

  /**
   * Creates the user with its path, boundary and tags, adds it to its groups, attaches and puts
   * its policies, then makes its access key. `userCreated` runs as soon as CreateUser has
   * succeeded, before any other step: from then on the user is this caller's to remove. Throws
   * at the first failure, leaving whatever was made; when CreateUser itself failed nothing was
   * made (and a user of that name, if any, is someone else's). Otherwise the caller removes the
   * user with `deleteUser` (which copes with a half-made user).
   */
  createUser(config: RootConfig, user: NewUser, userCreated: () => Promise<void>): Promise<Credentials> {
    return this.using(this.iam(config), `creating IAM user ${user.userName}`, async (iam) => {
      const tags = Object.entries(user.tags).map(([Key, Value]) => ({ Key, Value }));
      await iam.send(new (iamSdk().CreateUserCommand)({
        UserName: user.userName, Path: user.path,
        ...(user.permissionsBoundaryArn ? { PermissionsBoundary: user.permissionsBoundaryArn } : {}),
        ...(tags.length > 0 ? { Tags: tags } : {}),
      }));
      await userCreated();
      for (const group of user.groups) await iam.send(new (iamSdk().AddUserToGroupCommand)({ GroupName: group, UserName: user.userName }));
      for (const arn of user.policyArns) await iam.send(new (iamSdk().AttachUserPolicyCommand)({ UserName: user.userName, PolicyArn: arn }));
      if (user.policyDocument !== '') {
        await iam.send(new (iamSdk().PutUserPolicyCommand)({ UserName: user.userName, PolicyName: user.policyName, PolicyDocument: user.policyDocument }));
      }
      const out = await iam.send(new (iamSdk().CreateAccessKeyCommand)({ UserName: user.userName }));
      if (!out.AccessKey?.AccessKeyId || !out.AccessKey.SecretAccessKey) throw new Error('no access key in the answer');
      return { accessKeyId: out.AccessKey.AccessKeyId, secretAccessKey: out.AccessKey.SecretAccessKey };
    });
  }

  /**
   * Removes a user and everything the provider requires gone first: access keys, inline
   * policies, attached policies and group memberships. What is there is listed rather than
   * taken from the role, which may have changed since.
   *
   * Each step stands alone: a NoSuchEntity about the step's own target (a key, policy or
   * membership that went meanwhile) counts as done and the next steps still run. Only when the
   * user itself is gone (GetUser says so) is the whole removal done; a user already gone counts
   * as removed. Any other error throws, so the caller (core, for a lease) retries.
   */
  deleteUser(config: RootConfig, userName: string): Promise<void> {
    return this.using(this.iam(config), `deleting IAM user ${userName}`, async (iam) => {
      const userPresent = (): Promise<boolean> => this.userPresent(iam, userName);
      /**
       * Runs one step. On NoSuchEntity: the user gone ends the removal; otherwise the step's
       * target is what is missing, which counts as done when `targetGoneIsDone` (a delete of
       * one item) and is an error for steps whose only target is the user.
       */
      const step = async <T>(run: () => Promise<T>, targetGoneIsDone: boolean): Promise<T | undefined> => {
        try {
          return await run();
        } catch (err) {
          if (!isNoSuchEntity(err)) throw err;
          if (!(await userPresent())) throw USER_GONE;
          if (targetGoneIsDone) return undefined;
          throw err;
        }
      };
      try {
        for (const key of (await step(() => this.keysOf(iam, userName), false)) ?? []) {
          await step(() => iam.send(new (iamSdk().DeleteAccessKeyCommand)({ UserName: userName, AccessKeyId: key.accessKeyId })), true);
        }
        const inline = await step(() => pages((Marker) => iam.send(new (iamSdk().ListUserPoliciesCommand)({ UserName: userName, Marker })), (o) => o.PolicyNames), false);
        for (const name of inline ?? []) {
          await step(() => iam.send(new (iamSdk().DeleteUserPolicyCommand)({ UserName: userName, PolicyName: name })), true);
        }
        const attached = await step(() => pages((Marker) => iam.send(new (iamSdk().ListAttachedUserPoliciesCommand)({ UserName: userName, Marker })), (o) => o.AttachedPolicies), false);
        for (const policy of attached ?? []) {
          const arn = policy.PolicyArn;
          if (arn) await step(() => iam.send(new (iamSdk().DetachUserPolicyCommand)({ UserName: userName, PolicyArn: arn })), true);
        }
        const groups = await step(() => pages((Marker) => iam.send(new (iamSdk().ListGroupsForUserCommand)({ UserName: userName, Marker })), (o) => o.Groups), false);
        for (const group of groups ?? []) {
          const name = group.GroupName;
          if (name) await step(() => iam.send(new (iamSdk().RemoveUserFromGroupCommand)({ UserName: userName, GroupName: name })), true);
        }
        await step(() => iam.send(new (iamSdk().DeleteUserCommand)({ UserName: userName })), false);
      } catch (err) {
        if (err === USER_GONE) return;
        throw err;
      }
    });
  }

  // --- STS credentials --------------------------------------------------------------------------

  /** The inline documents and attached ARNs of IAM groups, to add to a session's policies. */
  groupPolicies(config: RootConfig, groups: string[]): Promise<SessionPolicies[]> {
    if (groups.length === 0) return Promise.resolve([]);
    return this.using(this.iam(config), 'reading the policies of iam_groups', async (iam) => {
      const out: SessionPolicies[] = [];
      for (const group of groups) {
        const names = await pages((Marker) => iam.send(new (iamSdk().ListGroupPoliciesCommand)({ GroupName: group, Marker })), (o) => o.PolicyNames);
        for (const name of names) {
          const doc = await iam.send(new (iamSdk().GetGroupPolicyCommand)({ GroupName: group, PolicyName: name }));
          // The provider answers policy documents URL-encoded.
          if (doc.PolicyDocument) out.push({ policyDocument: decodeURIComponent(doc.PolicyDocument), policyArns: [] });
        }
        const attached = await pages((Marker) => iam.send(new (iamSdk().ListAttachedGroupPoliciesCommand)({ GroupName: group, Marker })), (o) => o.AttachedPolicies);
        out.push({ policyDocument: '', policyArns: attached.flatMap((p) => (p.PolicyArn ? [p.PolicyArn] : [])) });
      }
      return out;
    });
  }

  assumeRole(config: RootConfig, input: { roleArn: string; sessionName: string; ttl: number } & SessionPolicies): Promise<StsResult> {
    return this.using(this.sts(config), `assuming role ${input.roleArn}`, async (sts) => {
      const out = await sts.send(new (stsSdk().AssumeRoleCommand)({
        RoleArn: input.roleArn, RoleSessionName: input.sessionName, DurationSeconds: input.ttl,
        ...(input.policyDocument ? { Policy: input.policyDocument } : {}),
        ...(input.policyArns.length > 0 ? { PolicyArns: input.policyArns.map((arn) => ({ arn })) } : {}),
      }));
      return stsResult(out.Credentials, out.AssumedRoleUser?.Arn);
    });
  }

  federationToken(config: RootConfig, input: { name: string; ttl: number } & SessionPolicies): Promise<StsResult> {
    return this.using(this.sts(config), `getting a federation token for ${input.name}`, async (sts) => {
      const out = await sts.send(new (stsSdk().GetFederationTokenCommand)({
        Name: input.name, DurationSeconds: input.ttl,
        ...(input.policyDocument ? { Policy: input.policyDocument } : {}),
        ...(input.policyArns.length > 0 ? { PolicyArns: input.policyArns.map((arn) => ({ arn })) } : {}),
      }));
      return stsResult(out.Credentials, out.FederatedUser?.Arn);
    });
  }

  sessionToken(config: RootConfig, input: { ttl: number; serialNumber?: string; tokenCode?: string }): Promise<StsResult> {
    return this.using(this.sts(config), 'getting a session token', async (sts) => {
      const out = await sts.send(new (stsSdk().GetSessionTokenCommand)({
        DurationSeconds: input.ttl,
        ...(input.serialNumber ? { SerialNumber: input.serialNumber, TokenCode: input.tokenCode } : {}),
      }));
      return stsResult(out.Credentials, undefined);
    });
  }

  // --- access keys of existing users (static roles, rotate-root) ---------------------------------

  private async keysOf(iam: Iam.IAMClient, userName: string | undefined): Promise<AccessKeyInfo[]> {
    const keys = await pages((Marker) => iam.send(new (iamSdk().ListAccessKeysCommand)({ ...(userName ? { UserName: userName } : {}), Marker })), (o) => o.AccessKeyMetadata);
    return keys.flatMap((k) => (k.AccessKeyId ? [{ accessKeyId: k.AccessKeyId, created: k.CreateDate?.getTime() ?? 0 }] : []));
  }

  /** Whether an IAM user exists. */
  userExists(config: RootConfig, userName: string): Promise<boolean> {
    return this.using(this.iam(config), `looking up IAM user ${userName}`, (iam) => this.userPresent(iam, userName));
  }

  private async userPresent(iam: Iam.IAMClient, userName: string): Promise<boolean> {
    try {
      await iam.send(new (iamSdk().GetUserCommand)({ UserName: userName }));
      return true;
    } catch (err) {
      if (isNoSuchEntity(err)) return false;
      throw err;
    }
  }

  /** A user's access keys, oldest first (the provider lists them in creation order). */
  accessKeys(config: RootConfig, userName: string): Promise<AccessKeyInfo[]> {
    return this.using(this.iam(config), `listing the access keys of ${userName}`, async (iam) => {
      const keys = await this.keysOf(iam, userName);
      // A stable sort: keys made within one second keep the provider's order.
      return keys.map((k, i) => ({ k, i })).sort((a, b) => a.k.created - b.k.created || a.i - b.i).map((x) => x.k);
    });
  }

  createAccessKey(config: RootConfig, userName: string): Promise<Credentials> {
    return this.using(this.iam(config), `creating an access key for ${userName}`, async (iam) => {
      const out = await iam.send(new (iamSdk().CreateAccessKeyCommand)({ UserName: userName }));
      if (!out.AccessKey?.AccessKeyId || !out.AccessKey.SecretAccessKey) throw new Error('no access key in the answer');
      return { accessKeyId: out.AccessKey.AccessKeyId, secretAccessKey: out.AccessKey.SecretAccessKey };
    });
  }

  /** Deletes a key of `userName`; one already gone counts as deleted. */
  deleteAccessKey(config: RootConfig, userName: string, accessKeyId: string): Promise<void> {
    return this.using(this.iam(config), `deleting access key ${accessKeyId} of ${userName}`, async (iam) => {
      try {
        await iam.send(new (iamSdk().DeleteAccessKeyCommand)({ UserName: userName, AccessKeyId: accessKeyId }));
      } catch (err) {
        if (!isNoSuchEntity(err)) throw err;
      }
    });
  }

  /**
   * Makes a new key for the IAM user behind config/root's static key. Refused while that user
   * has another key, so the rotation leaves exactly one. Answers the new key and the user's name.
   */
  createRootKey(config: RootConfig): Promise<{ credentials: Credentials; userName: string | undefined }> {
    const old: Credentials = { accessKeyId: config.accessKey, secretAccessKey: config.secretKey };
    return this.using(this.iam(config, old), 'creating a new root access key', async (iam) => {
      const user = await iam.send(new (iamSdk().GetUserCommand)({}));
      const userName = user.User?.UserName;
      const others = (await this.keysOf(iam, userName)).filter((k) => k.accessKeyId !== config.accessKey);
      if (others.length > 0) {
        throw new BadRequestError(
          `cannot rotate the root credentials: the IAM user ${userName ?? '(account root)'} has another access key; `
          + 'delete it first, so the rotation leaves a single key',
        );
      }
      const out = await iam.send(new (iamSdk().CreateAccessKeyCommand)(userName ? { UserName: userName } : {}));
      if (!out.AccessKey?.AccessKeyId || !out.AccessKey.SecretAccessKey) throw new Error('no access key in the answer');
      return { credentials: { accessKeyId: out.AccessKey.AccessKeyId, secretAccessKey: out.AccessKey.SecretAccessKey }, userName };
    });
  }

  /** Deletes the old root key, signing with the new one (which proves the new key works). */
  deleteRootKey(config: RootConfig, credentials: Credentials, userName: string | undefined, oldKeyId: string): Promise<void> {
    return this.using(this.iam(config, credentials), `deleting the old root access key ${oldKeyId}`, async (iam) => {
      await iam.send(new (iamSdk().DeleteAccessKeyCommand)({ AccessKeyId: oldKeyId, ...(userName ? { UserName: userName } : {}) }));
    });
  }
}

/** Every item of a paginated IAM list (Marker / IsTruncated). */
async function pages<O extends { IsTruncated?: boolean; Marker?: string }, I>(
  call: (marker: string | undefined) => Promise<O>, items: (out: O) => I[] | undefined,
): Promise<I[]> {
  const all: I[] = [];
  let marker: string | undefined;
  for (;;) {
    const out = await call(marker);
    all.push(...(items(out) ?? []));
    if (!out.IsTruncated || !out.Marker) return all;
    marker = out.Marker;
  }
}
