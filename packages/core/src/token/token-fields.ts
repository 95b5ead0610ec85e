import type { FieldSchemas } from '../framework/fields';

export const CREATE_FIELDS: FieldSchemas = {
  id: { type: 'string' },
  role_name: { type: 'string' },
  policies: { type: 'comma-list' },
  meta: { type: 'string-map' },
  metadata: { type: 'string-map' },
  no_parent: { type: 'bool' },
  no_default_policy: { type: 'bool' },
  renewable: { type: 'bool', default: true },
  ttl: { type: 'duration' },
  lease: { type: 'duration' },
  explicit_max_ttl: { type: 'duration' },
  period: { type: 'duration' },
  display_name: { type: 'string' },
  num_uses: { type: 'int' },
  type: { type: 'string', allowed: ['service', 'batch', 'default', 'default-service', 'default-batch'] },
  bound_cidrs: { type: 'comma-list' },
  token_bound_cidrs: { type: 'comma-list' },
  entity_alias: { type: 'string' },
};
