/**
 * ACL policy documents as Vault accepts them: HCL or JSON, with `path` stanzas carrying
 * capabilities and optional parameter and response-wrapping constraints. Parsing validates
 * everything up front so that compiling an ACL (which happens on token use) cannot fail.
 */
import { BadRequestError } from '../errors';
import { checkPathName } from '../path-names';
import { hclNestingDepth } from './hcl-nesting';
import { HclParseError, HclParser } from './hcl-parser';

export type Capability = 'create' | 'read' | 'update' | 'patch' | 'delete' | 'list' | 'sudo' | 'deny';

/** Every capability a policy may name, in the order Vault's documentation lists them. */
export const CAPABILITIES: readonly Capability[] = Object.freeze([
  'create',
  'read',
  'update',
  'patch',
  'delete',
  'list',
  'sudo',
  'deny',
] as const);

/** One `path` stanza after validation. */
export interface PathRule {
  /** As written, minus one leading '/'; keeps a trailing '*' and any '+' segments. */
  readonly path: string;
  /** Sorted and de-duplicated; a stanza naming `deny` is reduced to just `['deny']`. */
  readonly capabilities: readonly Capability[];
  /** Lower-cased parameter name -> permitted values (empty list: any value). Absent: no restriction. */
  readonly allowedParameters?: ReadonlyMap<string, readonly string[]>;
  /** Lower-cased parameter name -> refused values (empty list: the parameter itself is refused). */
  readonly deniedParameters?: ReadonlyMap<string, readonly string[]>;
  /** Lower-cased parameter names that must be present. */
  readonly requiredParameters: readonly string[];
  /** Seconds. */
  readonly minWrappingTtl?: number;
  /** Seconds. */
  readonly maxWrappingTtl?: number;
}

export interface Policy {
  readonly name: string;
  /** The document as submitted, which is what `sys/policy` reads hand back. */
  readonly text: string;
  readonly rules: readonly PathRule[];
}

const CAPABILITY_SET: ReadonlySet<string> = new Set(CAPABILITIES);

// The pre-0.5 single-word `policy = "..."` form; patch postdates it, so no legacy word grants it.
const LEGACY_POLICIES: Readonly<Record<string, readonly Capability[]>> = {
  deny: ['deny'],
  read: ['read', 'list'],
  write: ['create', 'read', 'update', 'delete', 'list'],
  sudo: ['create', 'read', 'update', 'delete', 'list', 'sudo'],
};

const PATH_KEYS: ReadonlySet<string> = new Set([
  'capabilities',
  'policy',
  'allowed_parameters',
  'denied_parameters',
  'required_parameters',
  'min_wrapping_ttl',
  'max_wrapping_ttl',
  'comment',
]);

// Accepted but ignored at the top level: old policies carried their own name inside the text.
const TOP_LEVEL_KEYS: ReadonlySet<string> = new Set(['path', 'name']);

/**
 * The largest policy text a write accepts, in UTF-8 bytes. The HCL parser's time and memory grow
 * faster than its input: measured on a busy 2-core machine, the costliest shape found (a list of
 * numbers) took 0.45-0.65 s at 32 KiB and 0.65-1.2 s at 64 KiB (8.7 s and 1.3 GB at 1 MiB), while
 * ordinary path stanzas take 0.1-0.4 s at 64 KiB. 32 KiB (some 300 stanzas) keeps every parse well
 * under a second; a larger set of rules splits into several policies, which a token can carry.
 */
export const MAX_POLICY_BYTES = 32 * 1024;

/** Real policies nest three or four levels; see hcl-nesting.ts for why deeper ones are refused. */
export const MAX_POLICY_NESTING = 32;

const MAX_POLICY_NAME_LENGTH = 128;
const POLICY_NAME_CHARS = /^[a-z0-9._@+=,:\/-]+$/;

/** Policy names are case-insensitive; this is the one canonical spelling. */
export function normalizePolicyName(name: string): string {
  return name.trim().toLowerCase();
}

/** Throws unless `name` (already normalized) is usable as a policy name. */
export function validatePolicyName(name: string): void {
  checkPathName('name', name);
  if (name.length === 0) throw new BadRequestError('name: policy name must not be empty');
  if (name.length > MAX_POLICY_NAME_LENGTH) {
    throw new BadRequestError(`name: policy name must be at most ${MAX_POLICY_NAME_LENGTH} characters`);
  }
  if (!POLICY_NAME_CHARS.test(name)) {
    throw new BadRequestError(
      `name: policy name "${name}" may contain only lower-case letters, digits and . _ @ + = , : - /`,
    );
  }
  // Names end up as the last segment of sys/policy/<name>; empty segments would not round-trip.
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) {
    throw new BadRequestError(`name: policy name "${name}" must not start or end with "/" or contain "//"`);
  }
}

/** Throws unless `text` fits under MAX_POLICY_BYTES. */
export function checkPolicySize(text: string): void {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_POLICY_BYTES) {
    throw new BadRequestError(
      `policy: the policy is ${bytes} bytes, more than the limit of ${MAX_POLICY_BYTES}; split it into several policies`,
    );
  }
}

const hclParser = new HclParser();

/**
 * Parses a policy document. JSON is tried when the text looks like an object, HCL otherwise;
 * both are reduced to the same shape before validation. An empty document is a valid policy
 * that grants nothing.
 */
export async function parsePolicy(name: string, text: string): Promise<Policy> {
  const doc = await decode(text);
  const rules: PathRule[] = [];
  for (const key of Object.keys(doc)) {
    if (!TOP_LEVEL_KEYS.has(key)) throw new BadRequestError(`policy: unknown top-level key "${key}"`);
  }
  const paths = doc['path'];
  if (paths !== undefined) {
    for (const [rawPath, block] of pathEntries(paths)) rules.push(parsePathRule(rawPath, block));
  }
  return { name, text, rules };
}

async function decode(text: string): Promise<Record<string, unknown>> {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (err) {
      // V8's message quotes the input, so keep only the position.
      const pos = /position (\d+)/.exec(String((err as Error).message))?.[1];
      throw new BadRequestError(`policy: failed to parse as JSON${pos === undefined ? '' : ` at position ${pos}`}`);
    }
    if (!isPlainObject(value)) throw new BadRequestError('policy: a JSON policy must be an object');
    return value;
  }
  if (hclNestingDepth(text) > MAX_POLICY_NESTING) {
    throw new BadRequestError(`policy: nested more than ${MAX_POLICY_NESTING} levels deep`);
  }
  let value: unknown;
  try {
    value = await hclParser.parse(text);
  } catch (err) {
    if (err instanceof HclParseError && err.kind !== 'syntax') {
      throw new BadRequestError(`policy: the HCL parser gave up on this policy: ${err.message}`);
    }
    throw new BadRequestError(`policy: failed to parse as HCL: ${describeHclError(err)}`);
  }
  if (!isPlainObject(value)) throw new BadRequestError('policy: failed to parse as HCL');
  return value;
}

function describeHclError(err: unknown): string {
  let msg = err instanceof Error ? err.message : String(err);
  msg = msg.replace(/^parse config: \[/, '').replace(/\]$/, '').replace(/^policy\.hcl:/, 'line ');
  // The diagnostics carry a location and a summary but can run on; the first sentence is enough.
  const semicolon = msg.indexOf(';');
  if (semicolon !== -1) msg = msg.slice(0, semicolon);
  return msg.length > 200 ? `${msg.slice(0, 200)}...` : msg;
}

/**
 * hcl2json turns `path "x" { ... }` into `{"x": [{...}]}`, JSON policies write `{"x": {...}}`,
 * and HCL1's JSON form also allowed a list of such maps. Repeated stanzas for one path are kept
 * as separate entries; the ACL merges them like stanzas from different policies.
 */
function pathEntries(paths: unknown): Array<[string, unknown]> {
  const maps = Array.isArray(paths) ? paths : [paths];
  const out: Array<[string, unknown]> = [];
  for (const map of maps) {
    if (!isPlainObject(map)) throw new BadRequestError('policy: "path" must map path patterns to rule blocks');
    for (const [rawPath, blocks] of Object.entries(map)) {
      if (Array.isArray(blocks)) {
        for (const block of blocks) out.push([rawPath, block]);
      } else {
        out.push([rawPath, blocks]);
      }
    }
  }
  return out;
}

function parsePathRule(rawPath: string, block: unknown): PathRule {
  const path = rawPath.startsWith('/') ? rawPath.slice(1) : rawPath;
  const where = `policy: path "${path}"`;
  validatePathPattern(path, where);
  if (!isPlainObject(block)) throw new BadRequestError(`${where}: rule must be a block of settings`);

  for (const key of Object.keys(block)) {
    if (!PATH_KEYS.has(key)) throw new BadRequestError(`${where}: unknown key "${key}"`);
  }

  const caps = new Set<Capability>();
  const capsRaw = block['capabilities'];
  if (capsRaw !== undefined) {
    if (!Array.isArray(capsRaw)) throw new BadRequestError(`${where}: capabilities must be a list of strings`);
    for (const c of capsRaw) {
      if (typeof c !== 'string') throw new BadRequestError(`${where}: capabilities must be a list of strings`);
      if (!CAPABILITY_SET.has(c)) throw new BadRequestError(`${where}: unknown capability "${c}"`);
      caps.add(c as Capability);
    }
  }
  const legacy = block['policy'];
  if (legacy !== undefined) {
    const granted = typeof legacy === 'string' ? LEGACY_POLICIES[legacy] : undefined;
    if (granted === undefined) {
      throw new BadRequestError(
        `${where}: unknown policy ${JSON.stringify(legacy)} (expected "read", "write", "deny" or "sudo")`,
      );
    }
    for (const c of granted) caps.add(c);
  }
  const capabilities: Capability[] = caps.has('deny') ? ['deny'] : [...caps].sort();

  const rule: {
    -readonly [K in keyof PathRule]: PathRule[K];
  } = { path, capabilities, requiredParameters: [] };

  const allowed = parseParameterMap(block['allowed_parameters'], `${where}: allowed_parameters`);
  if (allowed !== undefined) rule.allowedParameters = allowed;
  const denied = parseParameterMap(block['denied_parameters'], `${where}: denied_parameters`);
  if (denied !== undefined) rule.deniedParameters = denied;

  const required = block['required_parameters'];
  if (required !== undefined) {
    if (!Array.isArray(required) || !required.every((r): r is string => typeof r === 'string')) {
      throw new BadRequestError(`${where}: required_parameters must be a list of strings`);
    }
    rule.requiredParameters = [...new Set(required.map((r) => r.toLowerCase()))];
  }

  const min = parseTtl(block['min_wrapping_ttl'], `${where}: min_wrapping_ttl`);
  const max = parseTtl(block['max_wrapping_ttl'], `${where}: max_wrapping_ttl`);
  if (min !== undefined && max !== undefined && max < min) {
    throw new BadRequestError(`${where}: max_wrapping_ttl must not be less than min_wrapping_ttl`);
  }
  if (min !== undefined) rule.minWrappingTtl = min;
  if (max !== undefined) rule.maxWrappingTtl = max;
  return rule;
}

function validatePathPattern(path: string, where: string): void {
  const star = path.indexOf('*');
  if (star !== -1 && star !== path.length - 1) {
    throw new BadRequestError(`${where}: "*" may only appear as the last character`);
  }
  // `+*` would mean "a segment wildcard that is also a prefix", which has no defined matching.
  if (path.endsWith('+*')) {
    throw new BadRequestError(`${where}: "+*" is not allowed; use "+" for one segment or "*" for a prefix`);
  }
}

/**
 * `{ name: [values] }`. hcl2json renders the block form (`allowed_parameters { ... }`) as a list
 * of such maps, so lists are merged. Scalars are kept as strings since that is how they compare.
 */
function parseParameterMap(raw: unknown, where: string): Map<string, string[]> | undefined {
  if (raw === undefined) return undefined;
  const maps = Array.isArray(raw) ? raw : [raw];
  const out = new Map<string, string[]>();
  for (const map of maps) {
    if (!isPlainObject(map)) throw new BadRequestError(`${where} must map parameter names to lists of values`);
    for (const [name, values] of Object.entries(map)) {
      if (!Array.isArray(values)) {
        throw new BadRequestError(`${where}: "${name}" must be a list of values (empty list: any value)`);
      }
      const strings: string[] = [];
      for (const v of values) {
        if (typeof v === 'string') strings.push(v);
        else if (typeof v === 'number' || typeof v === 'boolean') strings.push(String(v));
        else throw new BadRequestError(`${where}: "${name}" values must be strings, numbers or booleans`);
      }
      const key = name.toLowerCase();
      const existing = out.get(key);
      out.set(key, existing === undefined ? strings : mergeValueLists(existing, strings));
    }
  }
  return out;
}

/** An empty list means "any value", so it absorbs whatever it is merged with. */
export function mergeValueLists(a: readonly string[], b: readonly string[]): string[] {
  if (a.length === 0 || b.length === 0) return [];
  return [...new Set([...a, ...b])];
}

const DURATION_UNITS: Readonly<Record<string, number>> = {
  ns: 1e-9,
  us: 1e-6,
  'µs': 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
  d: 86400,
};
const DURATION_PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d)/y;

/**
 * Seconds from a number of seconds, a string of digits, or a Go-style duration ("1h30m", "90s",
 * with "d" for days). Returns undefined when absent.
 */
export function parseDurationSeconds(raw: unknown, where: string): number | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw) || raw < 0) throw new BadRequestError(`${where} must be a non-negative duration`);
    return raw;
  }
  if (typeof raw !== 'string') throw new BadRequestError(`${where} must be a duration such as "1h" or a number of seconds`);
  const s = raw.trim();
  if (/^\d+$/.test(s)) return Number(s);
  if (s === '') throw new BadRequestError(`${where}: invalid duration ""`);
  let total = 0;
  DURATION_PART.lastIndex = 0;
  while (DURATION_PART.lastIndex < s.length) {
    const m = DURATION_PART.exec(s);
    if (m === null) throw new BadRequestError(`${where}: invalid duration "${raw}"`);
    total += Number(m[1]) * (DURATION_UNITS[m[2] ?? ''] ?? Number.NaN);
  }
  if (!Number.isFinite(total)) throw new BadRequestError(`${where}: invalid duration "${raw}"`);
  return total;
}

function parseTtl(raw: unknown, where: string): number | undefined {
  const seconds = parseDurationSeconds(raw, where);
  // Vault treats a zero TTL as "not set", which also keeps zero out of the min/max merge.
  return seconds === 0 ? undefined : seconds;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
