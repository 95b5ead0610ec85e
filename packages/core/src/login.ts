import type { Core } from './core';
import { PermissionDeniedError } from './errors';
import type { AuthResult, BackendRequest, LoginResult } from './framework/types';
import type { MountEntry } from './mounts/mount-table';
import type { NamespaceView } from './namespaces/namespace-registry';
import { normalizePolicyName } from './policy/policy';
import { parseCidrs } from './token/cidr';
import { authOf } from './token/token-create';

/**
 * Turns an auth method's login into an identity and a token: finds or creates the entity and
 * alias for the caller, refuses a disabled entity, and issues an orphan token in the mount's
 * namespace with the TTL rules of the mount (the login may ask for less, never for more).
 */
export async function issueLoginToken(
  core: Core, view: NamespaceView, entry: MountEntry, req: BackendRequest, login: LoginResult,
): Promise<{ auth: AuthResult; warnings: string[] }> {
  const metadata = login.metadata ?? {};
  const identity = await core.identity.loginAlias({
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
