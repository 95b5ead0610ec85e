import { BadRequestError } from '../errors';
import { hasLoneSurrogate } from '../path-names';
import { parseDurationSeconds } from './duration';

export type FieldType =
  | 'string'
  | 'lowercase-string'
  | 'int'
  | 'bool'
  | 'duration'
  | 'comma-list'
  | 'string-list'
  | 'int-list'
  | 'map'
  | 'string-map'
  | 'time'
  | 'any';

export interface FieldSchema {
  type: FieldType;
  description?: string;
  default?: unknown;
  required?: boolean;
  /** The value must be one of these (after conversion). */
  allowed?: readonly (string | number | boolean)[];
}

export type FieldSchemas = Record<string, FieldSchema>;

function fail(name: string, rule: string): never {
  throw new BadRequestError(`invalid value for "${name}": ${rule}`);
}

/** No text field takes a lone surrogate (see hasLoneSurrogate). */
function text(name: string, value: string): string {
  if (hasLoneSurrogate(value)) fail(name, 'not valid Unicode text (it has a lone surrogate)');
  return value;
}

function toStringList(name: string, value: unknown, commaSplit: boolean): string[] {
  if (Array.isArray(value)) {
    return value.map((v) => {
      if (typeof v === 'string') return text(name, v).trim();
      if (typeof v === 'number' || typeof v === 'boolean') return String(v);
      return fail(name, 'expected a list of strings');
    }).filter((v) => v !== '');
  }
  if (typeof value === 'string') {
    text(name, value);
    if (!commaSplit) return value === '' ? [] : [value];
    return value.split(',').map((v) => v.trim()).filter((v) => v !== '');
  }
  return fail(name, 'expected a list of strings or a comma-separated string');
}

/**
 * Converts one input value to the schema's type with the same leniency as Vault's decoder
 * (numeric strings for integers, "true"/"1" for booleans, comma strings for lists), and rejects
 * everything else with a 400 naming the field and what it expected.
 */
export function convertField(name: string, schema: FieldSchema, value: unknown): unknown {
  let out: unknown;
  switch (schema.type) {
    case 'string':
    case 'lowercase-string': {
      if (typeof value === 'string') out = text(name, value);
      else if (typeof value === 'number' || typeof value === 'boolean') out = String(value);
      else fail(name, 'expected a string');
      if (schema.type === 'lowercase-string') out = (out as string).toLowerCase();
      break;
    }
    case 'int': {
      if (typeof value === 'number' && Number.isInteger(value)) out = value;
      else if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) out = Number(value.trim());
      else fail(name, 'expected an integer');
      if (!Number.isSafeInteger(out)) fail(name, 'integer out of range');
      break;
    }
    case 'bool': {
      if (typeof value === 'boolean') out = value;
      else if (value === 1 || value === 0) out = value === 1;
      else if (typeof value === 'string' && /^(true|false|1|0|t|f|TRUE|FALSE|True|False|T|F)$/.test(value)) {
        out = /^(true|1|t)$/i.test(value);
      } else fail(name, 'expected a boolean');
      break;
    }
    case 'duration': {
      const seconds = parseDurationSeconds(value);
      if (seconds === null) fail(name, 'expected a duration such as "72h" or a non-negative number of seconds');
      out = seconds;
      break;
    }
    case 'comma-list':
      out = toStringList(name, value, true);
      break;
    case 'string-list':
      out = toStringList(name, value, false);
      break;
    case 'int-list': {
      const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',').filter((v) => v.trim() !== '') : fail(name, 'expected a list of integers');
      out = items.map((v) => convertField(name, { type: 'int' }, typeof v === 'string' ? v.trim() : v));
      break;
    }
    case 'map':
      if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(name, 'expected an object');
      out = value;
      break;
    case 'string-map': {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) fail(name, 'expected an object of string values');
      const map: Record<string, string> = {};
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (typeof v !== 'string') fail(name, `expected an object of string values, but key "${k}" is not a string`);
        map[text(name, k)] = text(name, v);
      }
      out = map;
      break;
    }
    case 'time': {
      if (typeof value !== 'string' || !RFC3339.test(value) || Number.isNaN(Date.parse(value))) {
        fail(name, 'expected an RFC 3339 timestamp such as "2026-01-02T15:04:05Z"');
      }
      out = value;
      break;
    }
    case 'any':
      out = value;
      break;
  }
  if (schema.allowed && !schema.allowed.includes(out as string | number | boolean)) {
    fail(name, `must be one of ${schema.allowed.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  return out;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** The validated inputs of one request, typed accessors over converted values. */
export class FieldData {
  constructor(
    private readonly values: Record<string, unknown>,
    private readonly provided: ReadonlySet<string>,
    /** The request's data as sent, for paths that take arbitrary keys (KV). */
    readonly raw: Record<string, unknown>,
  ) {}

  /** Whether the caller sent this field (as opposed to it having its default). */
  has(name: string): boolean {
    return this.provided.has(name);
  }

  get(name: string): unknown {
    return this.values[name];
  }

  string(name: string): string {
    const v = this.values[name];
    return typeof v === 'string' ? v : '';
  }

  int(name: string): number {
    const v = this.values[name];
    return typeof v === 'number' ? v : 0;
  }

  bool(name: string): boolean {
    return this.values[name] === true;
  }

  list(name: string): string[] {
    const v = this.values[name];
    return Array.isArray(v) ? (v as string[]) : [];
  }

  map<T = unknown>(name: string): Record<string, T> | undefined {
    const v = this.values[name];
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, T>) : undefined;
  }
}

/** A schema table taken apart once: what the per-request walk needs, without rebuilding it. */
interface CompiledSchemas {
  required: string[];
  /** Fields with a default, and whether it is an object that each request must get a copy of. */
  defaults: Array<{ name: string; value: unknown; copy: boolean }>;
}

const compiledSchemas = new WeakMap<FieldSchemas, CompiledSchemas>();

function compile(schemas: FieldSchemas): CompiledSchemas {
  let c = compiledSchemas.get(schemas);
  if (!c) {
    c = { required: [], defaults: [] };
    for (const [name, schema] of Object.entries(schemas)) {
      if (schema.required) c.required.push(name);
      const d = schema.default;
      if (d !== undefined) c.defaults.push({ name, value: d, copy: d !== null && typeof d === 'object' });
    }
    compiledSchemas.set(schemas, c);
  }
  return c;
}

/** Refuses a write that lacks a required field (for fields parsed before the operation was known). */
export function requireFields(schemas: FieldSchemas, fields: FieldData): void {
  for (const name of compile(schemas).required) {
    if (!fields.has(name)) throw new BadRequestError(`missing required field "${name}"`);
  }
}

/**
 * Validates `data` against `schemas`: converts each given field, fills defaults, enforces
 * `required`, and reports fields the schema does not know (Vault answers those with a warning).
 * Every API request passes through here, so it walks precompiled lists rather than the tables.
 */
export function parseFields(
  schemas: FieldSchemas,
  data: Record<string, unknown>,
  captures: Record<string, string>,
  options: { requireRequired: boolean },
): { fields: FieldData; unknown: string[] } {
  const compiled = compile(schemas);
  const values: Record<string, unknown> = {};
  const provided = new Set<string>();
  const unknown: string[] = [];
  for (const name in data) {
    if (!Object.hasOwn(data, name)) continue;
    const schema = Object.hasOwn(schemas, name) ? schemas[name] : undefined;
    if (!schema) {
      if (!Object.hasOwn(captures, name)) unknown.push(name);
      continue;
    }
    const value = data[name];
    if (value === null || value === undefined) continue;
    values[name] = convertField(name, schema, value);
    provided.add(name);
  }
  for (const name in captures) {
    if (!Object.hasOwn(captures, name)) continue;
    values[name] = captures[name];
    provided.add(name);
  }
  if (options.requireRequired) {
    for (const name of compiled.required) {
      if (!provided.has(name)) throw new BadRequestError(`missing required field "${name}"`);
    }
  }
  for (const d of compiled.defaults) {
    if (provided.has(d.name)) continue;
    // Objects are copied so that a handler cannot change the schema's default for the next call.
    values[d.name] = d.copy ? structuredClone(d.value) : d.value;
  }
  return { fields: new FieldData(values, provided, data), unknown };
}
