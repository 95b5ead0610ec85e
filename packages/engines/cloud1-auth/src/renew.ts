/**
 * What a renewal of a login token rechecks, as Vault's renew handlers do: the role still exists
 * (and is the same role, not one deleted and made again), the instance is still running and
 * meets the role, the principal is still bound; then the role's current TTLs apply.
 */
import {
  PermissionDeniedError, type BackendRequest, type LoginRenewal, type LoginRenewRequest,
} from '@strongroom/core';
import { readAccessListEntry, withAccessListEntry, writeAccessListEntry } from './access-list';
import type { Cloud1Context } from './context';
import { verifyInstance } from './instance-check';
import { checkInferredInstance, checkPrincipal } from './login-iam';
import { shortest } from './login-common';
import { parseArn } from './arn';
import { readClientConfig } from './path-config-client';
import { readRole } from './role';

function text(internal: Record<string, unknown>, name: string): string {
  const v = internal[name];
  return typeof v === 'string' ? v : '';
}

export async function renewLogin(ctx: Cloud1Context, req: BackendRequest, token: LoginRenewRequest): Promise<LoginRenewal> {
  const internal = token.internal;
  const roleName = text(internal, 'role_name');
  const role = await readRole(req.storage, roleName);
  if (!role) throw new PermissionDeniedError(`cannot renew: role "${roleName}" no longer exists`);
  if (role.roleId !== text(internal, 'role_id')) throw new PermissionDeniedError(`cannot renew: role "${roleName}" was deleted and made again since the login`);
  const config = await readClientConfig(req.storage);
  const authType = text(internal, 'auth_type');
  if (role.authType !== authType) throw new PermissionDeniedError(`cannot renew: role "${roleName}" no longer has auth_type ${authType}`);
  const tagMaxTtl = typeof internal['tag_max_ttl'] === 'number' ? internal['tag_max_ttl'] : 0;

  if (authType === 'vm') {
    const instanceId = text(internal, 'instance_id');
    if (!(await readAccessListEntry(req.storage, instanceId))) {
      throw new PermissionDeniedError(`cannot renew: instance ${instanceId} is no longer on the identity access list`);
    }
    await verifyInstance(ctx, req.storage, config, roleName, role, {
      accountId: text(internal, 'account_id'), region: text(internal, 'region'), instanceId,
    });
    const maxTtl = shortest(role.tokenMaxTtl, tagMaxTtl, req.mount.maxLeaseTtl);
    await withAccessListEntry(req.mount.uuid, instanceId, async () => {
      const entry = await readAccessListEntry(req.storage, instanceId);
      if (!entry) throw new PermissionDeniedError(`cannot renew: instance ${instanceId} is no longer on the identity access list`);
      const now = ctx.clock.now();
      await writeAccessListEntry(req.storage, instanceId, {
        ...entry, expirationTime: Math.max(entry.expirationTime, now + Math.max(maxTtl, role.tokenPeriod) * 1000), lastUpdatedTime: now,
      });
    });
  } else {
    // A role that started inferring after the login has nothing to check the token's instance against.
    if (role.inferredEntityType !== text(internal, 'inferred_entity_type')) {
      throw new PermissionDeniedError(`cannot renew: the inferred_entity_type of role "${roleName}" changed since the login; log in again`);
    }
    const arn = text(internal, 'client_arn');
    const parsed = parseArn(arn);
    if (!parsed) throw new PermissionDeniedError('cannot renew: the token does not say who logged in');
    const caller = { arn, parsed, canonical: text(internal, 'canonical_arn'), uniqueId: text(internal, 'client_user_id'), account: text(internal, 'account_id') };
    await checkPrincipal(ctx, req.storage, config, roleName, role, caller);
    await checkInferredInstance(ctx, req.storage, config, roleName, role, caller);
  }
  return { ttl: role.tokenTtl, maxTtl: shortest(role.tokenMaxTtl, tagMaxTtl), period: role.tokenPeriod };
}
