/**
 * Test kit: one cloud1 emulator per suite on 127.0.0.1, a fresh account per test, and the auth
 * backend (directly, or mounted in a real Core) configured with explicit credentials and every
 * endpoint pointed at the emulator. Nothing reaches a real endpoint or the link-local metadata
 * address: the SDK's metadata lookups are disabled and the credential chain gets an empty
 * environment.
 */
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { BackendHarness, FakeClock, silentLogger, type BackendResponse } from '@strongroom/core';
import { Cloud1EmulatorFixture, type Credentials, type InstanceSeed } from '@strongroom/emulators';
import { createCloud1AuthBackend, type Cloud1AuthBackend } from '../cloud1-auth-engine';
import type { Cloud1AuthOptions } from '../context';

process.env.AWS_EC2_METADATA_DISABLED = 'true';

export interface SessionCredentials extends Credentials {
  sessionToken?: string;
}

export class EmulatorFixture extends Cloud1EmulatorFixture {
  /** Backend options: an empty environment, and regional STS mapped to the emulator. */
  options(): Cloud1AuthOptions {
    return { env: {}, stsEndpointForRegion: () => this.endpoints.api };
  }

  account(): { accountId: string; root: Credentials } {
    return this.newAccount();
  }

  /** config/client for `credentials`, every endpoint at the emulator. */
  clientConfig(credentials: Credentials, extra: Record<string, unknown> = {}): Record<string, unknown> {
    const api = this.endpoints.api;
    return {
      access_key: credentials.accessKeyId, secret_key: credentials.secretAccessKey,
      endpoint: api, iam_endpoint: api, sts_endpoint: api, sts_region: 'us-east-1', ...extra,
    };
  }

  /** The emulator's identity-signing certificate, for config/certificate. */
  certificate(): string {
    return this.emulator.caCertificatePem();
  }

  instance(seed: InstanceSeed) {
    return this.emulator.createInstance(seed);
  }

  /** One IMDSv2 read for an instance, as code on that instance would make it. */
  async metadata(instanceId: string, path: string): Promise<string> {
    const base = `${this.endpoints.metadata}/instances/${instanceId}/latest`;
    const token = await (await fetch(`${base}/api/token`, { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '300' } })).text();
    const res = await fetch(`${base}/${path}`, { headers: { 'x-aws-ec2-metadata-token': token } });
    if (!res.ok) throw new Error(`metadata ${path} answered ${res.status}`);
    return res.text();
  }

  /** Login data of a `vm` login with the PKCS#7 (rsa2048) signature, newlines removed. */
  async pkcs7Login(instanceId: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const pkcs7 = (await this.metadata(instanceId, 'dynamic/instance-identity/rsa2048')).replace(/\n/g, '');
    return { pkcs7, ...extra };
  }

  /** Login data of a `vm` login with the document and its signature. */
  async identityLogin(instanceId: string, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const document = await this.metadata(instanceId, 'dynamic/instance-identity/document');
    const signature = await this.metadata(instanceId, 'dynamic/instance-identity/signature');
    return { identity: Buffer.from(document).toString('base64'), signature: signature.replace(/\n/g, ''), ...extra };
  }

  /** The instance role's session credentials from the metadata service (session named after the instance). */
  async instanceCredentials(instanceId: string): Promise<SessionCredentials> {
    const roleName = (await this.metadata(instanceId, 'meta-data/iam/security-credentials/')).trim();
    const c = JSON.parse(await this.metadata(instanceId, `meta-data/iam/security-credentials/${roleName}`)) as {
      AccessKeyId: string; SecretAccessKey: string; Token: string;
    };
    return { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.Token };
  }
}

export interface IamLoginOptions {
  serverId?: string;
  /** Extra headers to sign (and send). */
  headers?: Record<string, string>;
  region?: string;
  host?: string;
  body?: string;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** Login data of an `iam` login: a GetCallerIdentity request signed with `credentials`, unsent. */
export async function iamLogin(credentials: SessionCredentials, options: IamLoginOptions = {}): Promise<Record<string, unknown>> {
  const host = options.host ?? 'sts.amazonaws.com';
  const body = options.body ?? 'Action=GetCallerIdentity&Version=2011-06-15';
  const signer = new SignatureV4({ credentials, region: options.region ?? 'us-east-1', service: 'sts', sha256: Hash.bind(null, 'sha256') });
  const signed = await signer.sign({
    method: 'POST', protocol: 'https:', hostname: host, path: '/', query: {},
    headers: {
      host, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      ...(options.serverId !== undefined ? { 'x-service-cloud1-iam-server-id': options.serverId } : {}),
      ...(options.headers ?? {}),
    },
    body,
  });
  const headers = Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k, [v]]));
  return {
    iam_http_request_method: 'POST', iam_request_url: b64(`https://${host}/`), iam_request_body: b64(body),
    iam_request_headers: b64(JSON.stringify(headers)),
  };
}

export interface BackendRig {
  fixture: EmulatorFixture;
  backend: Cloud1AuthBackend;
  h: BackendHarness;
  clock: FakeClock;
  accountId: string;
  root: Credentials;
  /** Writes `path` and returns the response. */
  write(path: string, data?: Record<string, unknown>): Promise<BackendResponse | null>;
  read(path: string): Promise<BackendResponse | null>;
  login(data: Record<string, unknown>): Promise<NonNullable<BackendResponse['login']>>;
}

/** The backend over in-memory storage, configured for a fresh account of `fixture` with its certificate registered. */
export async function backendRig(fixture: EmulatorFixture, clientExtra: Record<string, unknown> = {}): Promise<BackendRig> {
  const clock = new FakeClock(Date.now());
  const backend = createCloud1AuthBackend({ clock, logger: silentLogger }, fixture.options());
  const h = new BackendHarness(backend, { path: 'auth/cloud1/', defaultLeaseTtl: 768 * 3600, maxLeaseTtl: 768 * 3600 });
  const { accountId, root } = fixture.account();
  await h.request('write', 'config/client', fixture.clientConfig(root, clientExtra));
  await h.request('write', 'config/certificate/emulator-pkcs7', { cloud1_public_cert: fixture.certificate(), type: 'pkcs7' });
  await h.request('write', 'config/certificate/emulator-identity', { cloud1_public_cert: fixture.certificate(), type: 'identity' });
  return {
    fixture, backend, h, clock, accountId, root,
    write: (path, data = {}) => h.request('write', path, data),
    read: (path) => h.request('read', path),
    async login(data) {
      const resp = await h.request('write', 'login', data);
      if (!resp?.login) throw new Error(`login answered no login: ${JSON.stringify(resp)}`);
      return resp.login;
    },
  };
}
