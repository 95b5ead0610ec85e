import { randomBytes, randomUUID } from 'node:crypto';
import {
  BadRequestError, definePath, type BackendRequest, type FieldData, type FieldSchemas, type PathDefinition,
} from '@strongroom/core';
import { globMatch, parseArn } from './arn';
import { checkCidrs } from './cidr';
import type { Cloud1Context } from './context';
import { readClientConfig } from './path-config-client';
import { KEYS } from './storage-keys';
import {
  emptyBounds, instanceBindsApply, normalizeRoleName, readRole, roleView, VM_BOUNDS, writeRole, type AuthType, type RoleEntry,
} from './role';

export const ROLE_NAME = '\\w(?:[\\w.-]*\\w)?';

const FIELDS: FieldSchemas = {
  role: { type: 'string', required: true },
  auth_type: { type: 'string', allowed: ['vm', 'iam'] },
  ...Object.fromEntries(VM_BOUNDS.map((b) => [b, { type: 'comma-list' }])),
  role_tag: { type: 'string' },
  bound_iam_principal_arn: { type: 'comma-list' },
  inferred_entity_type: { type: 'string', allowed: ['', 'vm_instance'] },
  inferred_cloud1_region: { type: 'string' },
  resolve_cloud1_unique_ids: { type: 'bool' },
  allow_instance_migration: { type: 'bool' },
  disallow_reauthentication: { type: 'bool' },
  token_ttl: { type: 'duration' },
  token_max_ttl: { type: 'duration' },
  token_policies: { type: 'comma-list' },
  policies: { type: 'comma-list', description: 'deprecated: use token_policies' },
  token_bound_cidrs: { type: 'comma-list' },
  token_explicit_max_ttl: { type: 'duration' },
  token_no_default_policy: { type: 'bool' },
  token_num_uses: { type: 'int' },
  token_period: { type: 'duration' },
  token_type: { type: 'string', allowed: ['', 'service', 'batch', 'default'] },
};

function newRole(authType: AuthType): RoleEntry {
  return {
    roleId: randomUUID(), authType, bounds: emptyBounds(), roleTag: '', boundIamPrincipalArns: [], boundIamPrincipalIds: [],
    inferredEntityType: '', inferredRegion: '', resolveUniqueIds: true, allowInstanceMigration: false,
    disallowReauthentication: false, hmacKey: randomBytes(32).toString('base64'), tokenTtl: 0, tokenMaxTtl: 0, tokenPolicies: [],
    tokenBoundCidrs: [], tokenExplicitMaxTtl: 0, tokenNoDefaultPolicy: false, tokenNumUses: 0, tokenPeriod: 0, tokenType: '',
  };
}

function refuse(field: string, rule: string): never {
  throw new BadRequestError(`invalid value for "${field}": ${rule}`);
}

/** The fields of a write over the stored role (an update keeps what it does not name). */
function applyFields(role: RoleEntry, f: FieldData, existing: boolean): RoleEntry {
  const next: RoleEntry = { ...role, bounds: { ...role.bounds } };
  for (const b of VM_BOUNDS) if (f.has(b)) next.bounds[b] = f.list(b);
  if (f.has('role_tag')) next.roleTag = f.string('role_tag');
  if (f.has('bound_iam_principal_arn')) next.boundIamPrincipalArns = f.list('bound_iam_principal_arn');
  if (f.has('inferred_entity_type')) next.inferredEntityType = f.string('inferred_entity_type') as RoleEntry['inferredEntityType'];
  if (f.has('inferred_cloud1_region')) next.inferredRegion = f.string('inferred_cloud1_region');
  if (f.has('resolve_cloud1_unique_ids')) next.resolveUniqueIds = f.bool('resolve_cloud1_unique_ids');
  if (f.has('allow_instance_migration')) next.allowInstanceMigration = f.bool('allow_instance_migration');
  if (f.has('disallow_reauthentication')) next.disallowReauthentication = f.bool('disallow_reauthentication');
  if (f.has('token_ttl')) next.tokenTtl = f.int('token_ttl');
  if (f.has('token_max_ttl')) next.tokenMaxTtl = f.int('token_max_ttl');
  // The deprecated name counts only when the current one is absent.
  if (f.has('token_policies')) next.tokenPolicies = f.list('token_policies');
  else if (f.has('policies')) next.tokenPolicies = f.list('policies');
  if (f.has('token_bound_cidrs')) next.tokenBoundCidrs = checkCidrs('token_bound_cidrs', f.list('token_bound_cidrs'));
  if (f.has('token_explicit_max_ttl')) next.tokenExplicitMaxTtl = f.int('token_explicit_max_ttl');
  if (f.has('token_no_default_policy')) next.tokenNoDefaultPolicy = f.bool('token_no_default_policy');
  if (f.has('token_num_uses')) next.tokenNumUses = f.int('token_num_uses');
  if (f.has('token_period')) next.tokenPeriod = f.int('token_period');
  if (f.has('token_type')) next.tokenType = f.string('token_type') as RoleEntry['tokenType'];
  if (!existing && !f.has('resolve_cloud1_unique_ids')) next.resolveUniqueIds = true;
  return next;
}

/** Rules 1 and 2 of a role (constraints that apply, at least one set) and the field-level rules. */
function validate(role: RoleEntry): void {
  const instance = instanceBindsApply(role);
  if (role.inferredEntityType !== '') {
    if (role.authType !== 'iam') refuse('inferred_entity_type', 'only applies to roles with auth_type iam');
    if (role.inferredRegion === '') refuse('inferred_cloud1_region', 'required when "inferred_entity_type" is set');
  } else if (role.inferredRegion !== '') {
    refuse('inferred_cloud1_region', 'only applies when "inferred_entity_type" is set');
  }
  for (const b of VM_BOUNDS) {
    if (role.bounds[b].length > 0 && !instance) {
      refuse(b, 'only applies to roles with auth_type vm, or iam roles with inferred_entity_type vm_instance');
    }
  }
  if (role.boundIamPrincipalArns.length > 0 && role.authType !== 'iam') refuse('bound_iam_principal_arn', 'only applies to roles with auth_type iam');
  if (role.roleTag !== '' && role.authType !== 'vm') refuse('role_tag', 'only applies to roles with auth_type vm');
  if (role.roleTag.length > 127) refuse('role_tag', 'a tag key is at most 127 characters');
  if (role.allowInstanceMigration && role.authType !== 'vm') refuse('allow_instance_migration', 'only applies to roles with auth_type vm');
  if (role.disallowReauthentication && role.authType !== 'vm') refuse('disallow_reauthentication', 'only applies to roles with auth_type vm');
  if (role.allowInstanceMigration && role.disallowReauthentication) {
    refuse('allow_instance_migration', 'mutually exclusive with "disallow_reauthentication"');
  }
  const constraints = VM_BOUNDS.filter((b) => role.bounds[b].length > 0).length + (role.boundIamPrincipalArns.length > 0 ? 1 : 0);
  if (constraints === 0) {
    const names = role.authType === 'iam' ? ['bound_iam_principal_arn', ...(instance ? VM_BOUNDS : [])] : [...VM_BOUNDS];
    throw new BadRequestError(`invalid role: at least one constraint must be set, one of ${names.map((n) => `"${n}"`).join(', ')}`);
  }
  for (const arn of [...role.bounds.bound_iam_role_arn, ...role.bounds.bound_iam_instance_profile_arn, ...role.boundIamPrincipalArns]) {
    if (arn.indexOf('*') !== -1 && arn.indexOf('*') !== arn.length - 1) {
      const field = role.boundIamPrincipalArns.includes(arn) ? 'bound_iam_principal_arn'
        : role.bounds.bound_iam_role_arn.includes(arn) ? 'bound_iam_role_arn' : 'bound_iam_instance_profile_arn';
      refuse(field, `"${arn}" may have a wildcard only at its end`);
    }
  }
  for (const arn of role.boundIamPrincipalArns) {
    if (arn.endsWith('*')) {
      if (!arn.startsWith('arn:')) refuse('bound_iam_principal_arn', `"${arn}" is not an ARN`);
      continue;
    }
    const parsed = parseArn(arn);
    if (!parsed || parsed.service !== 'iam' || (parsed.type !== 'user' && parsed.type !== 'role')) {
      refuse('bound_iam_principal_arn', `"${arn}" is not the ARN of an IAM user or role (or a prefix ending in *)`);
    }
    // Without resolution the caller's ARN is compared in its canonical form, which has no path.
    if (!role.resolveUniqueIds && parsed.path !== '/') {
      refuse('bound_iam_principal_arn', `"${arn}" has a path; with resolve_cloud1_unique_ids false bind it without the path, as arn:...:${parsed.type}/${parsed.name}`);
    }
  }
  if (role.tokenNumUses < 0) refuse('token_num_uses', 'must not be negative');
  if (role.tokenTtl > 0 && role.tokenMaxTtl > 0 && role.tokenTtl > role.tokenMaxTtl) {
    refuse('token_ttl', 'must not be greater than "token_max_ttl"');
  }
}

/**
 * Resolves each non-wildcard bound ARN to the principal's unique ID (a role deleted and made
 * again under the same name then no longer matches). Every write re-resolves, so an update
 * refreshes the cached IDs, and fails when the service can no longer resolve them.
 */
async function resolvePrincipalIds(ctx: Cloud1Context, req: BackendRequest, arns: readonly string[]): Promise<string[]> {
  const config = await readClientConfig(req.storage);
  const ids: string[] = [];
  for (const arn of arns) {
    if (arn.endsWith('*')) continue;
    const parsed = parseArn(arn) as NonNullable<ReturnType<typeof parseArn>>;
    try {
      const found = await ctx.provider.principal(req.storage, config, parsed.accountId, parsed.type as 'user' | 'role', parsed.name);
      // A bound ARN with a path must name the principal's actual path.
      if (parsed.path !== '/' && !globMatch(arn, found.arn)) throw new Error(`its ARN is ${found.arn}`);
      ids.push(found.uniqueId);
    } catch (err) {
      throw new BadRequestError(`invalid value for "bound_iam_principal_arn": unable to resolve "${arn}" to a unique ID: ${(err as Error).message}`, { cause: err });
    }
  }
  return ids;
}

async function writeHandler(ctx: Cloud1Context, req: BackendRequest, f: FieldData) {
  const name = normalizeRoleName(f.string('role'));
  const current = await readRole(req.storage, name);
  if (current && f.has('auth_type') && f.string('auth_type') !== current.authType) {
    refuse('auth_type', `cannot change the auth_type of an existing role (it is ${current.authType})`);
  }
  const base = current ?? newRole((f.has('auth_type') ? f.string('auth_type') : 'iam') as AuthType);
  const role = applyFields(base, f, current !== null);
  if (current && current.resolveUniqueIds && !role.resolveUniqueIds) {
    refuse('resolve_cloud1_unique_ids', 'cannot change from true to false; delete the role and create it again');
  }
  validate(role);
  role.boundIamPrincipalIds = role.authType === 'iam' && role.resolveUniqueIds
    ? await resolvePrincipalIds(ctx, req, role.boundIamPrincipalArns)
    : [];
  await writeRole(req.storage, name, role);
  return null;
}

export function rolePaths(ctx: Cloud1Context): PathDefinition[] {
  return [
    definePath({
      pattern: 'roles/?',
      operations: { list: async (req) => ({ data: { keys: await req.storage.list(KEYS.rolePrefix) } }) },
      help: 'Lists the role names.',
    }),
    definePath({
      pattern: `role/(?<role>${ROLE_NAME})`,
      fields: FIELDS,
      existenceCheck: async (req, f) => (await readRole(req.storage, f.string('role'))) !== null,
      operations: {
        read: async (req, f) => {
          const role = await readRole(req.storage, f.string('role'));
          return role ? { data: roleView(role) } : null;
        },
        create: (req, f) => writeHandler(ctx, req, f),
        delete: async (req, f) => {
          await req.storage.delete(KEYS.rolePrefix + normalizeRoleName(f.string('role')));
          return null;
        },
      },
      help: 'A role: the constraints a login must meet and the token it gets.',
    }),
  ];
}
