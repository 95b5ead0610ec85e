import { getJson, putJson, type LogicalStorage } from '@strongroom/core';
import { KEYS } from './storage-keys';

export type AuthType = 'vm' | 'iam';

/** The instance constraints, shared by `vm` roles and `iam` roles that infer an instance. */
export const VM_BOUNDS = [
  'bound_image_id', 'bound_account_id', 'bound_region', 'bound_vpc_id', 'bound_subnet_id', 'bound_iam_role_arn',
  'bound_iam_instance_profile_arn', 'bound_vm_instance_id',
] as const;
export type VmBound = (typeof VM_BOUNDS)[number];

/** A role as stored. The HMAC key signs the role's tags and is never shown. */
export interface RoleEntry {
  roleId: string;
  authType: AuthType;
  bounds: Record<VmBound, string[]>;
  roleTag: string;
  boundIamPrincipalArns: string[];
  /** Unique IDs resolved from the non-wildcard bound ARNs, when resolution is on. */
  boundIamPrincipalIds: string[];
  inferredEntityType: '' | 'vm_instance';
  inferredRegion: string;
  resolveUniqueIds: boolean;
  allowInstanceMigration: boolean;
  disallowReauthentication: boolean;
  hmacKey: string;
  tokenTtl: number;
  tokenMaxTtl: number;
  tokenPolicies: string[];
  tokenBoundCidrs: string[];
  tokenExplicitMaxTtl: number;
  tokenNoDefaultPolicy: boolean;
  tokenNumUses: number;
  tokenPeriod: number;
  tokenType: '' | 'service' | 'batch' | 'default';
}

export function emptyBounds(): Record<VmBound, string[]> {
  return Object.fromEntries(VM_BOUNDS.map((b) => [b, []])) as unknown as Record<VmBound, string[]>;
}

/** Role names are case-insensitive: every path stores and finds them lower-cased. */
export function normalizeRoleName(name: string): string {
  return name.trim().toLowerCase();
}

/**
 * Reads a role. Entries written before auth_type existed were instance roles, so an entry
 * without one reads as `vm`; one without the resolve option predates it and reads as false.
 */
export async function readRole(storage: LogicalStorage, name: string): Promise<RoleEntry | null> {
  const stored = await getJson<Partial<RoleEntry>>(storage, KEYS.rolePrefix + normalizeRoleName(name));
  if (!stored) return null;
  return {
    roleId: '', authType: 'vm', roleTag: '', boundIamPrincipalArns: [], boundIamPrincipalIds: [],
    inferredEntityType: '', inferredRegion: '', resolveUniqueIds: false, allowInstanceMigration: false,
    disallowReauthentication: false, hmacKey: '', tokenTtl: 0, tokenMaxTtl: 0, tokenPolicies: [], tokenBoundCidrs: [],
    tokenExplicitMaxTtl: 0, tokenNoDefaultPolicy: false, tokenNumUses: 0, tokenPeriod: 0, tokenType: '',
    ...stored,
    bounds: { ...emptyBounds(), ...(stored.bounds ?? {}) },
  };
}

export function writeRole(storage: LogicalStorage, name: string, role: RoleEntry): Promise<void> {
  return putJson(storage, KEYS.rolePrefix + normalizeRoleName(name), role);
}

/** Whether the instance constraints apply: `vm` roles, and `iam` roles that infer an instance. */
export function instanceBindsApply(role: Pick<RoleEntry, 'authType' | 'inferredEntityType'>): boolean {
  return role.authType === 'vm' || role.inferredEntityType === 'vm_instance';
}

/** The role as read answers it: no HMAC key, no resolved IDs. */
export function roleView(role: RoleEntry): Record<string, unknown> {
  return {
    role_id: role.roleId,
    auth_type: role.authType,
    ...role.bounds,
    role_tag: role.roleTag,
    bound_iam_principal_arn: role.boundIamPrincipalArns,
    inferred_entity_type: role.inferredEntityType,
    inferred_cloud1_region: role.inferredRegion,
    resolve_cloud1_unique_ids: role.resolveUniqueIds,
    allow_instance_migration: role.allowInstanceMigration,
    disallow_reauthentication: role.disallowReauthentication,
    token_ttl: role.tokenTtl,
    token_max_ttl: role.tokenMaxTtl,
    token_policies: role.tokenPolicies,
    policies: role.tokenPolicies,
    token_bound_cidrs: role.tokenBoundCidrs,
    token_explicit_max_ttl: role.tokenExplicitMaxTtl,
    token_no_default_policy: role.tokenNoDefaultPolicy,
    token_num_uses: role.tokenNumUses,
    token_period: role.tokenPeriod,
    token_type: role.tokenType === '' ? 'default' : role.tokenType,
  };
}
