/**
 * `strongroom login -method=cloud1 role=NAME [type=vm|iam] ...`: builds the login request of the
 * cloud1 auth method on the machine it runs on and sends it.
 * - type=vm reads the signed instance identity document (the rsa2048 PKCS#7) from the
 *   instance metadata service (IMDSv2), at CLOUD1_METADATA_URL or the link-local address;
 * - type=iam signs a GetCallerIdentity request with the provider SDK's credentials and hands it
 *   over unsent: the server replays it to STS to learn who signed it.
 */
import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { parseArgs, stringFlag, UsageError } from '../args';
import { apiRequest, clientFromEnv } from '../client';

const USAGE = `Usage: strongroom login -method=cloud1 [-path=cloud1] [-format=table|json] role=NAME [type=iam|vm] [key=value...]

  type=iam (default)  header_value=SERVER_ID  region=REGION (signs for sts.REGION; default the global endpoint)
                      credentials: CLOUD1_ACCESS_KEY/CLOUD1_SECRET_KEY[/CLOUD1_SESSION_TOKEN], else the SDK's default chain
  type=vm             nonce=NONCE (from an earlier login, to log in again)  metadata_url=URL (default CLOUD1_METADATA_URL
                      or http://169.254.169.254)
`;

export const SERVER_ID_HEADER = 'x-service-cloud1-iam-server-id';
const DEFAULT_METADATA_URL = 'http://169.254.169.254';

export interface SigningCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

function pairs(items: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`"${item}" is not key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** The iam login fields: a GetCallerIdentity request signed with `credentials`, not sent. */
export async function signedIamLoginData(
  credentials: SigningCredentials, options: { region?: string; serverId?: string } = {},
): Promise<Record<string, string>> {
  const region = options.region ?? 'us-east-1';
  const host = options.region ? `sts.${options.region}.amazonaws.com` : 'sts.amazonaws.com';
  const body = 'Action=GetCallerIdentity&Version=2011-06-15';
  const signer = new SignatureV4({ credentials, region, service: 'sts', sha256: Hash.bind(null, 'sha256') });
  const signed = await signer.sign({
    method: 'POST', protocol: 'https:', hostname: host, path: '/', query: {},
    headers: {
      host, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      ...(options.serverId ? { [SERVER_ID_HEADER]: options.serverId } : {}),
    },
    body,
  });
  const headers = Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k, [v]]));
  return {
    iam_http_request_method: 'POST', iam_request_url: b64(`https://${host}/`), iam_request_body: b64(body),
    iam_request_headers: b64(JSON.stringify(headers)),
  };
}

/** The vm login fields: the PKCS#7 identity signature read from the metadata service (IMDSv2). */
export async function metadataLoginData(metadataUrl: string): Promise<Record<string, string>> {
  const base = `${metadataUrl.replace(/\/+$/, '')}/latest`;
  const tokenRes = await fetch(`${base}/api/token`, { method: 'PUT', headers: { 'x-aws-ec2-metadata-token-ttl-seconds': '60' } });
  if (!tokenRes.ok) throw new UsageError(`the metadata service at ${metadataUrl} refused a session token (${tokenRes.status})`);
  const token = await tokenRes.text();
  const res = await fetch(`${base}/dynamic/instance-identity/rsa2048`, { headers: { 'x-aws-ec2-metadata-token': token } });
  if (!res.ok) throw new UsageError(`the metadata service at ${metadataUrl} answered ${res.status} for the identity signature`);
  return { pkcs7: (await res.text()).replace(/\s+/g, '') };
}

async function credentialsFrom(args: Record<string, string>, env: NodeJS.ProcessEnv): Promise<SigningCredentials> {
  const accessKeyId = args['access_key'] ?? env['CLOUD1_ACCESS_KEY'];
  const secretAccessKey = args['secret_key'] ?? env['CLOUD1_SECRET_KEY'];
  if (accessKeyId && secretAccessKey) {
    const sessionToken = args['session_token'] ?? env['CLOUD1_SESSION_TOKEN'];
    return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
  }
  try {
    const found = await fromNodeProviderChain()();
    return { accessKeyId: found.accessKeyId, secretAccessKey: found.secretAccessKey, ...(found.sessionToken ? { sessionToken: found.sessionToken } : {}) };
  } catch (err) {
    throw new UsageError(`no provider credentials to sign the iam login with: ${(err as Error).message}`);
  }
}

interface AuthBlock {
  client_token: string;
  accessor: string;
  policies: string[];
  token_policies: string[];
  metadata: Record<string, string> | null;
  lease_duration: number;
  renewable: boolean;
}

export async function loginCommand(argv: string[], out: NodeJS.WritableStream, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parseArgs(argv);
  const method = stringFlag(parsed, 'method') ?? 'token';
  if (method !== 'cloud1') throw new UsageError(`login method "${method}" is not supported here.\n\n${USAGE}`);
  const mount = (stringFlag(parsed, 'path') ?? 'cloud1').replace(/^\/+|\/+$/g, '');
  const format = stringFlag(parsed, 'format') ?? 'table';
  const args = pairs(parsed.positional);
  const type = args['type'] ?? 'iam';
  const data: Record<string, string> = args['role'] ? { role: args['role'] } : {};
  if (type === 'vm') {
    Object.assign(data, await metadataLoginData(args['metadata_url'] ?? env['CLOUD1_METADATA_URL'] ?? DEFAULT_METADATA_URL));
    if (args['nonce'] !== undefined) data['nonce'] = args['nonce'];
  } else if (type === 'iam') {
    const region = args['region'];
    const serverId = args['header_value'];
    Object.assign(data, await signedIamLoginData(await credentialsFrom(args, env), {
      ...(region ? { region } : {}), ...(serverId ? { serverId } : {}),
    }));
  } else {
    throw new UsageError(`type must be vm or iam, not "${type}"`);
  }
  // A login goes without a token: a stale one in the environment must not be sent along.
  const { body } = await apiRequest({ address: clientFromEnv(env).address }, 'PUT', `auth/${mount}/login`, data);
  const auth = (body as { auth?: AuthBlock } | null)?.auth;
  if (!auth) throw new UsageError('the server answered without a token');
  if (format === 'json') {
    out.write(`${JSON.stringify(body, null, 2)}\n`);
    return 0;
  }
  const rows: Array<[string, string]> = [
    ['token', auth.client_token],
    ['token_accessor', auth.accessor],
    ['token_duration', `${auth.lease_duration}s`],
    ['token_renewable', String(auth.renewable)],
    ['token_policies', JSON.stringify(auth.token_policies)],
    ['policies', JSON.stringify(auth.policies)],
    ...Object.entries(auth.metadata ?? {}).map(([k, v]): [string, string] => [`token_meta_${k}`, v]),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  out.write('Success! You are now authenticated. Use the token below as STRONGROOM_TOKEN.\n\n');
  for (const [k, v] of rows) out.write(`${k.padEnd(width)}    ${v}\n`);
  return 0;
}
