/**
 * Every call this auth method makes to the provider goes through here, through the official SDK
 * clients pointed at the configured endpoints. Clients are made per operation and destroyed
 * after it, so a changed config/client takes effect on the next call.
 */
import type * as Ec2 from '@aws-sdk/client-ec2';
import type * as Iam from '@aws-sdk/client-iam';
import type * as Sts from '@aws-sdk/client-sts';
import { credentialChain, ProviderError, type CredentialProvider } from '@strongroom/cloud1-client';
import { BadRequestError, getJson, type LogicalStorage } from '@strongroom/core';
import type { Cloud1Context } from './context';
import type { ClientConfig } from './path-config-client';
import { KEYS } from './storage-keys';

// The SDKs are loaded on the first call to the provider, not when a server starts: most servers
// never make one, and loading them is a good part of a start's time.
const ec2Sdk = (): typeof Ec2 => require('@aws-sdk/client-ec2') as typeof Ec2;
const iamSdk = (): typeof Iam => require('@aws-sdk/client-iam') as typeof Iam;
const stsSdk = (): typeof Sts => require('@aws-sdk/client-sts') as typeof Sts;

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}


export { ProviderError };


export class Provider {
  constructor(private readonly ctx: Cloud1Context) {}

  private get env(): NodeJS.ProcessEnv {
    return this.ctx.options.env ?? process.env;
  }

  /** The region of calls that are not tied to an instance's region (IAM, STS). */
  defaultRegion(): string {
    return this.env['CLOUD1_REGION'] || 'us-east-1';
  }

  private common(config: ClientConfig, region: string, credentials: Credentials | CredentialProvider) {
    return {
      region,
      credentials,
      ...(config.maxRetries >= 0 ? { maxAttempts: config.maxRetries + 1 } : {}),
    };
  }

  private base(config: ClientConfig): CredentialProvider {
    return credentialChain(config, this.env, 'config/client');
  }

  /**
   * Credentials to act on `accountId`: those of an STS role registered for it under config/sts
   * (assumed with the base credentials), else the base credentials.
   */
  async credentialsFor(storage: LogicalStorage, config: ClientConfig, accountId: string): Promise<Credentials | CredentialProvider> {
    const sts = accountId === '' ? null : await getJson<{ stsRole: string }>(storage, KEYS.stsPrefix + accountId);
    if (!sts) return this.base(config);
    const client = this.stsClient(config);
    try {
      const out = await client.send(new (stsSdk().AssumeRoleCommand)({ RoleArn: sts.stsRole, RoleSessionName: 'strongroom-cloud1-auth', DurationSeconds: 900 }));
      const c = out.Credentials;
      if (!c?.AccessKeyId || !c.SecretAccessKey) throw new Error('STS returned no credentials');
      return { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, ...(c.SessionToken ? { sessionToken: c.SessionToken } : {}) };
    } catch (err) {
      throw new ProviderError(`assuming the STS role "${sts.stsRole}" of account ${accountId}`, err);
    } finally {
      client.destroy();
    }
  }

  private stsClient(config: ClientConfig, credentials?: Credentials): Sts.STSClient {
    return new (stsSdk().STSClient)({
      ...this.common(config, config.stsRegion || this.defaultRegion(), credentials ?? this.base(config)),
      ...(config.stsEndpoint ? { endpoint: config.stsEndpoint } : {}),
    });
  }

  private iamClient(config: ClientConfig, credentials: Credentials | CredentialProvider): Iam.IAMClient {
    return new (iamSdk().IAMClient)({
      ...this.common(config, this.defaultRegion(), credentials),
      ...(config.iamEndpoint ? { endpoint: config.iamEndpoint } : {}),
    });
  }

  /** One instance as the compute API describes it, in `region` of `accountId`; null when unknown. */
  async describeInstance(storage: LogicalStorage, config: ClientConfig, accountId: string, region: string, instanceId: string): Promise<Ec2.Instance | null> {
    const credentials = await this.credentialsFor(storage, config, accountId);
    const client = new (ec2Sdk().EC2Client)({ ...this.common(config, region, credentials), ...(config.endpoint ? { endpoint: config.endpoint } : {}) });
    try {
      const out = await client.send(new (ec2Sdk().DescribeInstancesCommand)({ InstanceIds: [instanceId] }));
      return out.Reservations?.[0]?.Instances?.[0] ?? null;
    } catch (err) {
      if ((err as { name?: string }).name === 'InvalidInstanceID.NotFound') return null;
      throw new ProviderError(`describing instance ${instanceId}`, err);
    } finally {
      client.destroy();
    }
  }

  /** The ARN of the (first) role in an instance profile. */
  async instanceProfileRoleArn(storage: LogicalStorage, config: ClientConfig, accountId: string, profileName: string): Promise<string | undefined> {
    const client = this.iamClient(config, await this.credentialsFor(storage, config, accountId));
    try {
      const out = await client.send(new (iamSdk().GetInstanceProfileCommand)({ InstanceProfileName: profileName }));
      return out.InstanceProfile?.Roles?.[0]?.Arn;
    } catch (err) {
      throw new ProviderError(`reading instance profile ${profileName}`, err);
    } finally {
      client.destroy();
    }
  }

  /** The unique ID and full ARN (with its path) of an IAM user or role, by name in `accountId`. */
  async principal(
    storage: LogicalStorage, config: ClientConfig, accountId: string, type: 'user' | 'role', name: string,
  ): Promise<{ uniqueId: string; arn: string }> {
    const client = this.iamClient(config, await this.credentialsFor(storage, config, accountId));
    try {
      if (type === 'user') {
        const out = await client.send(new (iamSdk().GetUserCommand)({ UserName: name }));
        if (!out.User?.UserId || !out.User.Arn) throw new Error('no user in the answer');
        return { uniqueId: out.User.UserId, arn: out.User.Arn };
      }
      const out = await client.send(new (iamSdk().GetRoleCommand)({ RoleName: name }));
      if (!out.Role?.RoleId || !out.Role.Arn) throw new Error('no role in the answer');
      return { uniqueId: out.Role.RoleId, arn: out.Role.Arn };
    } catch (err) {
      throw new ProviderError(`looking up IAM ${type} ${name}`, err);
    } finally {
      client.destroy();
    }
  }

  /**
   * Replaces the static access key with a new one of the same IAM user. Refused while the user
   * has a second key (the rotation must leave exactly one). Answers the new key; the old one is
   * deleted with the new credentials, which proves they work.
   */
  async rotateAccessKey(config: ClientConfig): Promise<Credentials> {
    const old: Credentials = { accessKeyId: config.accessKey, secretAccessKey: config.secretKey };
    const client = this.iamClient(config, old);
    let created: Credentials;
    let userName: string | undefined;
    try {
      const user = await client.send(new (iamSdk().GetUserCommand)({}));
      userName = user.User?.UserName;
      const keys = await client.send(new (iamSdk().ListAccessKeysCommand)(userName ? { UserName: userName } : {}));
      const others = (keys.AccessKeyMetadata ?? []).filter((k) => k.AccessKeyId !== config.accessKey);
      if (others.length > 0) {
        throw new BadRequestError(
          `cannot rotate the root credentials: the IAM user ${userName ?? '(account root)'} has another access key (${others.length}); `
          + 'delete it first, so the rotation leaves a single key',
        );
      }
      const out = await client.send(new (iamSdk().CreateAccessKeyCommand)(userName ? { UserName: userName } : {}));
      if (!out.AccessKey?.AccessKeyId || !out.AccessKey.SecretAccessKey) throw new Error('no access key in the answer');
      created = { accessKeyId: out.AccessKey.AccessKeyId, secretAccessKey: out.AccessKey.SecretAccessKey };
    } catch (err) {
      if (err instanceof BadRequestError) throw err;
      throw new ProviderError('creating a new access key', err);
    } finally {
      client.destroy();
    }
    return created;
  }

  /** Deletes `oldKeyId` using `credentials` (the new key). */
  async deleteAccessKey(config: ClientConfig, credentials: Credentials, oldKeyId: string): Promise<void> {
    const client = this.iamClient(config, credentials);
    try {
      const user = await client.send(new (iamSdk().GetUserCommand)({}));
      const userName = user.User?.UserName;
      await client.send(new (iamSdk().DeleteAccessKeyCommand)({ AccessKeyId: oldKeyId, ...(userName ? { UserName: userName } : {}) }));
    } catch (err) {
      throw new ProviderError(`deleting the old access key ${oldKeyId}`, err);
    } finally {
      client.destroy();
    }
  }
}
