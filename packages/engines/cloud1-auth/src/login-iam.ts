/**
 * The `iam` login: the client signs a GetCallerIdentity request with its own credentials and
 * hands it over unsent; the server checks that it is exactly that request (so a captured login
 * cannot be another action), replays it to STS, and learns from the answer who signed it.
 */
import {
  BadRequestError, PermissionDeniedError, type BackendRequest, type BackendResponse, type FieldData, type LogicalStorage,
} from '@strongroom/core';
import { canonicalArn, globMatch, parseArn, type Arn } from './arn';
import type { Cloud1Context } from './context';
import { verifyInstance } from './instance-check';
import { checkLoginAddress, selectMetadata, tokenParameters } from './login-common';
import { readClientConfig, type ClientConfig } from './path-config-client';
import { readIdentityConfig } from './path-config-identity';
import { normalizeRoleName, readRole, type RoleEntry } from './role';
import { forwardGetCallerIdentity, type CallerIdentity } from './sts-forward';

export const SERVER_ID_HEADER = 'X-Service-Cloud1-IAM-Server-ID';
const DEFAULT_STS_ENDPOINT = 'https://sts.amazonaws.com';

/** The x-amz-* headers a signed identity query always carries; others need allowed_sts_header_values. */
const DEFAULT_AMZ_HEADERS = new Set([
  'x-amz-algorithm', 'x-amz-content-sha256', 'x-amz-credential', 'x-amz-date', 'x-amz-security-token', 'x-amz-signature',
  'x-amz-signedheaders', 'x-amz-user-agent',
]);

function base64Text(field: string, value: string): string {
  const compact = value.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact)) throw new BadRequestError(`invalid value for "${field}": expected base64`);
  return Buffer.from(compact, 'base64').toString('utf8');
}

/** iam_request_headers as sent: base64 JSON or an object; each value a string or a list of them. */
function parseHeaders(raw: unknown): Map<string, string[]> {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(base64Text('iam_request_headers', raw));
    } catch (err) {
      if (err instanceof BadRequestError) throw err;
      throw new BadRequestError('invalid value for "iam_request_headers": expected base64 of a JSON object');
    }
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new BadRequestError('invalid value for "iam_request_headers": expected an object of header names to values');
  }
  const headers = new Map<string, string[]>();
  for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
    const list = Array.isArray(v) ? v : [v];
    if (list.some((x) => typeof x !== 'string')) {
      throw new BadRequestError(`invalid value for "iam_request_headers": header "${name}" must be a string or a list of strings`);
    }
    const key = name.toLowerCase();
    headers.set(key, [...(headers.get(key) ?? []), ...(list as string[])]);
  }
  return headers;
}

interface SignedRequest {
  url: URL;
  body: string;
  headers: Map<string, string[]>;
  /** The region of the signature's credential scope. */
  region: string;
}

/** Checks that the login carries exactly a signed GetCallerIdentity and nothing else. */
function parseSignedRequest(f: FieldData, config: ClientConfig): SignedRequest {
  const method = f.string('iam_http_request_method');
  if (method !== 'POST') throw new BadRequestError(`invalid value for "iam_http_request_method": only POST is supported, not "${method}"`);
  let url: URL;
  try {
    url = new URL(base64Text('iam_request_url', f.string('iam_request_url')));
  } catch (err) {
    if (err instanceof BadRequestError) throw err;
    throw new BadRequestError('invalid value for "iam_request_url": not the base64 of a URL');
  }
  if (url.search !== '' || (url.pathname !== '/' && url.pathname !== '')) {
    throw new BadRequestError('invalid value for "iam_request_url": the signed request must go to the service root, without a path or query');
  }
  if (!f.has('iam_request_body')) throw new BadRequestError('missing required field "iam_request_body": a POST login needs the signed body');
  const body = base64Text('iam_request_body', f.string('iam_request_body'));
  const params = new URLSearchParams(body);
  for (const key of params.keys()) {
    if (key !== 'Action' && key !== 'Version') {
      throw new BadRequestError(`invalid value for "iam_request_body": only Action and Version may be sent, not "${key}"`);
    }
  }
  if (params.get('Action') !== 'GetCallerIdentity') {
    throw new BadRequestError('invalid value for "iam_request_body": the action must be GetCallerIdentity');
  }
  if (!params.get('Version')) throw new BadRequestError('invalid value for "iam_request_body": the Version parameter is missing');
  if (!f.has('iam_request_headers')) throw new BadRequestError('missing required field "iam_request_headers"');
  const headers = parseHeaders(f.get('iam_request_headers'));
  const allowed = new Set([...DEFAULT_AMZ_HEADERS, ...config.allowedStsHeaderValues]);
  for (const name of headers.keys()) {
    if (name.startsWith('x-amz-') && !allowed.has(name)) {
      throw new BadRequestError(`invalid value for "iam_request_headers": header "${name}" is not allowed; allow it with allowed_sts_header_values`);
    }
  }
  const authorization = headers.get('authorization')?.[0];
  if (!authorization) throw new BadRequestError('invalid value for "iam_request_headers": the Authorization header of the signature is missing');
  const scope = /Credential=[^/,\s]+\/\d{8}\/([a-z0-9-]+)\/sts\/aws4_request/.exec(authorization);
  if (!scope?.[1]) throw new BadRequestError('invalid value for "iam_request_headers": the Authorization header is not a SigV4 signature for sts');
  const signed = (/SignedHeaders=([^,\s]+)/.exec(authorization)?.[1] ?? '').split(';').map((h) => h.toLowerCase());
  if (config.iamServerIdHeaderValue !== '') {
    const header = SERVER_ID_HEADER.toLowerCase();
    const values = headers.get(header);
    if (!values || values.length === 0) {
      throw new PermissionDeniedError(`the signed request lacks the ${SERVER_ID_HEADER} header this server requires`);
    }
    if (values.length !== 1 || values[0] !== config.iamServerIdHeaderValue) {
      throw new PermissionDeniedError(`the ${SERVER_ID_HEADER} header does not name this server (it says "${values.join(',')}")`);
    }
    if (!signed.includes(header)) throw new PermissionDeniedError(`the ${SERVER_ID_HEADER} header is not among the signed headers`);
  }
  if (!headers.has('host')) headers.set('host', [url.host]);
  return { url, body, headers, region: scope[1] };
}

function stsEndpoint(ctx: Cloud1Context, config: ClientConfig, region: string): string {
  if (config.useStsRegionFromClient) {
    return ctx.options.stsEndpointForRegion ? ctx.options.stsEndpointForRegion(region) : `https://sts.${region}.amazonaws.com`;
  }
  return config.stsEndpoint || DEFAULT_STS_ENDPOINT;
}

/** The caller as bound checks see it. */
export interface IamCaller {
  arn: string;
  parsed: Arn;
  canonical: string;
  /** The unique ID of the user or role (for a session, the part before the colon). */
  uniqueId: string;
  account: string;
}

export function callerOf(identity: CallerIdentity): IamCaller {
  const parsed = parseArn(identity.arn);
  if (!parsed || (parsed.type !== 'user' && parsed.type !== 'assumed-role')) {
    throw new PermissionDeniedError(`the caller "${identity.arn}" is neither an IAM user nor an assumed role`);
  }
  return { arn: identity.arn, parsed, canonical: canonicalArn(parsed), uniqueId: identity.userId.split(':')[0] ?? '', account: identity.account };
}

/**
 * bound_iam_principal_arn: the caller's unique ID among the resolved ones; or, without
 * resolution, its canonical ARN listed; or a wildcard entry matching its ARN (canonical, as
 * signed, or the full one with its path, looked up in IAM).
 */
export async function checkPrincipal(
  ctx: Cloud1Context, storage: LogicalStorage, config: ClientConfig, roleName: string, role: RoleEntry, caller: IamCaller,
): Promise<void> {
  const bound = role.boundIamPrincipalArns;
  if (bound.length === 0) return;
  if (role.resolveUniqueIds && role.boundIamPrincipalIds.includes(caller.uniqueId)) return;
  if (!role.resolveUniqueIds && bound.includes(caller.canonical)) return;
  const wildcards = bound.filter((b) => b.endsWith('*'));
  if (wildcards.some((w) => globMatch(w, caller.canonical) || globMatch(w, caller.arn))) return;
  if (wildcards.length > 0) {
    const type = caller.parsed.type === 'user' ? 'user' : 'role';
    const full = await ctx.provider.principal(storage, config, caller.account, type, caller.parsed.name).catch(() => null);
    if (full && wildcards.some((w) => globMatch(w, full.arn))) return;
  }
  throw new PermissionDeniedError(`IAM principal "${caller.arn}" does not match "bound_iam_principal_arn" of role "${roleName}"`);
}

/** With inference, the instance a session is named after must be running and meet the role. */
export async function checkInferredInstance(
  ctx: Cloud1Context, storage: LogicalStorage, config: ClientConfig, roleName: string, role: RoleEntry, caller: IamCaller,
): Promise<string> {
  if (role.inferredEntityType !== 'vm_instance') return '';
  if (caller.parsed.type !== 'assumed-role' || caller.parsed.sessionName === '') {
    throw new PermissionDeniedError(`role "${roleName}" infers an instance, which needs an assumed-role session named after it; "${caller.arn}" is not one`);
  }
  const instanceId = caller.parsed.sessionName;
  await verifyInstance(ctx, storage, config, roleName, role, { accountId: caller.account, region: role.inferredRegion, instanceId });
  return instanceId;
}

export async function loginIam(ctx: Cloud1Context, req: BackendRequest, f: FieldData): Promise<BackendResponse> {
  const config = await readClientConfig(req.storage);
  const signed = parseSignedRequest(f, config);
  const attempts = config.maxRetries >= 0 ? config.maxRetries + 1 : 3;
  const caller = callerOf(await forwardGetCallerIdentity(stsEndpoint(ctx, config, signed.region), signed.headers, signed.body, attempts));

  const roleName = normalizeRoleName(f.string('role') || caller.parsed.name);
  const role = await readRole(req.storage, roleName);
  if (!role) {
    throw new PermissionDeniedError(
      f.string('role') ? `role "${roleName}" does not exist` : `no role was given and no role is named after the principal "${caller.parsed.name}"`,
    );
  }
  if (role.authType !== 'iam') throw new PermissionDeniedError(`role "${roleName}" has auth_type ${role.authType}, not iam`);
  checkLoginAddress(req, roleName, role);
  await checkPrincipal(ctx, req.storage, config, roleName, role, caller);
  const inferredId = await checkInferredInstance(ctx, req.storage, config, roleName, role, caller);

  const identity = await readIdentityConfig(req.storage);
  const selected = selectMetadata(identity.iamMetadata, {
    account_id: caller.account, auth_type: 'iam', canonical_arn: caller.canonical, client_arn: caller.arn,
    client_user_id: caller.uniqueId, inferred_cloud1_region: inferredId ? role.inferredRegion : '',
    inferred_entity_id: inferredId, inferred_entity_type: inferredId ? role.inferredEntityType : '',
  });
  const aliasName = identity.iamAlias === 'unique_id' ? caller.uniqueId : identity.iamAlias === 'full_arn' ? caller.arn : role.roleId;
  return {
    login: {
      aliasName,
      aliasMetadata: selected,
      metadata: { ...selected, role: roleName, role_id: role.roleId },
      displayName: caller.parsed.type === 'assumed-role' ? `${caller.parsed.name}-${caller.parsed.sessionName}` : caller.parsed.name,
      ...tokenParameters(role),
      internal: {
        auth_type: 'iam', role_name: roleName, role_id: role.roleId, client_arn: caller.arn, canonical_arn: caller.canonical,
        client_user_id: caller.uniqueId, account_id: caller.account, inferred_entity_type: role.inferredEntityType,
        inferred_entity_id: inferredId,
      },
    },
  };
}
