import { PermissionDeniedError, type BackendRequest, type LoginResult } from '@strongroom/core';
import { addressInCidrs } from './cidr';
import type { RoleEntry } from './role';

/** The shortest of the positive values (0 when none is). */
export function shortest(...values: number[]): number {
  const positive = values.filter((v) => v > 0);
  return positive.length ? Math.min(...positive) : 0;
}

/** A role with token_bound_cidrs only lets logins in from those blocks. */
export function checkLoginAddress(req: BackendRequest, roleName: string, role: RoleEntry): void {
  if (role.tokenBoundCidrs.length === 0) return;
  if (!addressInCidrs(req.remoteAddress, role.tokenBoundCidrs)) {
    throw new PermissionDeniedError(
      `login from ${req.remoteAddress ?? 'an unknown address'} is not within "token_bound_cidrs" of role "${roleName}"`,
    );
  }
}

/** The token the role's token_* parameters ask for (policies and max TTL may be narrowed by a role tag). */
export function tokenParameters(role: RoleEntry, narrowed: { policies?: string[]; maxTtl?: number } = {}): Omit<LoginResult, 'aliasName'> {
  return {
    policies: narrowed.policies ?? role.tokenPolicies,
    noDefaultPolicy: role.tokenNoDefaultPolicy,
    ttl: role.tokenTtl,
    maxTtl: shortest(role.tokenMaxTtl, narrowed.maxTtl ?? 0),
    explicitMaxTtl: role.tokenExplicitMaxTtl,
    period: role.tokenPeriod,
    numUses: role.tokenNumUses,
    boundCidrs: role.tokenBoundCidrs,
    ...(role.tokenType === 'service' || role.tokenType === 'batch' ? { tokenType: role.tokenType } : {}),
  };
}

/** The selected fields of `values` (config/identity's *_metadata), skipping empty ones. */
export function selectMetadata(selected: readonly string[], values: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of selected) {
    const v = values[name];
    if (v !== undefined && v !== '') out[name] = v;
  }
  return out;
}
