/**
 * Test kit: one cloud1 emulator per suite on 127.0.0.1, a fresh account per test with an IAM user
 * the engine acts as, and the secrets backend (directly, or mounted in a real Core) configured
 * with explicit credentials and both endpoints pointed at the emulator. Nothing reaches a real
 * endpoint or the link-local metadata address: the SDK's metadata lookups are disabled and the
 * engine's credential chain gets an empty environment.
 */
import { randomUUID } from 'node:crypto';
import { CreateGroupCommand, GetUserCommand, IAMClient } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import {
  BackendHarness, FakeClock, type BackendRequest, type BackendResponse, type Caller, type Logger,
} from '@strongroom/core';
import { Cloud1EmulatorFixture, type Credentials } from '@strongroom/emulators';
import { createCloud1SecretsBackend, type Cloud1SecretsBackend } from '../cloud1-secrets-engine';
import type { Cloud1SecretsOptions } from '../context';

process.env.AWS_EC2_METADATA_DISABLED = 'true';

export interface SessionCredentials extends Credentials {
  sessionToken?: string;
}

export interface Account {
  accountId: string;
  /** The account root's keys, for the test's own checks. */
  root: Credentials;
  /** The IAM user the engine is configured with (one access key). */
  engineUser: { userName: string; credentials: Credentials };
}

export class EmulatorFixture extends Cloud1EmulatorFixture {
  /** Engine options: an empty environment, so nothing outside the test configures it. */
  options(): Cloud1SecretsOptions {
    return { env: {} };
  }

  account(): Account {
    const { accountId, root } = this.newAccount();
    const user = this.emulator.createUser(accountId, { userName: 'strongroom', accessKeys: 1 });
    return { accountId, root, engineUser: { userName: user.userName, credentials: user.accessKeys[0] as Credentials } };
  }

  /** config/root for `credentials`, both endpoints at the emulator. */
  rootConfig(credentials: Credentials, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const api = this.endpoints.api;
    return {
      access_key: credentials.accessKeyId, secret_key: credentials.secretAccessKey,
      iam_endpoint: api, sts_endpoint: api, region: 'us-east-1', ...extra,
    };
  }

  private clientConfig(credentials: SessionCredentials) {
    return { endpoint: this.endpoints.api, region: 'us-east-1', credentials, maxAttempts: 2 };
  }

  /** An IAM client acting as `credentials`, for checks of what the engine made. */
  iam(credentials: SessionCredentials): IAMClient {
    return new IAMClient(this.clientConfig(credentials));
  }

  /** Who `credentials` speak for (a signed GetCallerIdentity); throws when they do not work. */
  async whoAmI(credentials: SessionCredentials): Promise<string> {
    const sts = new STSClient(this.clientConfig(credentials));
    try {
      const out = await sts.send(new GetCallerIdentityCommand({}));
      return out.Arn ?? '';
    } finally {
      sts.destroy();
    }
  }

  /** Whether `credentials` are refused (a signed call fails with the provider's auth error). */
  async refused(credentials: SessionCredentials): Promise<string | null> {
    try {
      await this.whoAmI(credentials);
      return null;
    } catch (err) {
      return (err as { name?: string }).name ?? 'Error';
    }
  }

  /** Whether an IAM user exists in `account`. */
  async userExists(account: Account, userName: string): Promise<boolean> {
    const iam = this.iam(account.root);
    try {
      await iam.send(new GetUserCommand({ UserName: userName }));
      return true;
    } catch (err) {
      if ((err as { name?: string }).name === 'NoSuchEntityException') return false;
      throw err;
    } finally {
      iam.destroy();
    }
  }

  async createGroup(account: Account, groupName: string): Promise<void> {
    const iam = this.iam(account.root);
    try {
      await iam.send(new CreateGroupCommand({ GroupName: groupName }));
    } finally {
      iam.destroy();
    }
  }
}

/** Credentials from a creds/ or sts/ response's data. */
export function credentialsOf(data: Record<string, unknown> | null | undefined): SessionCredentials {
  const d = data ?? {};
  const sessionToken = d['session_token'];
  return {
    accessKeyId: String(d['access_key']), secretAccessKey: String(d['secret_key']),
    ...(typeof sessionToken === 'string' ? { sessionToken } : {}),
  };
}

/** A caller as the router would pass it, with the token's display name. */
export function caller(displayName: string): Caller {
  return {
    accessor: 'accessor', policies: ['root'], displayName, entityId: '', isRoot: true, tokenHash: 'hash', tokenType: 'service',
    metadata: {}, sudo: true,
  };
}

/** A logger that keeps what it is told, so tests can check nothing secret is logged. */
export class RecordingLogger implements Logger {
  readonly lines: string[] = [];
  debug(msg: string, fields?: Record<string, unknown>): void { this.lines.push(`${msg} ${JSON.stringify(fields ?? {})}`); }
  info(msg: string, fields?: Record<string, unknown>): void { this.lines.push(`${msg} ${JSON.stringify(fields ?? {})}`); }
  warn(msg: string, fields?: Record<string, unknown>): void { this.lines.push(`${msg} ${JSON.stringify(fields ?? {})}`); }
  error(msg: string, fields?: Record<string, unknown>): void { this.lines.push(`${msg} ${JSON.stringify(fields ?? {})}`); }
}

export interface BackendRig {
  fixture: EmulatorFixture;
  backend: Cloud1SecretsBackend;
  h: BackendHarness;
  clock: FakeClock;
  logger: RecordingLogger;
  account: Account;
  write(path: string, data?: Record<string, unknown>, as?: Caller): Promise<BackendResponse | null>;
  read(path: string, data?: Record<string, unknown>, as?: Caller): Promise<BackendResponse | null>;
  /** A request as core makes for its own work (lease revocation and renewal, periodic tasks). */
  internalRequest(): BackendRequest;
  /** Runs the backend's periodic task as core would on the active node. */
  periodic(): Promise<void>;
  /** Revokes a lease the way core does, with the response's secret. */
  revoke(resp: BackendResponse | null): Promise<void>;
}

/** The backend over in-memory storage, configured for a fresh account of `fixture`. */
export async function backendRig(fixture: EmulatorFixture, rootExtra: Record<string, unknown> = {}): Promise<BackendRig> {
  const clock = new FakeClock(Date.now());
  const logger = new RecordingLogger();
  const backend = createCloud1SecretsBackend({ clock, logger }, fixture.options());
  const h = new BackendHarness(backend, { path: 'cloud1/', defaultLeaseTtl: 768 * 3600, maxLeaseTtl: 768 * 3600 });
  const account = fixture.account();
  await h.request('write', 'config/root', fixture.rootConfig(account.engineUser.credentials, rootExtra));
  const internalRequest = (): BackendRequest => ({
    id: randomUUID(), operation: 'delete', path: '', mount: h.mount, storage: h.storage, data: {}, headers: {},
    namespace: { id: 'root', path: '' },
  });
  return {
    fixture, backend, h, clock, logger, account, internalRequest,
    write: (path, data = {}, as) => h.request('write', path, data, as),
    read: (path, data = {}, as) => h.request('read', path, data, as),
    periodic: () => backend.periodic(internalRequest()),
    async revoke(resp) {
      const secret = resp?.secret;
      if (!secret) throw new Error('the response carries no lease');
      const type = backend.secretTypes[secret.type];
      if (!type) throw new Error(`no secret type ${secret.type}`);
      await type.revoke(internalRequest(), secret.internal);
    },
  };
}
