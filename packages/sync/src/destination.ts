import { BadRequestError, checkPathName, type FieldData, type FieldSchemas } from '@strongroom/core';
import {
  DESTINATION_TYPES, GRANULARITIES, ownerOf, TYPE_SPECS, checkConnection, type DestinationType, type Granularity, type SyncSettings,
} from './destination-types';
import { parseTemplate } from './template';

/** A destination as stored (behind the barrier: its connection holds credentials). */
export interface Destination {
  name: string;
  type: DestinationType;
  connection: Record<string, unknown>;
  granularity: Granularity;
  /** Null: the type's default for the granularity, so a change of granularity keeps a working name. */
  secret_name_template: string | null;
  custom_tags: Record<string, string>;
  /** Set while a `DELETE ?purge=true` unsyncs the destination's associations (epoch ms), with what holds it up. */
  purge_initiated_at?: number;
  purge_error?: string;
}

export const OBFUSCATED = '*****';

/** Every field a destination write may carry; each type takes its own and the common options. */
export const DESTINATION_FIELDS: FieldSchemas = {
  type: { type: 'string', required: true },
  name: { type: 'string', required: true },
  granularity: { type: 'string' },
  secret_name_template: { type: 'string' },
  custom_tags: { type: 'string-map' },
  ...Object.assign({}, ...DESTINATION_TYPES.map((t) => TYPE_SPECS[t].fields)) as FieldSchemas,
};

/** Destination names are path segments and storage key segments. */
export function requireDestinationName(name: string): string {
  checkPathName('name', name);
  if (name === '') throw new BadRequestError('missing required field "name"');
  return name;
}

/** The template a destination uses: its own, or its type's default for its granularity. */
export function effectiveTemplate(d: Pick<Destination, 'type' | 'granularity' | 'secret_name_template'>): string {
  return d.secret_name_template ?? TYPE_SPECS[d.type].template[d.granularity];
}

/**
 * The destination a create or update describes. An update starts from the stored destination
 * and changes only the fields it names; every rule is checked on the result.
 */
export function buildDestination(
  type: DestinationType, name: string, f: FieldData, existing: Destination | null, settings: SyncSettings,
): Destination {
  const spec = TYPE_SPECS[type];
  for (const field of Object.keys(DESTINATION_FIELDS)) {
    if (!f.has(field) || Object.hasOwn(spec.fields, field)) continue;
    const owner = ownerOf(field);
    if (owner) throw new BadRequestError(`"${field}" is a field of destination type ${owner}, not of ${type}`);
  }
  const connection: Record<string, unknown> = existing ? { ...existing.connection } : { ...spec.defaults };
  for (const field of Object.keys(spec.fields)) {
    if (f.has(field)) connection[field] = f.get(field);
  }
  checkConnection(type, connection, settings);

  let granularity = existing?.granularity ?? spec.granularity;
  if (f.has('granularity')) {
    const g = GRANULARITIES.find((x) => x === f.string('granularity'));
    if (!g) throw new BadRequestError(`invalid value for "granularity": must be one of ${GRANULARITIES.join(', ')}`);
    granularity = g;
  }
  let template = existing?.secret_name_template ?? null;
  // An empty template goes back to the type's default.
  if (f.has('secret_name_template')) template = f.string('secret_name_template') === '' ? null : f.string('secret_name_template');
  const parsed = parseTemplate(template ?? spec.template[granularity]);
  if (parsed.uses('SecretKey') && granularity !== 'secret-key') {
    throw new BadRequestError('invalid value for "secret_name_template": .SecretKey is only known with granularity secret-key');
  }
  if (!parsed.uses('SecretKey') && granularity === 'secret-key') {
    throw new BadRequestError('invalid value for "secret_name_template": with granularity secret-key it must use .SecretKey, or every key of a secret would get the same name');
  }

  let tags = existing?.custom_tags ?? {};
  if (f.has('custom_tags')) {
    if (!spec.customTags) {
      throw new BadRequestError(`invalid value for "custom_tags": destination type ${type} has no tags; only cloud1-sm, cloud2-kv and cloud3-sm do`);
    }
    tags = checkTags(type, f.map<string>('custom_tags') ?? {});
  }
  return { name, type, connection, granularity, secret_name_template: template, custom_tags: tags };
}

/**
 * The most tags each cloud takes, less one for the tag that marks a secret as managed by this
 * server, and the key and value syntax of each.
 */
const TAG_RULES: Partial<Record<DestinationType, { max: number; key: RegExp; value: RegExp; rule: string }>> = {
  'cloud1-sm': { max: 49, key: /^[\p{L}\p{N}\s_.:/=+@-]{1,128}$/u, value: /^[\p{L}\p{N}\s_.:/=+@-]{0,256}$/u, rule: 'keys of 1-128 and values of up to 256 letters, digits, spaces and _ . : / = + @ -' },
  'cloud2-kv': { max: 14, key: /^[^\u0000-\u001f\u007f]{1,512}$/, value: /^[^\u0000-\u001f\u007f]{0,256}$/, rule: 'keys of 1-512 and values of up to 256 characters, without control characters' },
  'cloud3-sm': { max: 63, key: /^[a-z][a-z0-9_-]{0,62}$/, value: /^[a-z0-9_-]{0,63}$/, rule: 'keys of 1-63 and values of up to 63 lower-case letters, digits, "_" and "-", keys starting with a letter' },
};

function checkTags(type: DestinationType, tags: Record<string, string>): Record<string, string> {
  const rules = TAG_RULES[type];
  if (!rules) return {};
  const entries = Object.entries(tags);
  if (entries.length > rules.max) throw new BadRequestError(`invalid value for "custom_tags": at most ${rules.max} tags for destination type ${type}`);
  for (const [k, v] of entries) {
    if (!rules.key.test(k) || !rules.value.test(v)) throw new BadRequestError(`invalid value for "custom_tags": destination type ${type} takes ${rules.rule}`);
  }
  return tags;
}

/** The read view: every credential shown as `*****` (or "" when not set), and the options. */
export function destinationView(d: Destination): Record<string, unknown> {
  const credentials = TYPE_SPECS[d.type].credentials;
  const connection_details: Record<string, unknown> = {};
  for (const field of Object.keys(TYPE_SPECS[d.type].fields)) {
    const v = d.connection[field];
    if (credentials.includes(field)) connection_details[field] = v === undefined || v === '' ? '' : OBFUSCATED;
    else if (v !== undefined) connection_details[field] = Array.isArray(v) ? [...v] : v;
  }
  return {
    name: d.name,
    type: d.type,
    connection_details,
    options: { granularity_level: d.granularity, secret_name_template: effectiveTemplate(d), custom_tags: { ...d.custom_tags } },
    ...(d.purge_initiated_at !== undefined ? { purge_initiated_at: new Date(d.purge_initiated_at).toISOString(), purge_error: d.purge_error ?? '' } : {}),
  };
}

/** Whether two versions of a destination reach the same place: every connection field but the credentials equal. */
export function sameTarget(a: Destination, b: Destination): boolean {
  if (a.type !== b.type) return false;
  const credentials = TYPE_SPECS[a.type].credentials;
  return Object.keys(TYPE_SPECS[a.type].fields).every((f) => credentials.includes(f) || JSON.stringify(a.connection[f] ?? '') === JSON.stringify(b.connection[f] ?? ''));
}
