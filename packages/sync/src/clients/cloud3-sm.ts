import { sign } from 'node:crypto';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { credentials as grpcCredentials, status as grpcStatus } from '@grpc/grpc-js';
import type * as SecretManager from '@google-cloud/secret-manager';
import type { Destination } from '../destination';
import type { SyncSettings } from '../destination-types';
import { MANAGED_TAG } from './cloud1-sm';
import { DestinationError, MISSING, type DestinationClient } from './destination-client';

// The SDK is loaded when a destination of this type is first used, not when a server starts.
const secretManager = (): typeof SecretManager => require('@google-cloud/secret-manager') as typeof SecretManager;

interface ServiceAccount {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  project_id?: string;
}

interface GrpcError {
  code?: number;
  details?: string;
  message?: string;
}

/** The service's answers that say the request (credentials, names, sizes) was wrong, not the service. */
const REQUEST_FAULTS = new Set<number>([
  grpcStatus.INVALID_ARGUMENT, grpcStatus.NOT_FOUND, grpcStatus.ALREADY_EXISTS, grpcStatus.PERMISSION_DENIED,
  grpcStatus.UNAUTHENTICATED, grpcStatus.FAILED_PRECONDITION, grpcStatus.OUT_OF_RANGE,
]);

function failure(err: unknown): DestinationError {
  const e = err as GrpcError;
  const code = typeof e.code === 'number' ? e.code : undefined;
  const name = code !== undefined ? (grpcStatus[code] ?? String(code)) : 'Error';
  return new DestinationError(code !== undefined && REQUEST_FAULTS.has(code) ? 'CLIENT_SIDE_ERROR' : 'EXTERNAL_SERVICE_ERROR',
    `cloud3-sm: ${name}: ${e.details || e.message || String(err)}`);
}

const codeOf = (err: unknown) => (err as GrpcError).code;

function isLoopback(host: string): boolean {
  return host === 'localhost' || (isIP(host) === 4 && host.startsWith('127.')) || host === '::1';
}

/** The project a service account belongs to: its key file says, or its address does. */
function projectOf(account: ServiceAccount): string {
  if (account.project_id) return account.project_id;
  const m = /@([a-z][a-z0-9-]{4,28}[a-z0-9])\.iam\.gserviceaccount\.com$/.exec(account.client_email);
  if (!m) throw new DestinationError('CLIENT_SIDE_ERROR', 'cloud3-sm: the credentials name no project (no "project_id", and the account\'s address is not a project\'s)');
  return m[1] as string;
}

/** A short-lived token the account signs itself, as the client library sends over TLS; over plaintext gRPC it sends none. */
function selfSignedJwt(account: ServiceAccount, now: number): string {
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const iat = Math.floor(now / 1000);
  const head = enc({ alg: 'RS256', typ: 'JWT', ...(account.private_key_id ? { kid: account.private_key_id } : {}) });
  const body = enc({ iss: account.client_email, sub: account.client_email, aud: 'https://secretmanager.googleapis.com/', iat, exp: iat + 3600 });
  return `${head}.${body}.${sign('sha256', Buffer.from(`${head}.${body}`), account.private_key).toString('base64url')}`;
}

/**
 * A secret manager through the vendor's SDK with the destination's service account. Each KV
 * version adds one version to the external secret; removing deletes the secret with its versions.
 * The endpoint is an operator setting; plaintext gRPC is used only to a loopback address.
 */
export function cloud3SmClient(d: Destination, settings: SyncSettings): DestinationClient {
  const account = JSON.parse(d.connection['credentials'] as string) as ServiceAccount;
  const project = projectOf(account);
  const endpoint = settings.cloud3SmEndpoint;
  const plaintext = endpoint !== undefined && isLoopback(endpoint.host);
  const client = new (secretManager().SecretManagerServiceClient)({
    credentials: { client_email: account.client_email, private_key: account.private_key },
    projectId: project,
    ...(endpoint ? {
      apiEndpoint: endpoint.host,
      port: endpoint.port,
      sslCreds: plaintext ? grpcCredentials.createInsecure()
        : grpcCredentials.createSsl(settings.extraCaCertificates ? Buffer.from([...rootCertificates, settings.extraCaCertificates].join('\n')) : null),
    } : {}),
  });
  const labels = { ...d.custom_tags, [MANAGED_TAG]: 'true' };
  // The queue retries with its own backoff.
  const options = () => ({
    retry: null,
    timeout: 30_000,
    ...(plaintext ? { otherArgs: { headers: { authorization: `Bearer ${selfSignedJwt(account, Date.now())}` } } } : {}),
  });
  const secretPath = (name: string) => `projects/${project}/secrets/${name}`;

  async function latest(name: string): Promise<string | null> {
    try {
      const [version] = await client.accessSecretVersion({ name: `${secretPath(name)}/versions/latest` }, options());
      const data = version.payload?.data;
      return data === undefined || data === null ? null : Buffer.from(data as Uint8Array).toString('utf8');
    } catch (err) {
      // No secret, no version yet, or the newest disabled or destroyed: a version is to be added.
      if (codeOf(err) === grpcStatus.NOT_FOUND || codeOf(err) === grpcStatus.FAILED_PRECONDITION) return null;
      throw err;
    }
  }

  return {
    async put(name, value) {
      try {
        // A version has no request token: an attempt repeated after one that landed adds nothing.
        if ((await latest(name)) === value) return;
        try {
          await client.createSecret({ parent: `projects/${project}`, secretId: name, secret: { replication: { automatic: {} }, labels } }, options());
        } catch (err) {
          if (codeOf(err) !== grpcStatus.ALREADY_EXISTS) throw err;
        }
        await client.addSecretVersion({ parent: secretPath(name), payload: { data: Buffer.from(value, 'utf8') } }, options());
      } catch (err) {
        throw failure(err);
      }
    },
    async read(name) {
      try {
        const value = await latest(name);
        // A secret without a readable version is as good as missing: a put adds one.
        return value === null ? MISSING : { exists: true, value };
      } catch (err) {
        throw failure(err);
      }
    },
    async remove(name) {
      try {
        await client.deleteSecret({ name: secretPath(name) }, options());
      } catch (err) {
        if (codeOf(err) !== grpcStatus.NOT_FOUND) throw failure(err);
      }
    },
    close: () => client.close(),
  };
}
