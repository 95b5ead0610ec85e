import type { FieldSchemas, Operation, PathDefinition } from '@strongroom/core';
import type { Random } from '../../../../raft/src/test-support/seeded-random';
import type { PathPart } from './pattern-paths';
import { PatternPaths } from './pattern-paths';
import { percentEncode } from './raw-http';
import {
  badValue, describeValue, ENDPOINT_FIELD, KNOWN_VALUES, ODD_BODIES, ODD_NAMES, PLAIN_NAMES, plausibleValue, RawJson, serializeJson, type ValueContext,
} from './values';

/** One declared path of one mount: what the fuzzer walks. */
export interface FuzzTarget {
  /** Where the backend is mounted, with its trailing slash: `transit-fz/`, `auth/token/`, `sys/`. */
  mount: string;
  def: PathDefinition;
  paths: PatternPaths;
}

export function targetsOf(mount: string, defs: readonly PathDefinition[]): FuzzTarget[] {
  return defs.map((def) => ({ mount, def, paths: new PatternPaths(def.pattern) }));
}

export interface FuzzRequest {
  method: string;
  /** The request target as sent: `/v1/...` with its query. */
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** What was sent, in words, for a failure report. */
  description: string;
}

/** HTTP methods of each operation; a write goes as POST or PUT, which Vault treats alike. */
const METHODS: Record<Operation, readonly string[]> = {
  read: ['GET'], list: ['LIST', 'GET?list=true'], create: ['POST', 'PUT'], update: ['POST', 'PUT'], patch: ['PATCH'], delete: ['DELETE'],
};

const SEGMENT_SAFE = /[A-Za-z0-9\-._~]/;
const PATH_SAFE = /[A-Za-z0-9\-._~/]/;

/** A capture's value: mostly names that reach the same objects, sometimes odd ones. */
function captureValue(name: string, rnd: Random): string {
  const known = KNOWN_VALUES[name];
  if (known && rnd.next() < 0.6) return rnd.pick(known);
  return rnd.next() < 0.75 ? rnd.pick(PLAIN_NAMES) : rnd.pick(ODD_NAMES);
}

function renderPath(parts: PathPart[], rnd: Random): { text: string; shown: string } {
  let text = '';
  let shown = '';
  for (const part of parts) {
    if ('text' in part) {
      text += part.text;
      shown += part.text;
    } else {
      // Slashes and dots sometimes go raw, so that the server sees '..' segments as such.
      text += percentEncode(part.value, rnd.next() < 0.5 ? SEGMENT_SAFE : PATH_SAFE);
      shown += `{${part.capture}=${describeValue(part.value)}}`;
    }
  }
  return { text, shown };
}

function fieldsBody(fields: FieldSchemas, captures: ReadonlySet<string>, rnd: Random, ctx: ValueContext): { body: Record<string, unknown>; shown: string } {
  const names = Object.keys(fields).filter((n) => !captures.has(n));
  const body: Record<string, unknown> = {};
  const notes: string[] = [];
  // 0: every field wrong; 1-3: every field plausible (1-2 with few optional ones, which often conflict), so that
  // things get made and then used; else one wrong.
  const mode = rnd.int(10);
  const oneWrong = mode > 3;
  for (const name of names) {
    const schema = fields[name];
    if (!schema) continue;
    if (mode === 0) {
      // Every field wrong at once.
      body[name] = badValue(name, rnd, ctx);
      notes.push(`${name}=${describeValue(body[name])}`);
    } else if (schema.required || ENDPOINT_FIELD.test(name) || rnd.next() < (mode < 3 ? 0.1 : 0.5)) {
      // Endpoints always go along: a configuration write that replaces the whole configuration
      // would otherwise point the engine at the provider's real endpoints.
      body[name] = plausibleValue(name, schema, rnd, ctx);
    }
  }
  if (oneWrong && names.length > 0) {
    // One field wrong, the others plausible: the wrong one is what the path must refuse.
    const name = rnd.pick(names);
    body[name] = badValue(name, rnd, ctx);
    notes.push(`${name}=${describeValue(body[name])}`);
  }
  if (rnd.next() < 0.15) {
    const extra = rnd.pick(['unknown_field', ...ODD_NAMES]);
    body[extra] = badValue(extra, rnd, ctx);
    notes.push(`extra ${describeValue(extra)}=${describeValue(body[extra])}`);
  }
  return { body, shown: notes.join(', ') };
}

/**
 * A request for `op` on `target`: a path from the pattern with its captures filled, and for a
 * write a body with wrong values among plausible ones, or a body of the wrong shape altogether.
 */
export function buildRequest(target: FuzzTarget, op: Operation, rnd: Random, ctx: ValueContext, token: string): FuzzRequest {
  const fields = target.def.fields ?? {};
  const captures = new Set(target.paths.captureNames());
  const { text, shown } = renderPath(target.paths.generate(rnd, (name) => captureValue(name, rnd)), rnd);
  const methodChoice = rnd.pick(METHODS[op]);
  const [method, query] = methodChoice.split('?') as [string, string | undefined];
  let path = `/v1/${target.mount}${text}`;
  const headers: Record<string, string> = { 'x-vault-token': token };
  let body: string | undefined;
  let description = '';
  const writes = op === 'create' || op === 'update' || op === 'patch';
  if (writes) {
    headers['content-type'] = op === 'patch' ? 'application/merge-patch+json' : 'application/json';
    if (rnd.next() < 0.15) {
      const odd = rnd.pick(ODD_BODIES);
      body = odd.text;
      description = `body ${describeValue(odd)}`;
    } else {
      const built = fieldsBody(fields, captures, rnd, ctx);
      body = serializeJson(built.body);
      description = built.shown === '' ? 'plausible body' : built.shown;
    }
  } else {
    const params: string[] = query ? [query] : [];
    const names = Object.keys(fields).filter((n) => !captures.has(n));
    if (names.length > 0 && rnd.next() < 0.4) {
      // Reads take their fields from the query string; give one a wrong value there.
      const name = rnd.pick(names);
      const value = badValue(name, rnd, ctx);
      const asText = typeof value === 'string' ? value : serializeJson(value);
      params.push(`${percentEncode(name, SEGMENT_SAFE)}=${percentEncode(asText.slice(0, 4000), SEGMENT_SAFE)}`);
      description = `query ${name}=${describeValue(value)}`;
    }
    if (params.length > 0) path += `?${params.join('&')}`;
    if (op === 'delete' && rnd.next() < 0.2) {
      headers['content-type'] = 'application/json';
      const odd: RawJson = rnd.pick(ODD_BODIES);
      body = odd.text;
      description += ` body ${describeValue(odd)}`;
    }
  }
  return { method, path, headers, ...(body !== undefined ? { body } : {}), description: `${method} ${target.mount}${shown} ${description}`.trim() };
}
