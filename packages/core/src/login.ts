import type { Core } from './core';
import { PermissionDeniedError, StandbyError, StrongroomError } from './errors';
import type { LoginAliasInput, LoginAliasResult } from './identity/identity-store';
import { currentWriteScope } from './replication/forwarding';
import type { AuthResult, BackendRequest, LoginResult } from './framework/types';
import type { MountEntry } from './mounts/mount-table';
import type { NamespaceView } from './namespaces/namespace-registry';
import { normalizePolicyName } from './policy/policy';
import { parseCidrs } from './token/cidr';
import { authOf } from './token/token-create';

/**
 * The caller's entity and alias. A performance secondary cannot write them (the primary owns
 * identity), but the token must be its own: so only the alias is registered on the primary,
 * which answers once it has streamed back, and the login goes on here.
 */
async function loginIdentity(core: Core, input: LoginAliasInput): Promise<LoginAliasResult> {
  const scope = currentWriteScope();
  const forwardWrite = core.replication?.forwardWrite?.bind(core.replication);
  if (!scope || scope.refused || !forwardWrite) return core.identity.loginAlias(input);
  try {
    return await core.identity.loginAlias(input);
  } catch (err) {
    if (!scope.refused) throw err;
  }
  scope.refused = false;
  const reply = await forwardWrite({
    operation: 'update', path: 'identity/forwarded/login-alias',
    data: { mount_accessor: input.mountAccessor, mount_type: input.mountType, mount_path: input.mountPath, alias_name: input.aliasName, metadata: input.metadata ?? {} },
  });
  if (reply.status >= 300) throw new StrongroomError('forwarded', reply.status, errorsOf(reply.body));
  try {
    return await core.identity.loginAlias(input);
  } catch (err) {
    if (!scope.refused) throw err;
    scope.refused = false;
    throw new StandbyError('the primary registered this login\'s identity, but it has not reached this cluster yet; retry shortly');
  }
}

function errorsOf(body: unknown): string {
  const errors = (body as { errors?: unknown } | null)?.errors;
  return Array.isArray(errors) ? errors.join('; ') : 'the primary refused the login\'s identity';
}

/**
 * Turns an auth method's login into an identity and a token: finds or creates the entity and
 * alias for the caller, refuses a disabled entity, and issues an orphan token in the mount's
 * namespace with the TTL rules of the mount (the login may ask for less, never for more).
 */
export async function issueLoginToken(
  core: Core, view: NamespaceView, entry: MountEntry, req: BackendRequest, login: LoginResult,
): Promise<{ auth: AuthResult; warnings: string[] }> {
  const metadata = login.metadata ?? {};
  const identity = await loginIdentity(core, {
    mountAccessor: entry.accessor, mountType: entry.type, mountPath: `auth/${entry.path}`, aliasName: login.aliasName,
    metadata: login.aliasMetadata ?? metadata,
  });
  if (identity.entity.disabled) throw new PermissionDeniedError();

  const policies = new Set(login.policies.map(normalizePolicyName).filter((p) => p !== ''));
  if (!login.noDefaultPolicy) policies.add('default');
  const warnings: string[] = [];
  const mountMax = req.mount.maxLeaseTtl;
  const maxTtl = login.maxTtl && login.maxTtl > 0 ? Math.min(login.maxTtl, mountMax) : mountMax;
  const period = login.period ?? 0;
  let ttl = period > 0 ? period : login.ttl && login.ttl > 0 ? login.ttl : req.mount.defaultLeaseTtl;
  if (ttl > maxTtl) {
    warnings.push(`TTL of ${ttl}s is more than the maximum of ${maxTtl}s; capped`);
    ttl = maxTtl;
  }
  // Without an explicit cap from the login, its maximum TTL is the hard cap (the older contract).
  const explicitMaxTtl = login.explicitMaxTtl ?? login.maxTtl ?? 0;
  if (explicitMaxTtl > 0 && ttl > explicitMaxTtl) {
    warnings.push(`TTL of ${ttl}s is more than the explicit maximum of ${explicitMaxTtl}s; capped`);
    ttl = explicitMaxTtl;
  }
  const tokenType = login.tokenType ?? 'service';
  const now = core.clock.now();
  const { id, entry: token } = await core.tokens.create({
    policies: [...policies].sort(),
    path: `auth/${entry.path}${req.path}`,
    meta: metadata,
    displayName: `${entry.path.replace(/\/$/, '').replace(/\//g, '-')}-${login.displayName ?? login.aliasName}`,
    numUses: login.numUses ?? 0,
    creationTime: now,
    creationTtl: ttl,
    expireTime: now + ttl * 1000,
    explicitMaxTtl,
    period,
    renewable: tokenType === 'service',
    type: tokenType,
    boundCidrs: parseCidrs('token_bound_cidrs', login.boundCidrs ?? []),
    entityId: identity.entityId,
    namespace: view.id,
    // Batch tokens are never renewed, so they carry nothing for a renewal check.
    ...(login.internal && tokenType === 'service'
      ? { login: { mountUuid: entry.uuid, internal: login.internal, maxTtl: login.explicitMaxTtl !== undefined ? login.maxTtl ?? 0 : 0 } }
      : {}),
  });
  return { auth: authOf(id, token, now), warnings };
}
