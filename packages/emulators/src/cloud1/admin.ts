/**
 * The admin API: JSON over HTTP under /_admin/ on the API listener, one route per
 * `Cloud1Emulator` method so that a demo script and a test see the same operations. It is
 * unauthenticated, because the emulator only ever listens for local tests and demos.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Cloud1Error } from './errors';
import type { InstanceSeed } from './ec2';
import type { SecretsManagerSecretView } from './secrets-manager';
import type { InstanceStateName } from './state';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export interface UserSeed {
  userName: string;
  path?: string;
  tags?: Record<string, string>;
  /** How many access keys to create (at most 2), or fixed keys for stable demo credentials. */
  accessKeys?: number | Credentials[];
}

export interface UserInfo {
  userName: string;
  userId: string;
  arn: string;
  accessKeys: Credentials[];
}

export interface RoleSeed {
  roleName: string;
  path?: string;
  /**
   * Trust policy (JSON text or object). Defaults to trusting the role's own account and the EC2
   * service, which is what most tests want.
   */
  trustPolicy?: string | object;
  maxSessionDuration?: number;
  tags?: Record<string, string>;
  /** Also create an instance profile holding the role: `true` names it after the role. */
  instanceProfile?: boolean | string;
}

export interface RoleInfo {
  roleName: string;
  roleId: string;
  arn: string;
  instanceProfileName?: string;
  instanceProfileArn?: string;
}

/**
 * A virtual MFA device for a user. Give `fixedCode` for a device that always expects that code,
 * or `totpSecret` (base32) for real TOTP codes; with neither, a TOTP secret is generated and
 * returned. `mfaCode(serialNumber)` gives the code the emulator currently expects.
 */
export interface MfaDeviceSeed {
  userName: string;
  serialNumber?: string;
  totpSecret?: string;
  fixedCode?: string;
}

export interface MfaDeviceInfo {
  serialNumber: string;
  totpSecret?: string;
}

export interface InstanceInfo {
  instanceId: string;
  accountId: string;
  region: string;
  availabilityZone: string;
  state: InstanceStateName;
  imageId: string;
  instanceType: string;
  vpcId: string;
  subnetId: string;
  privateIp: string;
  instanceProfileArn?: string;
  roleArn?: string;
  tags: Record<string, string>;
  pendingTime: string;
}

export interface AccountSeed {
  id?: string;
  alias?: string;
  /** Root credentials: `true` for generated ones, or fixed keys. */
  rootCredentials?: boolean | Credentials;
  users?: Array<UserSeed & { mfaDevices?: Array<Omit<MfaDeviceSeed, 'userName'>> }>;
  roles?: RoleSeed[];
  instances?: Array<Omit<InstanceSeed, 'accountId'>>;
}

/** What `--seed file.json` and POST /_admin/seed accept. */
export interface SeedDocument {
  accounts?: AccountSeed[];
  /** The instance the shared metadata listener speaks for. */
  currentInstance?: string;
}

export interface SeedResult {
  accounts: Array<{
    id: string;
    rootCredentials?: Credentials;
    users: Array<UserInfo & { mfaDevices: MfaDeviceInfo[] }>;
    roles: RoleInfo[];
    instances: InstanceInfo[];
  }>;
}

export interface Cloud1Endpoints {
  /** IAM, STS and EC2, told apart by the signing service in each request's credential scope. */
  api: string;
  /** The shared instance metadata listener. */
  metadata: string;
  admin: string;
}

/** The operations the admin routes call; `Cloud1Emulator` implements them. */
export interface AdminOperations {
  readonly endpoints: Cloud1Endpoints;
  reset(): void;
  seed(document: SeedDocument): SeedResult;
  createAccount(input?: { id?: string; alias?: string }): { accountId: string };
  issueRootCredentials(accountId: string, fixed?: Credentials): Credentials;
  createUser(accountId: string, seed: UserSeed): UserInfo;
  createAccessKey(accountId: string, userName: string): Credentials;
  createRole(accountId: string, seed: RoleSeed): RoleInfo;
  createMfaDevice(accountId: string, seed: MfaDeviceSeed): MfaDeviceInfo;
  mfaCode(serialNumber: string): string;
  createInstance(seed: InstanceSeed): InstanceInfo;
  describeInstance(instanceId: string): InstanceInfo;
  setInstanceState(instanceId: string, state: InstanceStateName): InstanceInfo;
  useInstance(instanceId: string | undefined): void;
  openMetadataEndpoint(instanceId: string): Promise<string>;
  caCertificatePem(): string;
  now(): number;
  advanceTime(ms: number): void;
  setTime(epochMs: number): void;
  secretsManagerSecrets(): SecretsManagerSecretView[];
  failNextSecretsManagerRequests(count: number, status?: number): void;
}

type Body = Record<string, unknown>;
type Route = [method: string, pattern: RegExp, run: (ops: AdminOperations, match: string[], body: Body) => unknown];

const str = (body: Body, name: string): string | undefined => (typeof body[name] === 'string' ? body[name] : undefined);
const clock = (ops: AdminOperations) => ({ now: new Date(ops.now()).toISOString(), epochMs: ops.now() });

const ROUTES: Route[] = [
  ['GET', /^endpoints$/, (ops) => ops.endpoints],
  ['POST', /^reset$/, (ops) => (ops.reset(), {})],
  ['POST', /^seed$/, (ops, _m, body) => ops.seed(body as SeedDocument)],
  ['POST', /^accounts$/, (ops, _m, body) => ops.createAccount({ id: str(body, 'id'), alias: str(body, 'alias') })],
  [
    'POST',
    /^accounts\/(\d{12})\/root-credentials$/,
    (ops, m, body) => {
      const accessKeyId = str(body, 'accessKeyId');
      const secretAccessKey = str(body, 'secretAccessKey');
      return ops.issueRootCredentials(m[1] ?? '', accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey } : undefined);
    },
  ],
  ['POST', /^accounts\/(\d{12})\/users$/, (ops, m, body) => ops.createUser(m[1] ?? '', body as unknown as UserSeed)],
  ['POST', /^accounts\/(\d{12})\/users\/([^/]+)\/access-keys$/, (ops, m) => ops.createAccessKey(m[1] ?? '', m[2] ?? '')],
  ['POST', /^accounts\/(\d{12})\/roles$/, (ops, m, body) => ops.createRole(m[1] ?? '', body as unknown as RoleSeed)],
  ['POST', /^accounts\/(\d{12})\/mfa-devices$/, (ops, m, body) => ops.createMfaDevice(m[1] ?? '', body as unknown as MfaDeviceSeed)],
  ['POST', /^mfa-code$/, (ops, _m, body) => ({ code: ops.mfaCode(str(body, 'serialNumber') ?? '') })],
  ['POST', /^instances$/, (ops, _m, body) => ops.createInstance(body as unknown as InstanceSeed)],
  ['GET', /^instances\/([^/]+)$/, (ops, m) => ops.describeInstance(m[1] ?? '')],
  ['POST', /^instances\/([^/]+)\/state$/, (ops, m, body) => ops.setInstanceState(m[1] ?? '', str(body, 'state') as InstanceStateName)],
  ['POST', /^instances\/([^/]+)\/metadata-endpoint$/, async (ops, m) => ({ url: await ops.openMetadataEndpoint(m[1] ?? '') })],
  ['POST', /^metadata\/current-instance$/, (ops, _m, body) => (ops.useInstance(str(body, 'instanceId')), {})],
  ['GET', /^ca$/, (ops) => ({ certificatePem: ops.caCertificatePem() })],
  ['GET', /^secretsmanager\/secrets$/, (ops) => ({ secrets: ops.secretsManagerSecrets() })],
  [
    'POST',
    /^secretsmanager\/fail-next$/,
    (ops, _m, body) => {
      const count = typeof body.count === 'number' ? body.count : -1;
      ops.failNextSecretsManagerRequests(count, typeof body.status === 'number' ? body.status : undefined);
      return {};
    },
  ],
  ['GET', /^clock$/, (ops) => clock(ops)],
  [
    'POST',
    /^clock$/,
    (ops, _m, body) => {
      if (typeof body.epochMs === 'number') ops.setTime(body.epochMs);
      else if (typeof body.now === 'string') ops.setTime(Date.parse(body.now));
      if (typeof body.advanceMs === 'number') ops.advanceTime(body.advanceMs);
      if (typeof body.advanceSeconds === 'number') ops.advanceTime(body.advanceSeconds * 1000);
      return clock(ops);
    },
  ],
];

export async function handleAdmin(ops: AdminOperations, req: IncomingMessage, res: ServerResponse, rawBody: Buffer): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://admin').pathname.replace(/^\/_admin\//, '');
  try {
    const route = ROUTES.find(([method, pattern]) => method === req.method && pattern.test(path));
    if (!route) throw new Cloud1Error('NotFound', 404, `No admin route ${req.method ?? ''} /_admin/${path}`);
    let body: Body = {};
    if (rawBody.length > 0) {
      try {
        body = JSON.parse(rawBody.toString('utf8')) as Body;
      } catch {
        throw new Cloud1Error('InvalidJson', 400, 'The admin API takes JSON bodies');
      }
    }
    const match = (route[1].exec(path) ?? []).map((m) => decodeURIComponent(m));
    const result = await route[2](ops, match, body);
    sendJson(res, 200, result ?? {});
  } catch (error) {
    if (error instanceof Cloud1Error) sendJson(res, error.status, { error: { code: error.code, message: error.message } });
    else sendJson(res, 500, { error: { code: 'InternalError', message: String(error) } });
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
