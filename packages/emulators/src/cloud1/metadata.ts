/**
 * The instance metadata service, IMDSv2 only: a session token from `PUT /latest/api/token` is
 * required on every read, and a token is bound to the instance it was issued for.
 *
 * Which instance a request speaks for:
 * - on a dedicated listener (`Cloud1Emulator.openMetadataEndpoint(instanceId)`), always that one;
 * - on the shared metadata listener, the instance named by a `/instances/<instance-id>` path
 *   prefix (`/instances/i-0abc.../latest/meta-data/instance-id`), else the current instance set
 *   with `useInstance`. SDK credential providers ignore any path in their endpoint, so they need
 *   the current instance or a dedicated listener.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as ids from './ids';
import { identityDocument, type IdentitySigner } from './instance-identity';
import { instanceProfileOf, privateDnsName } from './ec2';
import type { Cloud1State, Instance, TemporaryCredentials } from './state';

const MAX_TOKEN_TTL_SECONDS = 21600;
/** The provider hands out instance role credentials valid for about six hours. */
const INSTANCE_CREDENTIALS_SECONDS = 6 * 3600;
/** Credentials are renewed once less than this is left, as the provider does ahead of expiry. */
const RENEW_BEFORE_MS = 15 * 60 * 1000;

const DIRECTORIES = new Set([
  '/latest/meta-data/',
  '/latest/meta-data/placement/',
  '/latest/meta-data/iam/',
  '/latest/meta-data/iam/security-credentials/',
  '/latest/dynamic/instance-identity/',
]);

const TOKEN_TTL_HEADER = 'x-aws-ec2-metadata-token-ttl-seconds';
const TOKEN_HEADER = 'x-aws-ec2-metadata-token';

interface MetadataToken {
  instanceId: string;
  expires: number;
}

const isoSeconds = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export class MetadataService {
  private readonly tokens = new Map<string, MetadataToken>();
  private readonly roleCredentials = new Map<string, TemporaryCredentials>();
  /** The instance the shared listener speaks for when no path prefix names one. */
  currentInstanceId: string | undefined;

  constructor(
    private readonly state: Cloud1State,
    private readonly signer: () => IdentitySigner,
  ) {}

  reset(): void {
    this.tokens.clear();
    this.roleCredentials.clear();
    this.currentInstanceId = undefined;
  }

  async handle(req: IncomingMessage, res: ServerResponse, fixedInstanceId: string | undefined): Promise<void> {
    let path = new URL(req.url ?? '/', 'http://metadata').pathname;
    let instanceId = fixedInstanceId;
    if (instanceId === undefined) {
      const prefixed = /^\/instances\/([^/]+)(\/.*)$/.exec(path);
      if (prefixed) {
        instanceId = prefixed[1];
        path = prefixed[2] ?? '/';
      } else {
        instanceId = this.currentInstanceId;
      }
    }
    const instance = instanceId === undefined ? undefined : this.state.instance(instanceId);
    if (!instance) return send(res, 404, 'No instance is selected on this metadata endpoint (see useInstance).');
    const now = this.state.now();

    if (path === '/latest/api/token') {
      if (req.method !== 'PUT') return send(res, 405, 'Method Not Allowed', { allow: 'PUT' });
      // The provider refuses token requests that went through a proxy.
      if (req.headers['x-forwarded-for'] !== undefined) return send(res, 403, 'Forbidden');
      const ttl = Number(req.headers[TOKEN_TTL_HEADER]);
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TOKEN_TTL_SECONDS) return send(res, 400, 'Bad Request');
      for (const [value, issued] of this.tokens) if (issued.expires <= now) this.tokens.delete(value);
      const token = ids.metadataToken();
      this.tokens.set(token, { instanceId: instance.instanceId, expires: now + ttl * 1000 });
      return send(res, 200, token, { [TOKEN_TTL_HEADER]: String(ttl) });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'Method Not Allowed', { allow: 'GET' });
    const tokenValue = req.headers[TOKEN_HEADER];
    const token = typeof tokenValue === 'string' ? this.tokens.get(tokenValue) : undefined;
    if (!token || token.instanceId !== instance.instanceId || token.expires <= now) return send(res, 401, 'Unauthorized');

    const body = await this.read(instance, path, now);
    if (body === undefined) return send(res, 404, 'Not Found');
    return send(res, 200, body);
  }

  private async read(instance: Instance, requested: string, now: number): Promise<string | undefined> {
    // Listings answer with or without their trailing slash, as on the provider.
    const path = DIRECTORIES.has(requested + '/') ? requested + '/' : requested;
    const profile = instanceProfileOf(this.state, instance);
    const roleKey = profile?.roleNames[0];
    const roleName = roleKey === undefined ? undefined : this.state.accounts.get(instance.accountId)?.roles.get(roleKey)?.roleName;
    const hostname = privateDnsName(instance);
    switch (path) {
      case '/latest/meta-data/':
        return [
          'ami-id',
          'ami-launch-index',
          'hostname',
          ...(profile ? ['iam/'] : []),
          'instance-id',
          'instance-type',
          'local-hostname',
          'local-ipv4',
          'placement/',
        ].join('\n');
      case '/latest/meta-data/ami-id':
        return instance.imageId;
      case '/latest/meta-data/ami-launch-index':
        return '0';
      case '/latest/meta-data/instance-id':
        return instance.instanceId;
      case '/latest/meta-data/instance-type':
        return instance.instanceType;
      case '/latest/meta-data/hostname':
      case '/latest/meta-data/local-hostname':
        return hostname;
      case '/latest/meta-data/local-ipv4':
        return instance.privateIp;
      case '/latest/meta-data/placement/':
        return 'availability-zone\nregion';
      case '/latest/meta-data/placement/availability-zone':
        return instance.availabilityZone;
      case '/latest/meta-data/placement/region':
        return instance.region;
      case '/latest/dynamic/instance-identity/':
        return 'document\npkcs7\nrsa2048\nsignature';
      case '/latest/dynamic/instance-identity/document':
        return identityDocument(instance);
      case '/latest/dynamic/instance-identity/signature':
        return this.signer().signature(identityDocument(instance));
      case '/latest/dynamic/instance-identity/pkcs7':
      case '/latest/dynamic/instance-identity/rsa2048':
        return await this.signer().pkcs7(identityDocument(instance), now);
    }
    if (!profile) return undefined;
    if (path === '/latest/meta-data/iam/') return 'info\nsecurity-credentials/';
    if (path === '/latest/meta-data/iam/info') {
      return pretty({
        Code: 'Success',
        LastUpdated: isoSeconds(now),
        InstanceProfileArn: profile.arn,
        InstanceProfileId: profile.instanceProfileId,
      });
    }
    if (roleName === undefined) return undefined;
    if (path === '/latest/meta-data/iam/security-credentials/') return roleName;
    if (path === `/latest/meta-data/iam/security-credentials/${roleName}`) {
      const credentials = this.credentialsFor(instance, roleName, now);
      if (!credentials) return undefined;
      return pretty({
        Code: 'Success',
        LastUpdated: isoSeconds(credentials.expiration - INSTANCE_CREDENTIALS_SECONDS * 1000),
        Type: 'AWS-HMAC',
        AccessKeyId: credentials.accessKeyId,
        SecretAccessKey: credentials.secretAccessKey,
        Token: credentials.sessionToken,
        Expiration: isoSeconds(credentials.expiration),
      });
    }
    return undefined;
  }

  /** Instance role credentials: an assumed-role session named after the instance, reused until near expiry. */
  private credentialsFor(instance: Instance, roleName: string, now: number): TemporaryCredentials | undefined {
    const account = this.state.accounts.get(instance.accountId);
    const role = account?.roles.get(roleName.toLowerCase());
    if (!account || !role) return undefined;
    const cached = this.roleCredentials.get(instance.instanceId);
    if (
      cached &&
      cached.expiration - now > RENEW_BEFORE_MS &&
      cached.principal.kind === 'assumed-role' &&
      cached.principal.roleId === role.roleId &&
      this.state.keys.has(cached.accessKeyId)
    ) {
      return cached;
    }
    const principal = this.state.roleSession(role, account.id, instance.instanceId);
    const credentials = this.state.issueTemporary(principal, INSTANCE_CREDENTIALS_SECONDS, 'InstanceMetadata');
    this.roleCredentials.set(instance.instanceId, credentials);
    return credentials;
  }
}

/** JSON the way the metadata service prints it: two-space indent, `"key" : value`. */
function pretty(value: Record<string, string>): string {
  return `{\n${Object.entries(value).map(([k, v]) => `  ${JSON.stringify(k)} : ${JSON.stringify(v)}`).join(',\n')}\n}`;
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
