/**
 * The cloud1 provider emulator: one HTTP listener that answers IAM, STS and EC2 query-protocol
 * calls (and the admin API under /_admin/), and one for the instance metadata service. Official
 * SDK clients talk to it unchanged when their endpoint points here.
 *
 * Request flow on the API listener: read the body; tell the service from the credential scope
 * (or, for unsigned requests, from the `Version` parameter); verify the SigV4 signature against
 * the keys this emulator issued; run the action on the caller's account; answer with the
 * service's XML, or its XML error shape. Every response carries a `Date` header from the
 * emulator's clock, which is what lets SDK clients correct their clock skew when a test moves
 * the emulator's time.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  handleAdmin,
  type AdminOperations,
  type Cloud1Endpoints,
  type Credentials,
  type InstanceInfo,
  type MfaDeviceInfo,
  type MfaDeviceSeed,
  type RoleInfo,
  type RoleSeed,
  type SeedDocument,
  type SeedResult,
  type UserInfo,
  type UserSeed,
} from './admin';
import { createInstance, EC2_ACTIONS, instanceProfileOf, type InstanceSeed } from './ec2';
import { Cloud1Error, invalidAction, validationError } from './errors';
import { IAM_ACTIONS, checkIamAllowed } from './iam';
import * as ids from './ids';
import { IdentitySigner } from './instance-identity';
import { MetadataService } from './metadata';
import { SecretsManager, type SecretsManagerSecretView } from './secrets-manager';
import type { Params } from './query';
import type { ActionTable, CallContext } from './service';
import { signedService, verifySignature, type ReceivedRequest } from './sigv4';
import { Cloud1State, INSTANCE_STATE_CODES, principalOf, type Instance, type InstanceStateName } from './state';
import { checkStsAllowed, STS_ACTIONS } from './sts';
import { randomTotpSecret, totpCode } from './totp';
import { EC2_NAMESPACE, ec2ErrorResponse, ec2Response, IAM_NAMESPACE, queryErrorResponse, queryResponse, STS_NAMESPACE } from './xml';

/** Structurally the same as core's Clock, so a FakeClock can be injected; only `now` is used. */
export interface Cloud1Clock {
  now(): number;
}

export interface Cloud1StartOptions {
  /** `host:port` for the API listener; port 0 picks a free one. Default `127.0.0.1:0`. */
  listen?: string;
  /** `host:port` for the shared metadata listener. Default: same host, a free port. */
  metadataListen?: string;
  /** Base clock; the admin clock calls move an offset on top of it. Default: system time. */
  clock?: Cloud1Clock;
}

interface ServiceDefinition {
  version: string;
  actions: ActionTable;
  /** awsQuery (IAM, STS) or ec2Query responses and errors. */
  style: 'query' | 'ec2';
  namespace: string;
  check?: (ctx: CallContext, action: string) => void;
}

const SERVICES: Record<string, ServiceDefinition> = {
  iam: { version: '2010-05-08', actions: IAM_ACTIONS, style: 'query', namespace: IAM_NAMESPACE, check: checkIamAllowed },
  sts: { version: '2011-06-15', actions: STS_ACTIONS, style: 'query', namespace: STS_NAMESPACE, check: checkStsAllowed },
  ec2: { version: '2016-11-15', actions: EC2_ACTIONS, style: 'ec2', namespace: EC2_NAMESPACE },
};

const MAX_BODY_BYTES = 1024 * 1024;

const defaultTrustPolicy = (accountId: string): string =>
  JSON.stringify({
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { AWS: `arn:aws:iam::${accountId}:root`, Service: 'ec2.amazonaws.com' },
        Action: 'sts:AssumeRole',
      },
    ],
  });

const tagList = (tags: Record<string, string> | undefined) => Object.entries(tags ?? {}).map(([key, value]) => ({ key, value }));

export class Cloud1Emulator implements AdminOperations {
  private baseClock: Cloud1Clock = { now: () => Date.now() };
  private offsetMs = 0;
  private readonly state = new Cloud1State(() => this.now());
  private readonly metadata = new MetadataService(this.state, () => this.requireSigner());
  private signer: IdentitySigner | undefined;
  private apiServer: Server | undefined;
  private metadataServer: Server | undefined;
  /** Listeners opened by openMetadataEndpoint, by instance ID. */
  private readonly dedicated = new Map<string, { server: Server; url: string }>();
  private urls: Cloud1Endpoints | undefined;
  private readonly secretsManager = new SecretsManager();
  private secretsManagerFaults = { remaining: 0, status: 503 };

  async start(options: Cloud1StartOptions = {}): Promise<Cloud1Endpoints> {
    if (this.apiServer) throw new Error('The cloud1 emulator is already started');
    if (options.clock) this.baseClock = options.clock;
    this.signer = await IdentitySigner.create(this.now());
    const api = parseListen(options.listen ?? '127.0.0.1:0');
    const meta = parseListen(options.metadataListen ?? `${api.host}:0`);
    this.apiServer = await listen((req, res) => this.handleApi(req, res), api.host, api.port);
    this.metadataServer = await listen((req, res) => this.metadata.handle(req, res, undefined), meta.host, meta.port);
    const apiUrl = urlOf(this.apiServer, api.host);
    this.urls = { api: apiUrl, metadata: urlOf(this.metadataServer, meta.host), admin: `${apiUrl}/_admin/` };
    return this.urls;
  }

  /** Closes every listener and its open connections (keep-alive sockets included). */
  async stop(): Promise<void> {
    const servers = [this.apiServer, this.metadataServer, ...[...this.dedicated.values()].map((d) => d.server)];
    this.apiServer = undefined;
    this.metadataServer = undefined;
    this.dedicated.clear();
    this.urls = undefined;
    await Promise.all(servers.map((s) => (s ? close(s) : undefined)));
  }

  get endpoints(): Cloud1Endpoints {
    if (!this.urls) throw new Error('The cloud1 emulator is not started');
    return this.urls;
  }

  // --- time -----------------------------------------------------------------------------------

  now(): number {
    return this.baseClock.now() + this.offsetMs;
  }

  /** Moves the emulator's time (token expiry, signature skew, TOTP) without touching the base clock. */
  advanceTime(ms: number): void {
    this.offsetMs += ms;
  }

  setTime(epochMs: number): void {
    if (!Number.isFinite(epochMs)) throw validationError('setTime needs epoch milliseconds');
    this.offsetMs = epochMs - this.baseClock.now();
  }

  // --- admin operations -----------------------------------------------------------------------

  /** Forgets all accounts, keys, instances and metadata tokens; keeps listeners, CA and clock. */
  reset(): void {
    this.state.accounts.clear();
    this.state.keys.clear();
    this.state.instances.clear();
    this.metadata.reset();
    this.secretsManager.reset();
    this.secretsManagerFaults = { remaining: 0, status: 503 };
  }

  /** Every Secrets Manager secret of every account and region, with all versions and values. */
  secretsManagerSecrets(): SecretsManagerSecretView[] {
    return this.secretsManager.view(this.now());
  }

  /**
   * Fault injection: the next `count` Secrets Manager requests are answered with `status`
   * (a `ServiceUnavailableException`) before anything is checked or changed.
   */
  failNextSecretsManagerRequests(count: number, status = 503): void {
    if (!Number.isInteger(count) || count < 0) throw validationError('count must be a non-negative integer');
    if (!Number.isInteger(status) || status < 400 || status > 599) throw validationError('status must be 4xx or 5xx');
    this.secretsManagerFaults = { remaining: count, status };
  }

  createAccount(input: { id?: string; alias?: string } = {}): { accountId: string } {
    return { accountId: this.state.createAccount(input.id, input.alias).id };
  }

  issueRootCredentials(accountId: string, fixed?: Credentials): Credentials {
    const key = this.state.createAccessKey(this.state.account(accountId), undefined, fixed);
    return { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey };
  }

  createUser(accountId: string, seed: UserSeed): UserInfo {
    const account = this.state.account(accountId);
    const user = this.state.createUser(account, { userName: seed.userName, path: seed.path, tags: tagList(seed.tags) });
    const wanted = seed.accessKeys ?? 0;
    const fixed = typeof wanted === 'number' ? Array.from({ length: wanted }, () => undefined) : wanted;
    const accessKeys = fixed.map((f) => {
      const key = this.state.createAccessKey(account, user.userName, f);
      return { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey };
    });
    return { userName: user.userName, userId: user.userId, arn: user.arn, accessKeys };
  }

  createAccessKey(accountId: string, userName: string): Credentials {
    const key = this.state.createAccessKey(this.state.account(accountId), userName);
    return { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey };
  }

  createRole(accountId: string, seed: RoleSeed): RoleInfo {
    const account = this.state.account(accountId);
    const trust =
      seed.trustPolicy === undefined
        ? defaultTrustPolicy(account.id)
        : typeof seed.trustPolicy === 'string'
          ? seed.trustPolicy
          : JSON.stringify(seed.trustPolicy);
    const role = this.state.createRole(account, {
      roleName: seed.roleName,
      path: seed.path,
      assumeRolePolicyDocument: trust,
      maxSessionDuration: seed.maxSessionDuration,
      tags: tagList(seed.tags),
    });
    const info: RoleInfo = { roleName: role.roleName, roleId: role.roleId, arn: role.arn };
    if (seed.instanceProfile) {
      const name = seed.instanceProfile === true ? role.roleName : seed.instanceProfile;
      const profile = this.state.createInstanceProfile(account, { instanceProfileName: name, path: seed.path });
      this.state.addRoleToInstanceProfile(account, profile.instanceProfileName, role.roleName);
      info.instanceProfileName = profile.instanceProfileName;
      info.instanceProfileArn = profile.arn;
    }
    return info;
  }

  createMfaDevice(accountId: string, seed: MfaDeviceSeed): MfaDeviceInfo {
    const generated = seed.totpSecret === undefined && seed.fixedCode === undefined ? randomTotpSecret() : undefined;
    const device = this.state.createMfaDevice(this.state.account(accountId), {
      userName: seed.userName,
      serialNumber: seed.serialNumber,
      totpSecret: seed.totpSecret ?? generated,
      fixedCode: seed.fixedCode,
    });
    return device.totpSecret === undefined
      ? { serialNumber: device.serialNumber }
      : { serialNumber: device.serialNumber, totpSecret: device.totpSecret };
  }

  /** The code the device's owner would type now (by the emulator's clock). */
  mfaCode(serialNumber: string): string {
    const device = this.state.mfaDevice(serialNumber);
    if (!device) throw new Cloud1Error('NoSuchEntity', 404, `MFA device ${serialNumber} does not exist.`);
    return device.fixedCode ?? totpCode(device.totpSecret ?? '', this.now());
  }

  createInstance(seed: InstanceSeed): InstanceInfo {
    return this.instanceInfo(createInstance(this.state, seed));
  }

  describeInstance(instanceId: string): InstanceInfo {
    return this.instanceInfo(this.requireInstance(instanceId));
  }

  /** Entering `pending` (a start) refreshes pendingTime, as on the provider. */
  setInstanceState(instanceId: string, state: InstanceStateName): InstanceInfo {
    const instance = this.requireInstance(instanceId);
    if (!(state in INSTANCE_STATE_CODES)) throw validationError(`Invalid instance state ${String(state)}`);
    if (state === 'pending' || (state === 'running' && instance.state !== 'pending' && instance.state !== 'running')) {
      instance.pendingTime = Math.floor(this.now() / 1000) * 1000;
    }
    instance.state = state;
    return this.instanceInfo(instance);
  }

  /** Selects the instance the shared metadata listener speaks for (undefined: none). */
  useInstance(instanceId: string | undefined): void {
    if (instanceId !== undefined) this.requireInstance(instanceId);
    this.metadata.currentInstanceId = instanceId;
  }

  /** A metadata listener of its own for one instance, on the metadata host and a free port. */
  async openMetadataEndpoint(instanceId: string): Promise<string> {
    this.requireInstance(instanceId);
    const existing = this.dedicated.get(instanceId);
    if (existing) return existing.url;
    const host = new URL(this.endpoints.metadata).hostname.replace(/^\[(.*)\]$/, '$1');
    const server = await listen((req, res) => this.metadata.handle(req, res, instanceId), host, 0);
    const url = urlOf(server, host);
    this.dedicated.set(instanceId, { server, url });
    return url;
  }

  /** The certificate that verifies `signature`, `pkcs7` and `rsa2048` (PEM). */
  caCertificatePem(): string {
    return this.requireSigner().certificatePem;
  }

  /** Loads a whole seed document (the CLI's --seed file); returns the credentials it created. */
  seed(document: SeedDocument): SeedResult {
    const result: SeedResult = { accounts: [] };
    for (const seed of document.accounts ?? []) {
      const { accountId } = this.createAccount({ id: seed.id, alias: seed.alias });
      const out: SeedResult['accounts'][number] = { id: accountId, users: [], roles: [], instances: [] };
      if (seed.rootCredentials) {
        out.rootCredentials = this.issueRootCredentials(accountId, seed.rootCredentials === true ? undefined : seed.rootCredentials);
      }
      for (const user of seed.users ?? []) {
        const info = this.createUser(accountId, user);
        const mfaDevices = (user.mfaDevices ?? []).map((d) => this.createMfaDevice(accountId, { ...d, userName: info.userName }));
        out.users.push({ ...info, mfaDevices });
      }
      for (const role of seed.roles ?? []) out.roles.push(this.createRole(accountId, role));
      for (const instance of seed.instances ?? []) out.instances.push(this.createInstance({ ...instance, accountId }));
      result.accounts.push(out);
    }
    if (document.currentInstance !== undefined) this.useInstance(document.currentInstance);
    return result;
  }

  // --- request handling -----------------------------------------------------------------------

  private async handleApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    if (body === undefined) {
      res.writeHead(413, { 'content-type': 'text/plain' }).end('Request Entity Too Large');
      return;
    }
    if ((req.url ?? '').startsWith('/_admin/')) return handleAdmin(this, req, res, body);

    const requestId = ids.requestId();
    const params = parseParams(req, body);
    const received = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body };
    const serviceName = signedService(received) ?? serviceForVersion(params.get('Version'));
    const target = req.headers['x-amz-target'];
    if (serviceName === 'secretsmanager' || (typeof target === 'string' && target.startsWith('secretsmanager.'))) {
      return this.handleSecretsManager(received, res, typeof target === 'string' ? target : '');
    }
    const service = serviceName === undefined ? undefined : SERVICES[serviceName];
    const now = this.now();
    const headers = { 'x-amzn-requestid': requestId, date: new Date(now).toUTCString(), 'content-type': 'text/xml' };
    try {
      if (!service) {
        throw new Cloud1Error('UnknownService', 400, `This endpoint serves iam, sts, ec2 and secretsmanager, not '${serviceName ?? 'unknown'}'`);
      }
      const action = params.get('Action') ?? '';
      const handler = service.actions.get(action);
      const verified = await verifySignature(received, (id) => this.state.keys.get(id), now).catch((error: unknown) => {
        throw service.style === 'ec2' ? ec2AuthError(error) : error;
      });
      if (params.get('Version') !== service.version || !handler) {
        throw service.style === 'ec2'
          ? new Cloud1Error('InvalidAction', 400, `The action ${action} is not valid for this web service.`)
          : invalidAction(action, params.get('Version') ?? '');
      }
      if (verified.record.kind === 'long-term') {
        verified.record.key.lastUsed = { date: now, service: serviceName ?? '', region: verified.region };
      }
      const caller = principalOf(this.state, verified.record);
      const ctx: CallContext = {
        state: this.state,
        params,
        caller,
        record: verified.record,
        account: this.state.account(caller.accountId),
        region: verified.region,
        now,
      };
      service.check?.(ctx, action);
      const result = handler(ctx);
      const xml =
        service.style === 'ec2'
          ? ec2Response(action, result ?? {}, requestId)
          : queryResponse(action, service.namespace, result, requestId);
      res.writeHead(200, headers).end(xml);
      this.state.sweepExpired();
    } catch (error) {
      const failure =
        error instanceof Cloud1Error
          ? error
          : new Cloud1Error('InternalFailure', 500, `The request processing has failed: ${String(error)}`, 'Receiver');
      const xml =
        service?.style === 'ec2'
          ? ec2ErrorResponse(failure, requestId)
          : queryErrorResponse(service?.namespace ?? STS_NAMESPACE, failure, requestId);
      res.writeHead(failure.status, headers).end(xml);
    }
  }

  /** The awsJson1_1 protocol: `X-Amz-Target: secretsmanager.<Operation>`, JSON in and out. */
  private async handleSecretsManager(received: ReceivedRequest, res: ServerResponse, target: string): Promise<void> {
    const now = this.now();
    const headers = { 'x-amzn-requestid': ids.requestId(), date: new Date(now).toUTCString(), 'content-type': 'application/x-amz-json-1.1' };
    try {
      if (this.secretsManagerFaults.remaining > 0) {
        this.secretsManagerFaults.remaining--;
        throw new Cloud1Error('ServiceUnavailableException', this.secretsManagerFaults.status, 'Injected fault: the service is unavailable.');
      }
      const verified = await verifySignature(received, (id) => this.state.keys.get(id), now).catch((error: unknown) => {
        throw jsonAuthError(error);
      });
      if (verified.service !== 'secretsmanager') {
        throw new Cloud1Error('InvalidSignatureException', 400, "Credential should be scoped to correct service: 'secretsmanager'.");
      }
      const operation = target.startsWith('secretsmanager.') ? target.slice('secretsmanager.'.length) : '';
      if (operation === '') throw new Cloud1Error('UnknownOperationException', 400, 'Missing X-Amz-Target: secretsmanager.<Operation>');
      const body = parseJsonBody(received);
      if (verified.record.kind === 'long-term') {
        verified.record.key.lastUsed = { date: now, service: 'secretsmanager', region: verified.region };
      }
      const caller = principalOf(this.state, verified.record);
      const result = this.secretsManager.call(operation, { accountId: caller.accountId, region: verified.region, now }, body);
      res.writeHead(200, headers).end(JSON.stringify(result));
    } catch (error) {
      const failure =
        error instanceof Cloud1Error ? error : new Cloud1Error('InternalServiceError', 500, 'An error occurred on the server side.');
      res
        .writeHead(failure.status, { ...headers, 'x-amzn-errortype': failure.code })
        .end(JSON.stringify({ __type: failure.code, message: failure.message }));
    }
  }

  private requireSigner(): IdentitySigner {
    if (!this.signer) throw new Error('The cloud1 emulator is not started');
    return this.signer;
  }

  private requireInstance(instanceId: string): Instance {
    const instance = this.state.instance(instanceId);
    if (!instance) throw new Cloud1Error('InvalidInstanceID.NotFound', 404, `The instance ID '${instanceId}' does not exist`);
    return instance;
  }

  private instanceInfo(instance: Instance): InstanceInfo {
    const profile = instanceProfileOf(this.state, instance);
    const roleName = profile?.roleNames[0];
    const role = roleName === undefined ? undefined : this.state.accounts.get(instance.accountId)?.roles.get(roleName);
    return {
      instanceId: instance.instanceId,
      accountId: instance.accountId,
      region: instance.region,
      availabilityZone: instance.availabilityZone,
      state: instance.state,
      imageId: instance.imageId,
      instanceType: instance.instanceType,
      vpcId: instance.vpcId,
      subnetId: instance.subnetId,
      privateIp: instance.privateIp,
      ...(profile ? { instanceProfileArn: profile.arn } : {}),
      ...(role ? { roleArn: role.arn } : {}),
      tags: Object.fromEntries(instance.tags.map((t) => [t.key, t.value])),
      pendingTime: new Date(instance.pendingTime).toISOString(),
    };
  }
}

/**
 * EC2 reports credential problems its own way: unknown, inactive or expired keys are
 * `AuthFailure` (401) rather than IAM's and STS's `InvalidClientTokenId`/`ExpiredToken`.
 */
function ec2AuthError(error: unknown): unknown {
  if (!(error instanceof Cloud1Error)) return error;
  if (error.code === 'InvalidClientTokenId') {
    return new Cloud1Error('AuthFailure', 401, 'AWS was not able to validate the provided access credentials');
  }
  if (error.code === 'ExpiredToken') return new Cloud1Error('RequestExpired', 400, 'Request has expired.');
  if (error.code === 'MissingAuthenticationToken') {
    return new Cloud1Error('MissingParameter', 400, 'The request must contain the parameter AWSAccessKeyId');
  }
  return error;
}

/** JSON-protocol services name credential problems differently from the query-protocol ones. */
function jsonAuthError(error: unknown): unknown {
  if (!(error instanceof Cloud1Error)) return error;
  const renamed: Record<string, string> = {
    InvalidClientTokenId: 'UnrecognizedClientException',
    SignatureDoesNotMatch: 'InvalidSignatureException',
    ExpiredToken: 'ExpiredTokenException',
    MissingAuthenticationToken: 'MissingAuthenticationTokenException',
    IncompleteSignature: 'IncompleteSignatureException',
  };
  const code = renamed[error.code];
  return code === undefined ? error : new Cloud1Error(code, 400, error.message);
}

function parseJsonBody(received: ReceivedRequest): Record<string, unknown> {
  const type = String(received.headers['content-type'] ?? '');
  if (!type.startsWith('application/x-amz-json-1.1')) {
    throw new Cloud1Error('SerializationException', 400, 'The content type must be application/x-amz-json-1.1');
  }
  let body: unknown;
  try {
    body = received.body.length === 0 ? {} : JSON.parse(received.body.toString('utf8'));
  } catch {
    throw new Cloud1Error('SerializationException', 400, 'The request body is not valid JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new Cloud1Error('SerializationException', 400, 'The request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

function serviceForVersion(version: string | undefined): string | undefined {
  return Object.entries(SERVICES).find(([, s]) => s.version === version)?.[0];
}

/** Query-protocol parameters: the form body of a POST, plus any URL query parameters. */
function parseParams(req: IncomingMessage, body: Buffer): Params {
  const params = new Map<string, string>();
  const queryIndex = (req.url ?? '').indexOf('?');
  if (queryIndex >= 0) for (const [k, v] of new URLSearchParams((req.url ?? '').slice(queryIndex + 1))) params.set(k, v);
  const type = req.headers['content-type'] ?? '';
  if (body.length > 0 && (type === '' || type.startsWith('application/x-www-form-urlencoded'))) {
    for (const [k, v] of new URLSearchParams(body.toString('utf8'))) params.set(k, v);
  }
  return params;
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? undefined : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(listen);
  if (!m) throw new Error(`Expected host:port, got '${listen}'`);
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port: Number(m[3]) };
}

function listen(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    handler(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

function urlOf(server: Server, host: string): string {
  const { port } = server.address() as AddressInfo;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
