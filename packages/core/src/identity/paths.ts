import { BadRequestError, PermissionDeniedError } from '../errors';
import { FORWARDED_CALLER } from '../replication/forwarding';
import type { FieldData, FieldSchemas } from '../framework/fields';
import { definePath, type BackendResponse, type PathDefinition } from '../framework/types';
import type { Entity, EntityAlias, EntityUpsert, IdentityStore } from './identity-store';

/** Vault sends nil maps as null; clients written against it expect that for empty metadata. */
function nullIfEmpty(map: Record<string, string>): Record<string, string> | null {
  return Object.keys(map).length > 0 ? map : null;
}

/** An alias as it appears inside an entity read. */
function embeddedAlias(alias: EntityAlias): Record<string, unknown> {
  return {
    id: alias.id,
    name: alias.name,
    canonical_id: alias.canonical_id,
    mount_accessor: alias.mount_accessor,
    mount_type: alias.mount_type,
    mount_path: alias.mount_path,
    metadata: nullIfEmpty(alias.metadata),
    creation_time: alias.creation_time,
    last_update_time: alias.last_update_time,
    local: alias.local,
    merged_from_canonical_ids: null,
    custom_metadata: {},
  };
}

/** `identity/entity-alias/id/:id`'s data. */
export function aliasResponse(alias: EntityAlias): Record<string, unknown> {
  return { ...embeddedAlias(alias), namespace_id: 'root' };
}

/**
 * `identity/entity/id/:id`'s data. Groups and MFA are not implemented, so their fields are
 * present and empty: clients index into them without checking.
 */
export function entityResponse(entity: Entity): Record<string, unknown> {
  return {
    id: entity.id,
    name: entity.name,
    metadata: nullIfEmpty(entity.metadata),
    policies: entity.policies,
    disabled: entity.disabled,
    aliases: entity.aliases.map(embeddedAlias),
    creation_time: entity.creation_time,
    last_update_time: entity.last_update_time,
    direct_group_ids: [],
    group_ids: [],
    inherited_group_ids: [],
    namespace_id: 'root',
    merged_entity_ids: entity.merged_entity_ids && entity.merged_entity_ids.length > 0 ? entity.merged_entity_ids : null,
    mfa_secrets: {},
  };
}

function entityListing(entities: Entity[], keyOf: (e: Entity) => string): BackendResponse {
  const keyInfo: Record<string, unknown> = {};
  for (const e of entities) {
    keyInfo[keyOf(e)] = {
      name: e.name,
      aliases: e.aliases.map((a) => ({ id: a.id, name: a.name, mount_accessor: a.mount_accessor, mount_type: a.mount_type, mount_path: a.mount_path })),
    };
  }
  return { data: { keys: entities.map(keyOf), key_info: keyInfo } };
}

/**
 * Metadata as Vault's key-value-pairs type takes it: an object, or a list of `key=value`
 * strings (what `vault write ... metadata=team=a metadata=env=b` sends). Scalars become strings.
 */
function parseMetadata(value: unknown): Record<string, string> {
  const fail = (rule: string): never => {
    throw new BadRequestError(`invalid value for "metadata": ${rule}`);
  };
  const out: Record<string, string> = {};
  const items = typeof value === 'string' ? (value === '' ? [] : [value]) : value;
  if (Array.isArray(items)) {
    for (const item of items) {
      if (typeof item !== 'string') return fail('expected "key=value" strings');
      const eq = item.indexOf('=');
      if (eq <= 0) return fail(`"${item}" is not of the form "key=value"`);
      out[item.slice(0, eq)] = item.slice(eq + 1);
    }
    return out;
  }
  if (items === null || typeof items !== 'object') return fail('expected an object of string values or a list of "key=value" strings');
  for (const [k, v] of Object.entries(items as Record<string, unknown>)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else return fail(`the value of "${k}" is not a string`);
  }
  return out;
}

const ENTITY_FIELDS: FieldSchemas = {
  name: { type: 'string', description: 'Name of the entity; generated when a new entity is created without one.' },
  metadata: { type: 'any', description: 'Key-value metadata of the entity (object or list of "key=value").' },
  policies: { type: 'comma-list', description: 'Identity policies of the entity, added to its tokens\' own.' },
  disabled: { type: 'bool', description: 'A disabled entity\'s tokens are refused, though not revoked.' },
};

const ID_FIELD: FieldSchemas = { id: { type: 'string', description: 'Identifier of the entity.' } };
const NAME_FIELD: FieldSchemas = { name: { type: 'string', description: 'Name of the entity.' } };
const ALIAS_ID_FIELD: FieldSchemas = { id: { type: 'string', description: 'Identifier of the alias.' } };

const LOOKUP_FIELDS: FieldSchemas = {
  id: { type: 'string', description: 'ID of the entity.' },
  name: { type: 'string', description: 'Name of the entity.' },
  alias_id: { type: 'string', description: 'ID of one of the entity\'s aliases.' },
  alias_name: { type: 'string', description: 'Name of an alias; with alias_mount_accessor.' },
  alias_mount_accessor: { type: 'string', description: 'Accessor of the alias\'s auth mount; with alias_name.' },
};

const CRITERIA = '"id", "name", "alias_id", or "alias_name" with "alias_mount_accessor"';

function upsertInput(f: FieldData): EntityUpsert {
  const input: EntityUpsert = {};
  if (f.has('metadata')) input.metadata = parseMetadata(f.get('metadata'));
  if (f.has('policies')) input.policies = f.list('policies');
  if (f.has('disabled')) input.disabled = f.bool('disabled');
  return input;
}

async function upsert(store: IdentityStore, input: EntityUpsert): Promise<BackendResponse | null> {
  const { entity, created } = await store.upsertEntity(input);
  // Vault answers a create with the new entity's ID and an update with no content.
  return created ? { data: { id: entity.id, name: entity.name, aliases: null } } : null;
}

/** The `identity/` backend's path table, over the store core builds at unseal. */
export function identityPaths(store: IdentityStore): PathDefinition[] {
  return [
    // A performance secondary's first login of a caller: the primary makes the entity and alias,
    // which stream back to the secondary; its token stays on the secondary.
    definePath({
      pattern: 'forwarded/login-alias',
      fields: {
        mount_accessor: { type: 'string', required: true }, mount_type: { type: 'string', required: true },
        mount_path: { type: 'string', required: true }, alias_name: { type: 'string', required: true }, metadata: { type: 'map' },
      },
      operations: {
        update: async (req, f) => {
          if (req.caller !== FORWARDED_CALLER) throw new PermissionDeniedError();
          const metadata = f.map('metadata');
          const result = await store.loginAlias({
            mountAccessor: f.string('mount_accessor'), mountType: f.string('mount_type'), mountPath: f.string('mount_path'),
            aliasName: f.string('alias_name'), ...(metadata ? { metadata: metadata as Record<string, string> } : {}),
          });
          return { data: { entity_id: result.entityId } };
        },
      },
      help: 'Register the entity and alias of a login made on a performance secondary (forwarded writes only).',
    }),
    definePath({
      pattern: 'entity',
      fields: { ...ENTITY_FIELDS, ...ID_FIELD },
      operations: {
        update: (_req, f) => {
          const input = upsertInput(f);
          if (f.string('id') !== '') input.id = f.string('id');
          if (f.string('name') !== '') input.name = f.string('name');
          return upsert(store, input);
        },
      },
      help: 'Create an entity, or update the one named by "id" or "name".',
    }),
    definePath({
      pattern: 'entity/id/?',
      operations: { list: async () => entityListing(await store.list(), (e) => e.id) },
      help: 'List entities by ID.',
    }),
    definePath({
      pattern: 'entity/id/(?<id>[^/]+)',
      fields: { ...ENTITY_FIELDS, ...ID_FIELD },
      operations: {
        read: async (_req, f) => {
          const entity = await store.get(f.string('id'));
          return entity ? { data: entityResponse(entity) } : null;
        },
        update: (_req, f) => {
          const input = upsertInput(f);
          input.id = f.string('id');
          if (f.string('name') !== '') input.name = f.string('name');
          return upsert(store, input);
        },
        delete: async (_req, f) => {
          await store.delete(f.string('id'));
          return null;
        },
      },
      help: 'Read, update or delete an entity by ID.',
    }),
    definePath({
      pattern: 'entity/name/?',
      operations: { list: async () => entityListing(await store.list(), (e) => e.name) },
      help: 'List entities by name.',
    }),
    definePath({
      pattern: 'entity/name/(?<name>.+)',
      fields: { ...ENTITY_FIELDS, ...NAME_FIELD },
      operations: {
        read: async (_req, f) => {
          const entity = await store.lookupByName(f.string('name'));
          return entity ? { data: entityResponse(entity) } : null;
        },
        update: (_req, f) => upsert(store, { ...upsertInput(f), name: f.string('name') }),
        delete: async (_req, f) => {
          const entity = await store.lookupByName(f.string('name'));
          if (entity) await store.delete(entity.id);
          return null;
        },
      },
      help: 'Read, create or update, or delete an entity by name.',
    }),
    definePath({
      pattern: 'entity-alias/id/?',
      operations: {
        list: async () => {
          const aliases = await store.listAliases();
          const keyInfo: Record<string, unknown> = {};
          for (const a of aliases) {
            keyInfo[a.id] = {
              name: a.name, canonical_id: a.canonical_id, mount_accessor: a.mount_accessor, mount_type: a.mount_type,
              mount_path: a.mount_path, metadata: nullIfEmpty(a.metadata), local: a.local, custom_metadata: {},
            };
          }
          return { data: { keys: aliases.map((a) => a.id), key_info: keyInfo } };
        },
      },
      help: 'List entity aliases by ID.',
    }),
    definePath({
      pattern: 'entity-alias/id/(?<id>[^/]+)',
      fields: ALIAS_ID_FIELD,
      operations: {
        read: async (_req, f) => {
          const alias = await store.getAlias(f.string('id'));
          return alias ? { data: aliasResponse(alias) } : null;
        },
        delete: async (_req, f) => {
          await store.deleteAlias(f.string('id'));
          return null;
        },
      },
      help: 'Read or delete an entity alias by ID.',
    }),
    definePath({
      pattern: 'lookup/entity',
      fields: LOOKUP_FIELDS,
      operations: {
        update: async (_req, f) => {
          const given = (field: string) => f.string(field) !== '';
          if (given('alias_name') !== given('alias_mount_accessor')) {
            const [has, lacks] = given('alias_name') ? ['alias_name', 'alias_mount_accessor'] : ['alias_mount_accessor', 'alias_name'];
            throw new BadRequestError(`missing "${lacks}": "${has}" needs it to look up an entity by alias`);
          }
          const criteria = ['id', 'name', 'alias_id', 'alias_name'].filter(given);
          if (criteria.length === 0) throw new BadRequestError(`missing lookup criteria: give one of ${CRITERIA}`);
          if (criteria.length > 1) {
            const named = criteria.map((c) => (c === 'alias_name' ? '"alias_name"+"alias_mount_accessor"' : `"${c}"`)).join(', ');
            throw new BadRequestError(`conflicting lookup criteria ${named}: give only one of ${CRITERIA}`);
          }
          let entity: Entity | null;
          switch (criteria[0]) {
            case 'id':
              entity = await store.lookupById(f.string('id'));
              break;
            case 'name':
              entity = await store.lookupByName(f.string('name'));
              break;
            case 'alias_id':
              entity = await store.lookupByAliasId(f.string('alias_id'));
              break;
            default:
              entity = await store.lookupByAlias(f.string('alias_name'), f.string('alias_mount_accessor'));
          }
          // Vault answers a lookup that finds nothing with 204 and no body, not 404.
          return entity ? { data: entityResponse(entity) } : null;
        },
      },
      help: 'Look up an entity by ID, name, alias ID, or alias name and mount accessor.',
    }),
  ];
}
