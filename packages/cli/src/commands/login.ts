/**
 * `strongroom login [TOKEN]` checks a token and shows it, as Vault's token login does.
 * `strongroom login -method=cloud1 role=NAME [type=vm|iam] ...` builds the login request of the
 * cloud1 auth method on the machine it runs on and sends it.
 * - type=vm reads the signed instance identity document (the rsa2048 PKCS#7) from the
 *   instance metadata service (IMDSv2), at CLOUD1_METADATA_URL or the link-local address;
 * - type=iam signs a GetCallerIdentity request with the provider SDK's credentials and hands it
 *   over unsent: the server replays it to STS to learn who signed it.
 */
import { parseArgs, stringFlag, UsageError, type ParsedArgs } from '../args';
import { apiRequest, clientFromEnv } from '../client';
import type { Command } from '../command';
import { kvTable, outputOptions, printSecret, secretRows } from '../output';
import { parseValues, readStdin, type StdinReader } from '../values';

const USAGE = `Usage: strongroom login [options] [TOKEN | key=value...]

  Logs in and prints the token to use as STRONGROOM_TOKEN (or VAULT_TOKEN).

  -method=token (default)   Checks TOKEN (the argument, token=-, or STRONGROOM_TOKEN/VAULT_TOKEN) and shows it
  -method=cloud1            role=NAME [type=iam|vm] [key=value...], as below
  -path=PATH                Where the auth method is enabled (default the method's name)

  cloud1:
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
  const [{ SignatureV4 }, { Hash }] = await Promise.all([import('@smithy/signature-v4'), import('@smithy/hash-node')]);
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
    const { fromNodeProviderChain } = await import('@aws-sdk/credential-providers');
    const found = await fromNodeProviderChain()();
    return { accessKeyId: found.accessKeyId, secretAccessKey: found.secretAccessKey, ...(found.sessionToken ? { sessionToken: found.sessionToken } : {}) };
  } catch (err) {
    throw new UsageError(`no provider credentials to sign the iam login with: ${(err as Error).message}`);
  }
}

/** -method=token: checks the token and shows what it is; the server issues nothing new. */
async function tokenLogin(parsed: ParsedArgs, out: NodeJS.WritableStream, env: NodeJS.ProcessEnv, stdin: StdinReader): Promise<number> {
  const given = parsed.positional.length > 0 ? parseValues(parsed.positional.map((p) => (p.includes('=') || p === '-' ? p : `token=${p}`)), stdin)['token'] : undefined;
  if (given !== undefined && typeof given !== 'string') throw new UsageError('token must be a string');
  const token = given?.trim() || env['STRONGROOM_TOKEN'] || env['VAULT_TOKEN'];
  if (!token) throw new UsageError(`no token: give it as the argument or in STRONGROOM_TOKEN\n\n${USAGE}`);
  const { body } = await apiRequest({ ...clientFromEnv(env, parsed), token }, 'GET', 'auth/token/lookup-self');
  const data = (body as { data: Record<string, unknown> }).data;
  const auth = {
    client_token: token, accessor: data['accessor'], lease_duration: data['ttl'], renewable: data['renewable'],
    policies: data['policies'], token_policies: data['policies'], identity_policies: data['identity_policies'] ?? [], metadata: data['meta'],
  };
  return printLogin(parsed, out, env, { ...(body as object), auth });
}

function printLogin(parsed: ParsedArgs, out: NodeJS.WritableStream, env: NodeJS.ProcessEnv, body: Record<string, unknown>): number {
  const opts = outputOptions(parsed, env);
  if (opts.field !== undefined || opts.format !== 'table') {
    printSecret(out, opts, body as never, null);
    return 0;
  }
  out.write('Success! You are now authenticated. Use the token below as STRONGROOM_TOKEN (or VAULT_TOKEN).\n\n');
  out.write(kvTable(secretRows(body as never, null)));
  return 0;
}

async function cloud1LoginData(args: Record<string, string>, env: NodeJS.ProcessEnv): Promise<Record<string, string>> {
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
  return data;
}

export function loginCommand(argv: string[], out: NodeJS.WritableStream, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return runLogin(parseArgs(argv, new Set(['tls-skip-verify'])), out, env, readStdin);
}

async function runLogin(parsed: ParsedArgs, out: NodeJS.WritableStream, env: NodeJS.ProcessEnv, stdin: StdinReader): Promise<number> {
  const method = stringFlag(parsed, 'method') ?? 'token';
  if (method === 'token') return tokenLogin(parsed, out, env, stdin);
  const mount = (stringFlag(parsed, 'path') ?? method).replace(/^\/+|\/+$/g, '');
  if (method !== 'cloud1') throw new UsageError(`login method "${method}" is not supported here.\n\n${USAGE}`);
  const data = await cloud1LoginData(pairs(parsed.positional), env);
  // A login goes without a token: a stale one in the environment must not be sent along.
  const { token: _stale, ...client } = clientFromEnv(env, parsed);
  const { body } = await apiRequest(client, 'PUT', `auth/${mount}/login`, data);
  if (!(body as { auth?: unknown } | null)?.auth) throw new UsageError('the server answered without a token');
  return printLogin(parsed, out, env, body as Record<string, unknown>);
}

export const loginCommands: Command[] = [{
  name: ['login'], summary: 'Log in with a token or a cloud1 identity', client: true, output: true,
  help: `${USAGE}
  Example:
    $ strongroom login token=-    # reads the token from stdin`,
  run: (args, ctx) => runLogin(args, ctx.out, ctx.env, ctx.stdin),
}];
