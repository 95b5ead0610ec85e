/**
 * The compiled form of a token's policies, consulted on every request. Rules from all policies
 * are merged per path pattern at compile time and arranged so that a check is a couple of Map
 * lookups plus a walk over the (usually few) `+` rules, returning pre-built result objects.
 */
import type { Capability, PathRule, Policy } from './policy';
import { CAPABILITIES, mergeValueLists } from './policy';

export type Operation = 'read' | 'list' | 'create' | 'update' | 'patch' | 'delete';

export const ROOT_POLICY_NAME = 'root';

const BIT: Readonly<Record<Capability, number>> = {
  create: 1 << 0,
  read: 1 << 1,
  update: 1 << 2,
  patch: 1 << 3,
  delete: 1 << 4,
  list: 1 << 5,
  sudo: 1 << 6,
  deny: 1 << 7,
};

const OPERATIONS: readonly Operation[] = ['read', 'list', 'create', 'update', 'patch', 'delete'];
const OPERATION_INDEX: Readonly<Record<Operation, number>> = {
  read: 0,
  list: 1,
  create: 2,
  update: 3,
  patch: 4,
  delete: 5,
};

// Alphabetical, which is the order sys/capabilities answers in.
const SORTED_CAPABILITIES: readonly Capability[] = [...CAPABILITIES].sort();
const ROOT_CAPABILITIES: readonly Capability[] = Object.freeze(SORTED_CAPABILITIES.filter((c) => c !== 'deny'));

export type RuleKind = 'exact' | 'prefix' | 'segment';

/** A value pattern from a parameter list; `*` at either end is a wildcard. */
interface ValuePattern {
  readonly kind: 'equals' | 'prefix' | 'suffix' | 'contains';
  readonly text: string;
}

/** `null` means the list was empty: any value. */
type ValueMatcher = readonly ValuePattern[] | null;

export interface CompiledRule {
  /** The pattern as written in the policies (minus a leading '/'). */
  readonly path: string;
  readonly kind: RuleKind;
  /** Union over every stanza for this pattern; just `['deny']` if any of them denied. */
  readonly capabilities: readonly Capability[];
  readonly capabilityBits: number;
  readonly allowedParameters?: ReadonlyMap<string, readonly string[]>;
  readonly deniedParameters?: ReadonlyMap<string, readonly string[]>;
  readonly requiredParameters: readonly string[];
  /** Seconds: the smallest minimum any merged stanza set. */
  readonly minWrappingTtl?: number;
  /** Seconds: the largest maximum any merged stanza set. */
  readonly maxWrappingTtl?: number;
}

export interface AllowResult {
  readonly allowed: boolean;
  /** The matched rule grants sudo (root-protected endpoints need it). */
  readonly sudo: boolean;
  readonly root: boolean;
  /** What the matched rule grants, sorted; `['deny']` on an explicit deny. */
  readonly capabilities: readonly Capability[];
  /** Absent for root and when nothing matched. */
  readonly rule?: CompiledRule;
}

/** Internal rule with its matching data and its pre-built answers. */
interface Rule extends CompiledRule {
  /** The pattern without a trailing '*', which is what priority length and order compare. */
  readonly stem: string;
  /** Index of the first `+` (segment rules) or of the `*` (prefix rules). */
  readonly firstWildcard: number;
  readonly isPrefix: boolean;
  readonly wildcards: number;
  /** Segment rules only: the stem split on '/'; '+' entries match any one segment. */
  readonly segments: readonly string[];
  readonly results: readonly AllowResult[];
  readonly allowedMatchers?: ReadonlyMap<string, ValueMatcher>;
  readonly deniedMatchers?: ReadonlyMap<string, ValueMatcher>;
}

type MutableRule = { -readonly [K in keyof CompiledRule]: CompiledRule[K] };

const NO_MATCH: AllowResult = Object.freeze({
  allowed: false,
  sudo: false,
  root: false,
  capabilities: Object.freeze(['deny'] as Capability[]),
});

const ROOT_RESULT: AllowResult = Object.freeze({
  allowed: true,
  sudo: true,
  root: true,
  capabilities: ROOT_CAPABILITIES,
});

export class ACL {
  readonly root: boolean;
  private readonly exact: ReadonlyMap<string, Rule>;
  private readonly prefixes: ReadonlyMap<string, Rule>;
  /** Distinct prefix-rule stem lengths, longest first, so the longest match is found first. */
  private readonly prefixLengths: readonly number[];
  /**
   * `+` rules grouped by the literal text before their first '+', each group highest priority
   * first. That text is both a prefix every matching path must have and (by its length) the
   * first priority criterion, so longer heads are tried first and a group's first match wins.
   */
  private readonly segmentGroups: ReadonlyMap<string, readonly Rule[]>;
  /** Distinct head lengths of `segmentGroups`, longest first. */
  private readonly segmentHeadLengths: readonly number[];

  private constructor(
    root: boolean,
    exact: Map<string, Rule>,
    prefixes: Map<string, Rule>,
    segmentRules: Rule[],
  ) {
    this.root = root;
    this.exact = exact;
    this.prefixes = prefixes;
    this.prefixLengths = [...new Set([...prefixes.values()].map((r) => r.stem.length))].sort((a, b) => b - a);
    const groups = new Map<string, Rule[]>();
    for (const rule of segmentRules.sort((a, b) => comparePriority(b, a))) {
      const head = rule.stem.slice(0, rule.firstWildcard);
      const group = groups.get(head);
      if (group === undefined) groups.set(head, [rule]);
      else group.push(rule);
    }
    this.segmentGroups = groups;
    this.segmentHeadLengths = [...new Set([...groups.keys()].map((h) => h.length))].sort((a, b) => b - a);
  }

  /** A policy named `root` makes the whole ACL root: everything is allowed, with sudo. */
  static compile(policies: readonly Policy[]): ACL {
    if (policies.some((p) => p.name === ROOT_POLICY_NAME)) return new ACL(true, new Map(), new Map(), []);

    const merged = new Map<string, MutableRule>();
    for (const policy of policies) {
      for (const stanza of policy.rules) {
        const existing = merged.get(stanza.path);
        if (existing === undefined) merged.set(stanza.path, fromStanza(stanza));
        else mergeInto(existing, stanza);
      }
    }

    const exact = new Map<string, Rule>();
    const prefixes = new Map<string, Rule>();
    const segmentRules: Rule[] = [];
    for (const m of merged.values()) {
      const rule = finish(m);
      if (rule.kind === 'exact') exact.set(rule.path, rule);
      else if (rule.kind === 'prefix') prefixes.set(rule.stem, rule);
      else segmentRules.push(rule);
    }
    return new ACL(false, exact, prefixes, segmentRules);
  }

  /**
   * Whether `op` on `path` is permitted. Parameter constraints are separate (`checkParameters`)
   * because they need the request body. The returned object is shared: do not mutate it.
   */
  allowed(path: string, op: Operation): AllowResult {
    if (this.root) return ROOT_RESULT;
    const rule = this.match(path, op === 'list');
    return rule === undefined ? NO_MATCH : (rule.results[OPERATION_INDEX[op]] ?? NO_MATCH);
  }

  /** What `sys/capabilities-self` reports for `path`. */
  capabilities(path: string): string[] {
    if (this.root) return ['root'];
    const rule = this.match(path, false);
    if (rule === undefined || rule.capabilities.length === 0) return ['deny'];
    return [...rule.capabilities];
  }

  /**
   * Whether any rule grants something (other than deny) on a path under `mountPath` (which
   * ends with '/'). This is how the UI and `vault kv` may learn a mount's type and options
   * without a grant on `sys/internal/ui/mounts` itself.
   */
  grantsUnder(mountPath: string): boolean {
    if (this.root) return true;
    const grants = (r: Rule) => r.capabilities.length > 0 && !r.capabilities.includes('deny');
    for (const r of this.exact.values()) if (grants(r) && r.path.startsWith(mountPath)) return true;
    for (const r of this.prefixes.values()) {
      if (grants(r) && (r.stem.startsWith(mountPath) || mountPath.startsWith(r.stem))) return true;
    }
    const mountSegs = mountPath.slice(0, -1).split('/');
    for (const group of this.segmentGroups.values()) {
      for (const r of group) {
        if (grants(r) && segmentsReachUnder(r, mountSegs)) return true;
      }
    }
    return false;
  }

  /** The rule that governs `path`, if any (read semantics). */
  ruleFor(path: string): CompiledRule | undefined {
    return this.root ? undefined : this.match(path, false);
  }

  /**
   * Checks a request body against the rule's parameter constraints; returns why it is refused,
   * or null. Vault applies these only to read, create, update and patch, so callers should too.
   */
  checkParameters(rule: CompiledRule | undefined, data: Record<string, unknown>): string | null {
    return checkParameters(rule, data);
  }

  private match(path: string, listing: boolean): Rule | undefined {
    const exact = this.exact.get(path);
    if (exact !== undefined) return exact;
    // A LIST arrives as `foo/`, and a rule written for the directory as `foo` should still apply.
    if (listing && path.endsWith('/')) {
      const trimmed = this.exact.get(path.slice(0, -1));
      if (trimmed !== undefined) return trimmed;
    }

    let best: Rule | undefined;
    for (const len of this.prefixLengths) {
      if (len > path.length) continue;
      best = this.prefixes.get(len === path.length ? path : path.slice(0, len));
      if (best !== undefined) break;
    }
    for (const len of this.segmentHeadLengths) {
      if (len > path.length) continue;
      // A glob whose '*' comes later than every remaining '+' outranks them all.
      if (best !== undefined && len < best.firstWildcard) break;
      const group = this.segmentGroups.get(len === path.length ? path : path.slice(0, len));
      if (group === undefined) continue;
      for (const rule of group) {
        if (best !== undefined && comparePriority(rule, best) < 0) break;
        if (matchesSegments(rule, path)) return rule;
      }
    }
    return best;
  }
}

/** Whether a `+` rule can match some path below the mount whose segments are `mountSegs`. */
function segmentsReachUnder(rule: Rule, mountSegs: readonly string[]): boolean {
  const segs = rule.segments;
  for (let i = 0; i < mountSegs.length; i++) {
    const seg = segs[i];
    const want = mountSegs[i] as string;
    if (seg === undefined) return false;
    const lastOfPrefix = i === segs.length - 1 && rule.isPrefix;
    if (lastOfPrefix) return want.startsWith(seg);
    if (seg !== '+' && seg !== want) return false;
  }
  return segs.length > mountSegs.length;
}

/**
 * Vault's tie-break between the non-exact rules that match one path; positive when `a` wins.
 * In order: the first wildcard appearing later; no trailing '*'; fewer '+' segments; the longer
 * pattern; the lexically larger pattern.
 */
function comparePriority(a: Rule, b: Rule): number {
  if (a.firstWildcard !== b.firstWildcard) return a.firstWildcard - b.firstWildcard;
  if (a.isPrefix !== b.isPrefix) return a.isPrefix ? -1 : 1;
  if (a.wildcards !== b.wildcards) return b.wildcards - a.wildcards;
  if (a.stem.length !== b.stem.length) return a.stem.length - b.stem.length;
  return a.stem < b.stem ? -1 : a.stem > b.stem ? 1 : 0;
}

/**
 * Walks `path` segment by segment without splitting it. Without a trailing '*' the segment
 * counts must agree; with one, the last pattern segment is a prefix of the corresponding path
 * segment and anything may follow.
 */
function matchesSegments(rule: Rule, path: string): boolean {
  const segs = rule.segments;
  const last = segs.length - 1;
  let pos = 0;
  for (let i = 0; i <= last; i++) {
    if (pos > path.length) return false; // the path ran out of segments
    const seg = segs[i] as string;
    let end = path.indexOf('/', pos);
    if (end === -1) end = path.length;
    if (i === last && rule.isPrefix) return path.startsWith(seg, pos) && seg.length <= end - pos;
    if (seg !== '+' && (end - pos !== seg.length || !path.startsWith(seg, pos))) return false;
    pos = end + 1;
  }
  // All pattern segments consumed: the path must have ended exactly at the last one.
  return pos === path.length + 1;
}

function ruleShape(path: string): { kind: RuleKind; stem: string; isPrefix: boolean; segments: string[] } {
  const isPrefix = path.endsWith('*');
  const stem = isPrefix ? path.slice(0, -1) : path;
  const segments = stem.split('/');
  if (segments.includes('+')) return { kind: 'segment', stem, isPrefix, segments };
  return { kind: isPrefix ? 'prefix' : 'exact', stem, isPrefix, segments: [] };
}

function fromStanza(s: PathRule): MutableRule {
  const rule: MutableRule = {
    path: s.path,
    kind: ruleShape(s.path).kind,
    capabilities: s.capabilities,
    capabilityBits: bitsOf(s.capabilities),
    requiredParameters: [...s.requiredParameters],
  };
  if (s.allowedParameters !== undefined) rule.allowedParameters = copyMap(s.allowedParameters);
  if (s.deniedParameters !== undefined) rule.deniedParameters = copyMap(s.deniedParameters);
  if (s.minWrappingTtl !== undefined) rule.minWrappingTtl = s.minWrappingTtl;
  if (s.maxWrappingTtl !== undefined) rule.maxWrappingTtl = s.maxWrappingTtl;
  if (rule.capabilityBits & BIT.deny) clearForDeny(rule);
  return rule;
}

/**
 * Folds another stanza for the same pattern in, the way Vault does: a deny on either side
 * discards everything else; otherwise capabilities and parameter lists are unioned (an empty
 * value list, meaning "any", absorbs the other side) and the wrapping TTL bounds widen.
 */
function mergeInto(into: MutableRule, s: PathRule): void {
  if (into.capabilityBits & BIT.deny) return;
  const bits = bitsOf(s.capabilities);
  if (bits & BIT.deny) {
    clearForDeny(into);
    return;
  }
  into.capabilityBits |= bits;
  into.capabilities = capabilitiesOf(into.capabilityBits);

  if (s.minWrappingTtl !== undefined && (into.minWrappingTtl === undefined || s.minWrappingTtl < into.minWrappingTtl)) {
    into.minWrappingTtl = s.minWrappingTtl;
  }
  if (s.maxWrappingTtl !== undefined && (into.maxWrappingTtl === undefined || s.maxWrappingTtl > into.maxWrappingTtl)) {
    into.maxWrappingTtl = s.maxWrappingTtl;
  }
  if (s.allowedParameters !== undefined && s.allowedParameters.size > 0) {
    into.allowedParameters = mergeParameterMaps(into.allowedParameters, s.allowedParameters);
  }
  if (s.deniedParameters !== undefined && s.deniedParameters.size > 0) {
    into.deniedParameters = mergeParameterMaps(into.deniedParameters, s.deniedParameters);
  }
  if (s.requiredParameters.length > 0) {
    into.requiredParameters = [...new Set([...into.requiredParameters, ...s.requiredParameters])];
  }
}

function clearForDeny(rule: MutableRule): void {
  rule.capabilityBits = BIT.deny;
  rule.capabilities = ['deny'];
  delete rule.allowedParameters;
  delete rule.deniedParameters;
  rule.requiredParameters = [];
  delete rule.minWrappingTtl;
  delete rule.maxWrappingTtl;
}

function mergeParameterMaps(
  a: ReadonlyMap<string, readonly string[]> | undefined,
  b: ReadonlyMap<string, readonly string[]>,
): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>(a ?? []);
  for (const [key, values] of b) {
    const existing = out.get(key);
    out.set(key, existing === undefined ? [...values] : mergeValueLists(existing, values));
  }
  return out;
}

function finish(m: MutableRule): Rule {
  const shape = ruleShape(m.path);
  const capabilities = Object.freeze([...m.capabilities]);
  const base = {
    ...m,
    capabilities,
    requiredParameters: Object.freeze([...m.requiredParameters]),
    stem: shape.stem,
    firstWildcard: shape.kind === 'segment' ? m.path.indexOf('+') : shape.stem.length,
    isPrefix: shape.isPrefix,
    wildcards: shape.segments.reduce((n, s) => (s === '+' ? n + 1 : n), 0),
    segments: Object.freeze(shape.segments),
  };
  const results: AllowResult[] = [];
  const rule = {
    ...base,
    ...(m.allowedParameters === undefined ? {} : { allowedMatchers: compileMatchers(m.allowedParameters) }),
    ...(m.deniedParameters === undefined ? {} : { deniedMatchers: compileMatchers(m.deniedParameters) }),
  } as Rule;
  // Each result points back at the rule; hiding this side of the cycle keeps the rule loggable.
  Object.defineProperty(rule, 'results', { value: results, enumerable: false });
  // One frozen answer per operation, so a check never allocates.
  const denied = (m.capabilityBits & BIT.deny) !== 0;
  for (const op of OPERATIONS) {
    results.push(
      Object.freeze({
        allowed: !denied && (m.capabilityBits & BIT[op]) !== 0,
        sudo: !denied && (m.capabilityBits & BIT.sudo) !== 0,
        root: false,
        capabilities,
        rule,
      }),
    );
  }
  return Object.freeze(rule);
}

function bitsOf(caps: readonly Capability[]): number {
  let bits = 0;
  for (const c of caps) bits |= BIT[c];
  return bits;
}

function capabilitiesOf(bits: number): Capability[] {
  return SORTED_CAPABILITIES.filter((c) => (bits & BIT[c]) !== 0);
}

function copyMap(m: ReadonlyMap<string, readonly string[]>): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  for (const [k, v] of m) out.set(k, [...v]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parameter constraints

function compileMatchers(m: ReadonlyMap<string, readonly string[]>): Map<string, ValueMatcher> {
  const out = new Map<string, ValueMatcher>();
  for (const [key, values] of m) out.set(key, values.length === 0 ? null : values.map(compilePattern));
  return out;
}

// Mirrors Vault's value globbing: a lone "*" is only a literal asterisk.
function compilePattern(v: string): ValuePattern {
  if (v.length < 2) return { kind: 'equals', text: v };
  const lead = v.startsWith('*');
  const trail = v.endsWith('*');
  if (lead && trail) return { kind: 'contains', text: v.slice(1, -1) };
  if (lead) return { kind: 'suffix', text: v.slice(1) };
  if (trail) return { kind: 'prefix', text: v.slice(0, -1) };
  return { kind: 'equals', text: v };
}

function patternMatches(p: ValuePattern, s: string): boolean {
  switch (p.kind) {
    case 'equals':
      return s === p.text;
    case 'prefix':
      return s.startsWith(p.text);
    case 'suffix':
      return s.endsWith(p.text);
    case 'contains':
      return s.includes(p.text);
  }
}

function scalarString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return undefined;
}

function scalarIn(v: unknown, patterns: readonly ValuePattern[]): boolean {
  const s = scalarString(v);
  if (s === undefined) return false;
  for (const p of patterns) if (patternMatches(p, s)) return true;
  return false;
}

/** Every element of a list must be permitted; a non-list value is one element. */
function valueAllowed(v: unknown, matcher: ValueMatcher): boolean {
  if (matcher === null) return true;
  if (!Array.isArray(v)) return scalarIn(v, matcher);
  if (v.length === 0) return false;
  for (const el of v) if (!scalarIn(el, matcher)) return false;
  return true;
}

/** Any element of a list being refused refuses the whole value. */
function valueDenied(v: unknown, matcher: ValueMatcher): boolean {
  if (matcher === null) return true;
  if (!Array.isArray(v)) return scalarIn(v, matcher);
  for (const el of v) if (scalarIn(el, matcher)) return true;
  return false;
}

/**
 * Checks a request body against a rule's `required_parameters`, `denied_parameters` and
 * `allowed_parameters`, in that order. Names compare case-insensitively; values as strings, with
 * `*` at either end of a listed value acting as a wildcard. Returns the reason for refusal or null.
 */
export function checkParameters(rule: CompiledRule | undefined, data: Record<string, unknown>): string | null {
  if (rule === undefined) return null;
  const r = rule as Partial<Rule> & CompiledRule;
  const allowed = r.allowedMatchers ?? (rule.allowedParameters && compileMatchers(rule.allowedParameters));
  const denied = r.deniedMatchers ?? (rule.deniedParameters && compileMatchers(rule.deniedParameters));
  if (rule.requiredParameters.length === 0 && allowed === undefined && denied === undefined) return null;

  const keys = Object.keys(data);
  if (rule.requiredParameters.length > 0) {
    const present = new Set(keys.map((k) => k.toLowerCase()));
    for (const req of rule.requiredParameters) {
      if (!present.has(req)) return `required parameter "${req}" is missing`;
    }
  }
  if (keys.length === 0) return null;

  if (denied !== undefined && denied.size > 0) {
    if (denied.has('*')) return `parameter "${keys[0]}" is denied: the policy denies all parameters`;
    for (const key of keys) {
      const matcher = denied.get(key.toLowerCase());
      if (matcher !== undefined && valueDenied(data[key], matcher)) {
        return matcher === null ? `parameter "${key}" is denied` : `parameter "${key}" has a denied value`;
      }
    }
  }

  if (allowed !== undefined && allowed.size > 0) {
    const anyKey = allowed.has('*');
    for (const key of keys) {
      const matcher = allowed.get(key.toLowerCase());
      if (matcher === undefined) {
        if (!anyKey) return `parameter "${key}" is not allowed`;
        continue;
      }
      if (!valueAllowed(data[key], matcher)) return `parameter "${key}" has a value that is not allowed`;
    }
  }
  return null;
}
