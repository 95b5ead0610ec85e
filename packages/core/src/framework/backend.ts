import { BadRequestError, UnsupportedOperationError } from '../errors';
import { parseFields, requireFields, type FieldData } from './fields';
import { capturesOf, numberGroups } from './numbered-groups';
import type { BackendRequest, BackendResponse, LoginRenewal, LoginRenewRequest, Operation, PathDefinition, SecretType } from './types';

export interface CompiledPath {
  def: PathDefinition;
  regex: RegExp;
  /** The name of each capturing group of `regex` by number, when its groups are numbered rather than named. */
  groupNames: ReadonlyArray<string | undefined> | null;
  /** The pattern's leading literal text: a path not starting with it cannot match. */
  literal: string;
}

/** The literal start of a pattern, up to its first regex construct. */
function literalPrefix(pattern: string): string {
  // An alternation may start with something else entirely; such patterns are always tried.
  if (pattern.includes('|')) return '';
  const m = /^[A-Za-z0-9_\-/]*/.exec(pattern);
  const lit = m ? m[0] : '';
  // A quantifier after the last literal character makes that character optional.
  return /^[?*{]/.test(pattern.slice(lit.length)) ? lit.slice(0, -1) : lit;
}

export interface PathMatch {
  path: CompiledPath;
  captures: Record<string, string>;
}

function includesOp(flag: boolean | readonly Operation[] | undefined, op: Operation): boolean {
  return flag === true || (Array.isArray(flag) && flag.includes(op));
}

type ParsedFields = { fields: FieldData; unknown: string[] };

/**
 * Fields parsed for the existence check, kept on the request for `execute` by the backend that
 * parsed them for that very object. Not a WeakMap keyed by the request: V8's young-generation
 * GC keeps such entries alive, so every request served would be copied into the old generation
 * and wait there for a full GC (measured: a third of what survived each young GC under load).
 */
const PARSED = Symbol('parsed fields');
type ParsedCarrier = BackendRequest & { [PARSED]?: { backend: Backend; request: BackendRequest; parsed: ParsedFields } };

function writeOperation(exists: boolean): Operation {
  return exists ? 'update' : 'create';
}

/**
 * A table of declared paths. The router asks it to match a path, to resolve a write into
 * create or update, and then to run the operation; the ACL check happens in between, so a
 * handler only runs for callers the policy allows.
 */
export class Backend {
  readonly type: string;
  private readonly paths: CompiledPath[];

  readonly secretTypes: Readonly<Record<string, SecretType>>;

  /**
   * Prefixes of the mount's storage that each cluster keeps for itself, like the data of a local
   * mount: what a login or a read writes as a side effect (an instance access list), so that a
   * performance secondary does it there, issuing its own token, instead of sending the whole
   * request to its primary. Its primary's entries never reach it. Override to use.
   */
  readonly localStorage: readonly string[] = [];

  constructor(type: string, paths: readonly PathDefinition[], secretTypes: Record<string, SecretType> = {}) {
    this.type = type;
    this.secretTypes = secretTypes;
    this.paths = paths.map((def) => {
      const numbered = numberGroups(def.pattern);
      const regex = new RegExp(`^(?:${numbered ? numbered.source : def.pattern})$`);
      return { def, regex, groupNames: numbered ? numbered.names : null, literal: literalPrefix(def.pattern) };
    });
  }

  /**
   * Background work of a mount (key auto-rotation, tidying), run by core about once a minute
   * on the active node with the mount's storage. Whatever it schedules must be derivable from
   * storage, so a restart or a new leader picks it up. Override to use.
   */
  async periodic(_req: BackendRequest): Promise<void> {}

  /**
   * Called by core when a token issued by one of this auth method's logins (one that returned
   * `internal`) is renewed, with the mount's storage. Throw to refuse the renewal (the role is
   * gone, the instance stopped); answer the role's current TTLs to apply them; null leaves the
   * token's own values. Override to use.
   */
  async renewLogin(_req: BackendRequest, _token: LoginRenewRequest): Promise<LoginRenewal | null> {
    return null;
  }

  /** The declared paths in match order, for tools that walk every path (help, tests). */
  get definitions(): readonly PathDefinition[] {
    return this.paths.map((p) => p.def);
  }

  match(path: string): PathMatch | null {
    for (const compiled of this.paths) {
      if (!path.startsWith(compiled.literal)) continue;
      const m = compiled.regex.exec(path);
      if (m && compiled.groupNames) return { path: compiled, captures: capturesOf(m, compiled.groupNames) };
      if (m) {
        const captures: Record<string, string> = {};
        const groups = m.groups;
        if (groups) {
          for (const k in groups) {
            const v = groups[k];
            if (v !== undefined) captures[k] = v;
          }
        }
        return { path: compiled, captures };
      }
    }
    return null;
  }

  isUnauthenticated(match: PathMatch, op: Operation): boolean {
    return includesOp(match.path.def.unauthenticated, op);
  }

  isRestricted(match: PathMatch): boolean {
    return match.path.def.restricted === true;
  }

  needsSudo(match: PathMatch, op: Operation): boolean {
    return includesOp(match.path.def.sudo, op);
  }

  /** Parses fields leniently (no required check) so an existence check can read path captures. */
  private fieldsFor(match: PathMatch, req: BackendRequest, requireRequired: boolean): ParsedFields {
    const carrier = req as ParsedCarrier;
    const earlier = carrier[PARSED];
    // A copy of the request (spread with other data) must parse afresh.
    if (earlier && earlier.backend === this && earlier.request === req) {
      if (requireRequired) requireFields(match.path.def.fields ?? {}, earlier.parsed.fields);
      return earlier.parsed;
    }
    const parsed = parseFields(match.path.def.fields ?? {}, req.data, match.captures, { requireRequired });
    if (!requireRequired) carrier[PARSED] = { backend: this, request: req, parsed };
    return parsed;
  }

  /**
   * Turns an HTTP write into create or update, as the path's existence check says; at once when
   * the path has no check or its check answers at once, so most writes skip a promise.
   */
  resolveWrite(match: PathMatch, req: BackendRequest): Operation | Promise<Operation> {
    const def = match.path.def;
    if (!def.existenceCheck) return def.operations.update || !def.operations.create ? 'update' : 'create';
    const exists = def.existenceCheck(req, this.fieldsFor(match, req, false).fields);
    if (exists instanceof Promise) return exists.then(writeOperation);
    return writeOperation(exists);
  }

  supports(match: PathMatch, op: Operation): boolean {
    return this.handlerFor(match, op) !== undefined;
  }

  private handlerFor(match: PathMatch, op: Operation) {
    const ops = match.path.def.operations;
    // A path that does not tell create from update serves both with one handler.
    if (op === 'create') return ops.create ?? ops.update;
    if (op === 'update') return ops.update ?? ops.create;
    return ops[op];
  }

  async execute(match: PathMatch, req: BackendRequest): Promise<BackendResponse | null> {
    const handler = this.handlerFor(match, req.operation);
    if (!handler) throw new UnsupportedOperationError();
    const writes = req.operation === 'create' || req.operation === 'update';
    const { fields, unknown } = this.fieldsFor(match, req, writes);
    const resp = await handler(req, fields);
    if (unknown.length > 0 && !match.path.def.arbitraryFields) {
      const warning = `Endpoint ignored these unrecognized parameters: [${unknown.join(' ')}]`;
      if (resp) return { ...resp, warnings: [...(resp.warnings ?? []), warning] };
      return { warnings: [warning] };
    }
    return resp;
  }
}

export function requireNonEmpty(name: string, value: string): string {
  if (value === '') throw new BadRequestError(`missing required field "${name}"`);
  return value;
}
