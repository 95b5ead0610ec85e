import {
  BadRequestError, definePath, NotFoundError, type FieldData, type FieldSchemas, type PathDefinition,
} from '@strongroom/core';
import {
  compactPolicy, CREDENTIAL_TYPES, emptyRole, legacyRoles, loadRole, parseTags, roleView, storeRole, validateRole,
  type CredentialType, type LegacyRole, type RoleEntry,
} from './role';
import type { Cloud1SecretsContext } from './context';
import { KEYS, ROLE_NAME } from './storage-keys';

const FIELDS: FieldSchemas = {
  name: { type: 'string', required: true },
  credential_type: { type: 'string', description: `one of ${CREDENTIAL_TYPES.join(', ')}` },
  role_arns: { type: 'comma-list', description: 'roles assumed_role credentials may assume' },
  policy_arns: { type: 'comma-list', description: 'managed policies: attached to IAM users, or filters on STS sessions' },
  policy_document: { type: 'any', description: 'an IAM policy document (JSON)' },
  iam_groups: { type: 'comma-list', description: 'groups IAM users join; for STS, their policies join the session policies' },
  iam_tags: { type: 'any', description: 'key=value tags of created IAM users' },
  default_sts_ttl: { type: 'duration' },
  max_sts_ttl: { type: 'duration' },
  user_path: { type: 'string', description: 'path of created IAM users (default /)' },
  permissions_boundary_arn: { type: 'string' },
  mfa_serial_number: { type: 'string', description: 'MFA device of the configured IAM user, for session_token' },
  policy: { type: 'any', description: 'legacy: an IAM policy document; not to be mixed with the other fields' },
  arn: { type: 'string', description: 'legacy: a managed policy or role ARN; not to be mixed with the other fields' },
};

/** The current (non-legacy) fields, in the order a mixed write reports them. */
const NEW_FIELDS = [
  'credential_type', 'role_arns', 'policy_arns', 'policy_document', 'iam_groups', 'iam_tags', 'default_sts_ttl', 'max_sts_ttl',
  'user_path', 'permissions_boundary_arn', 'mfa_serial_number',
];

function refuse(field: string, rule: string): never {
  throw new BadRequestError(`invalid value for "${field}": ${rule}`);
}

/** A policy given as JSON text or as an already-parsed object. */
function policyText(f: FieldData, field: string): string {
  const v = f.get(field);
  if (typeof v === 'string') return compactPolicy(field, v);
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) return JSON.stringify(v);
  return refuse(field, 'must be a JSON policy document');
}

function credentialType(value: string): CredentialType {
  if (!(CREDENTIAL_TYPES as readonly string[]).includes(value)) refuse('credential_type', `must be one of ${CREDENTIAL_TYPES.join(', ')}`);
  return value as CredentialType;
}

function applyFields(base: RoleEntry, f: FieldData): RoleEntry {
  const role: RoleEntry = { ...base, iamTags: { ...base.iamTags } };
  if (f.has('role_arns')) role.roleArns = f.list('role_arns');
  if (f.has('policy_arns')) role.policyArns = f.list('policy_arns');
  if (f.has('policy_document')) role.policyDocument = policyText(f, 'policy_document');
  if (f.has('iam_groups')) role.iamGroups = f.list('iam_groups');
  if (f.has('iam_tags')) role.iamTags = parseTags(f.get('iam_tags'));
  if (f.has('default_sts_ttl')) role.defaultStsTtl = f.int('default_sts_ttl');
  if (f.has('max_sts_ttl')) role.maxStsTtl = f.int('max_sts_ttl');
  if (f.has('user_path')) role.userPath = f.string('user_path').trim() || '/';
  if (f.has('permissions_boundary_arn')) role.permissionsBoundaryArn = f.string('permissions_boundary_arn').trim();
  if (f.has('mfa_serial_number')) role.mfaSerialNumber = f.string('mfa_serial_number').trim();
  return role;
}

/** `roles/:name` and `roles`: create, update, read, delete and list roles. */
export function rolesPaths(ctx: Cloud1SecretsContext): PathDefinition[] {
  return [
    definePath({
      pattern: `roles/(?<name>${ROLE_NAME})`,
      fields: FIELDS,
      existenceCheck: async (req, f) => (await req.storage.get(KEYS.rolePrefix + f.string('name'))) !== null,
      operations: {
        read: async (req, f) => {
          const loaded = await loadRole(req.storage, f.string('name'));
          if (!loaded) return null;
          if (!loaded.ok) return { data: { invalid_data: loaded.raw }, warnings: [`the stored role is invalid: ${loaded.reason}`] };
          return { data: roleView(loaded.variants) };
        },
        // Under the role's lock: an update merges into what is stored.
        create: (req, f) => ctx.locks.run(KEYS.rolePrefix + f.string('name'), async () => {
          const name = f.string('name');
          if (f.has('policy') || f.has('arn')) {
            // The legacy form stands alone: it replaces the role and takes no other field.
            for (const field of NEW_FIELDS) {
              if (f.has(field)) refuse(field, 'cannot be mixed with the legacy "policy" or "arn" parameter');
            }
            if (f.has('policy') && f.has('arn')) refuse('arn', 'give either the legacy "policy" or "arn", not both');
            const legacy: LegacyRole = f.has('policy') ? { policy: policyText(f, 'policy') } : { arn: f.string('arn').trim() };
            legacyRoles(legacy);
            await storeRole(req.storage, name, { version: 1, legacy });
            return null;
          }
          // An update keeps what it does not name; a legacy or unreadable role is replaced whole.
          const existing = await loadRole(req.storage, name);
          const base = existing?.ok && !existing.legacy ? existing.variants[0] : undefined;
          if (!base && !f.has('credential_type')) throw new BadRequestError('missing required field "credential_type"');
          const type = f.has('credential_type') ? credentialType(f.string('credential_type').trim()) : (base as RoleEntry).credentialType;
          const role = applyFields({ ...(base ?? emptyRole(type)), credentialType: type }, f);
          validateRole(role);
          await storeRole(req.storage, name, { version: 1, role });
          return null;
        }),
        delete: async (req, f) => {
          const key = KEYS.rolePrefix + f.string('name');
          if ((await req.storage.get(key)) === null) throw new NotFoundError(`role "${f.string('name')}" does not exist`);
          await req.storage.delete(key);
          return null;
        },
      },
      help: 'Roles: the credential type and the policies of the credentials creds/:name and sts/:name make.',
    }),
    definePath({
      pattern: 'roles/?',
      operations: {
        list: async (req) => ({ data: { keys: await req.storage.list(KEYS.rolePrefix) } }),
      },
      help: 'Lists the role names.',
    }),
  ];
}
