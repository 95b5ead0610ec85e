import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import type { Cloud1Context } from './context';
import { normalizeRoleName, readRole } from './role';
import { createRoleTagValue, tagPoliciesOutsideRole } from './role-tag';
import { ROLE_NAME } from './path-role';

export function roleTagPaths(_ctx: Cloud1Context): PathDefinition[] {
  return [
    definePath({
      pattern: `role/(?<role>${ROLE_NAME})/tag`,
      fields: {
        role: { type: 'string', required: true },
        policies: { type: 'comma-list' },
        max_ttl: { type: 'duration', default: 0 },
        instance_id: { type: 'string', default: '' },
        allow_instance_migration: { type: 'bool', default: false },
        disallow_reauthentication: { type: 'bool', default: false },
      },
      operations: {
        update: async (req, f) => {
          const name = normalizeRoleName(f.string('role'));
          const role = await readRole(req.storage, name);
          if (!role) throw new BadRequestError(`invalid value for "role": role "${name}" does not exist`);
          if (role.roleTag === '') throw new BadRequestError(`invalid value for "role": role "${name}" has no "role_tag" key set, so it takes no tags`);
          if (f.bool('allow_instance_migration') && f.bool('disallow_reauthentication')) {
            throw new BadRequestError('invalid value for "allow_instance_migration": mutually exclusive with "disallow_reauthentication"');
          }
          // Capabilities of a tag must be a strict subset of the role's: a tag only narrows.
          if (f.bool('allow_instance_migration') && !role.allowInstanceMigration) {
            throw new BadRequestError(
              `invalid value for "allow_instance_migration": a tag's capabilities must be a subset of its role's, and role "${name}" has allow_instance_migration false`,
            );
          }
          const policies = f.has('policies') ? f.list('policies') : undefined;
          const outside = tagPoliciesOutsideRole(role, policies ?? []);
          if (outside.length > 0) {
            throw new BadRequestError(
              `invalid value for "policies": must be a subset of the role's policies; not granted by role "${name}": ${outside.join(', ')}`
              + (outside.some((p) => p.trim().toLowerCase() === 'default') ? ' (the role has token_no_default_policy set)' : ''),
            );
          }
          const maxTtl = f.int('max_ttl');
          const roleMax = role.tokenMaxTtl > 0 ? role.tokenMaxTtl : req.mount.maxLeaseTtl;
          if (roleMax > 0 && maxTtl > roleMax) {
            throw new BadRequestError(`invalid value for "max_ttl": ${maxTtl}s is more than the role's maximum of ${roleMax}s`);
          }
          const value = createRoleTagValue({
            role: name, ...(policies !== undefined ? { policies } : {}), maxTtl, instanceId: f.string('instance_id'),
            allowInstanceMigration: f.bool('allow_instance_migration'), disallowReauthentication: f.bool('disallow_reauthentication'),
          }, role.hmacKey);
          return { data: { tag_key: role.roleTag, tag_value: value } };
        },
      },
      help: 'Creates a role tag: a value to put in the role\'s tag on an instance to narrow what it gets.',
    }),
  ];
}
