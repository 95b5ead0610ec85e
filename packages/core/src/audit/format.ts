import { createHmac, type KeyObject } from 'node:crypto';
import type { AuditAuth, AuditRequest, AuditRequestInput, AuditResponse, AuditResponseInput, AuditWrapInfo } from './types';

export const HASH_PREFIX = 'hmac-sha256:';

export type Hasher = (input: string) => string;

/**
 * Devices hold their salt as a KeyObject: node 24 checks a raw key's type on every HMAC, which
 * costs several times the HMAC itself, and an audit entry hashes every string it holds.
 */
export function hmacOf(salt: Buffer | KeyObject, input: string): string {
  return HASH_PREFIX + createHmac('sha256', salt).update(input, 'utf8').digest('hex');
}

/**
 * A copy of `value` with every string replaced by its hash. Keys stay readable so an operator
 * can see which fields a request touched without learning their values.
 */
export function hashStrings(value: unknown, hash: Hasher, seen: WeakSet<object> = new WeakSet()): unknown {
  if (typeof value === 'string') return hash(value);
  if (typeof value === 'bigint') return hash(value.toString());
  if (value === null || typeof value !== 'object') {
    // Functions and symbols vanish from JSON anyway; they must not reach the log as text.
    return typeof value === 'function' || typeof value === 'symbol' ? undefined : value;
  }
  if (value instanceof Date) return value;
  // Bytes would otherwise serialize as an array of numbers, which is the secret in the clear.
  if (ArrayBuffer.isView(value)) return hash(Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'));
  if (value instanceof ArrayBuffer) return hash(Buffer.from(value).toString('base64'));
  if (seen.has(value)) throw new Error('audit: cannot log a value that refers to itself');
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => hashStrings(v, hash, seen) ?? null);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = hashStrings(v, hash, seen);
    return out;
  } finally {
    seen.delete(value);
  }
}

function hashData(data: Record<string, unknown> | null | undefined, hash: Hasher | null, exempt: readonly string[] = []): unknown {
  if (!data || !hash) return data;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) out[k] = exempt.includes(k) ? v : hashStrings(v, hash);
  return out;
}

function isEmpty(v: unknown): boolean {
  if (v === undefined || v === null || v === '' || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) return Object.keys(v as object).length === 0;
  return false;
}

/** Vault's audit structures leave out what is unset, so entries only show what applied. */
function compact(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) if (!isEmpty(v)) out[k] = v;
  return out;
}

/** Go's RFC 3339 with nanoseconds drops trailing zeros from the fraction; readers expect that. */
export function auditTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.?0+Z$/, 'Z');
}

export interface FormatOptions {
  /** Null writes values in the clear (`log_raw`). */
  hash: Hasher | null;
  hmacAccessor: boolean;
}

class EntryFormatter {
  constructor(private readonly opts: FormatOptions) {}

  private token(v: string | undefined): string | undefined {
    return v && this.opts.hash ? this.opts.hash(v) : v;
  }

  private accessor(v: string | undefined): string | undefined {
    return v && this.opts.hash && this.opts.hmacAccessor ? this.opts.hash(v) : v;
  }

  auth(a: AuditAuth | null | undefined): Record<string, unknown> {
    if (!a) return {};
    return compact({
      client_token: this.token(a.clientToken),
      accessor: this.accessor(a.accessor),
      display_name: a.displayName,
      policies: a.policies,
      token_policies: a.tokenPolicies,
      identity_policies: a.identityPolicies,
      metadata: a.metadata,
      num_uses: a.numUses,
      entity_id: a.entityId,
      token_type: a.tokenType,
      token_ttl: a.tokenTtl,
      token_issue_time: a.tokenIssueTime ? new Date(a.tokenIssueTime).toISOString().replace(/\.\d+Z$/, 'Z') : undefined,
    });
  }

  request(r: AuditRequest): Record<string, unknown> {
    return compact({
      id: r.id,
      operation: r.operation,
      mount_point: r.mountPoint,
      mount_type: r.mountType,
      mount_accessor: r.mountAccessor,
      client_token: this.token(r.clientToken),
      client_token_accessor: this.accessor(r.clientTokenAccessor),
      namespace: compact({ id: r.namespace?.id ?? 'root', path: r.namespace?.path }),
      path: r.path,
      data: hashData(r.data, this.opts.hash, r.nonHmacKeys),
      remote_address: r.remoteAddress,
      wrap_ttl: r.wrapTtl,
    });
  }

  private wrapInfo(w: AuditWrapInfo | null | undefined): Record<string, unknown> | undefined {
    if (!w) return undefined;
    return compact({
      token: this.token(w.token),
      accessor: this.accessor(w.accessor),
      ttl: w.ttl,
      creation_time: w.creationTime ? auditTime(w.creationTime) : undefined,
      creation_path: w.creationPath,
      wrapped_accessor: this.accessor(w.wrappedAccessor),
    });
  }

  response(req: AuditRequest, r: AuditResponse | null): Record<string, unknown> {
    return compact({
      mount_point: req.mountPoint,
      mount_type: req.mountType,
      mount_accessor: req.mountAccessor,
      auth: r?.auth ? this.auth(r.auth) : undefined,
      // Vault counts lease information among the strings it hashes.
      secret: r?.secret?.leaseId ? { lease_id: this.token(r.secret.leaseId) } : undefined,
      data: hashData(r?.data, this.opts.hash, r?.nonHmacKeys),
      warnings: r?.warnings,
      redirect: r?.redirect,
      wrap_info: this.wrapInfo(r?.wrapInfo),
    });
  }
}

/** The request entry as one JSON object, in the field order Vault writes. */
export function formatRequestEntry(input: AuditRequestInput, opts: FormatOptions, now: number): Record<string, unknown> {
  const f = new EntryFormatter(opts);
  const entry: Record<string, unknown> = { time: auditTime(now), type: 'request', auth: f.auth(input.auth), request: f.request(input.request) };
  if (input.error) entry['error'] = input.error;
  return entry;
}

export function formatResponseEntry(input: AuditResponseInput, opts: FormatOptions, now: number): Record<string, unknown> {
  const f = new EntryFormatter(opts);
  const entry: Record<string, unknown> = {
    time: auditTime(now), type: 'response', auth: f.auth(input.auth), request: f.request(input.request),
    response: f.response(input.request, input.response),
  };
  if (input.error) entry['error'] = input.error;
  return entry;
}
