import type { AuthResult, BackendResponse, Caller } from '../framework/types';
import type { TokenEntry } from '../token/token-entry';
import type { AuditAuth, AuditResponse, AuditWrapInfo } from './types';

/**
 * The audit view of the caller `Core.authorize` resolved. `token` adds what the Caller does not
 * carry (creation TTL, issue time); pass the entry `authorize` looked up when it is at hand.
 */
export function auditAuthOf(
  caller: Caller,
  clientToken: string | undefined,
  token?: Pick<TokenEntry, 'creationTtl' | 'creationTime'>,
): AuditAuth {
  return {
    clientToken,
    accessor: caller.accessor,
    displayName: caller.displayName,
    policies: caller.policies,
    // Strongroom has no identity policies on the Caller, so the token's policies are all of them.
    tokenPolicies: caller.policies,
    metadata: caller.metadata,
    entityId: caller.entityId,
    tokenType: caller.tokenType,
    tokenTtl: token?.creationTtl,
    tokenIssueTime: token?.creationTime,
  };
}

function authOf(auth: AuthResult): AuditAuth {
  return {
    clientToken: auth.clientToken,
    accessor: auth.accessor,
    policies: auth.policies,
    tokenPolicies: auth.tokenPolicies,
    metadata: auth.metadata,
    entityId: auth.entityId,
    tokenType: auth.tokenType,
    tokenTtl: auth.leaseDuration,
    numUses: auth.numUses,
  };
}

/**
 * The `wrap_info` of a wrapped reply's body (as `ResponseWrapper.wrap` builds it), or null
 * when the reply is not wrapped.
 */
export function auditWrapInfoOf(body: unknown): AuditWrapInfo | null {
  const info = (body as { wrap_info?: unknown } | null)?.wrap_info;
  if (!info || typeof info !== 'object') return null;
  const w = info as Record<string, unknown>;
  const str = (k: string) => (typeof w[k] === 'string' ? (w[k] as string) : '');
  const created = typeof w['creation_time'] === 'string' ? Date.parse(w['creation_time']) : NaN;
  return {
    token: str('token'), accessor: str('accessor'), ttl: typeof w['ttl'] === 'number' ? w['ttl'] : 0,
    creationTime: Number.isNaN(created) ? 0 : created, creationPath: str('creation_path'),
    ...(str('wrapped_accessor') ? { wrappedAccessor: str('wrapped_accessor') } : {}),
  };
}

export interface AuditResponseExtras {
  /** The status answered, when it differs from what the backend said (204s, wrapping). */
  status?: number;
  /** The lease Core registered for `resp.secret`. */
  leaseId?: string;
  /** Set when the reply was wrapped: the client got only the wrapping token, so that is what is logged. */
  wrapInfo?: AuditWrapInfo | null;
}

/**
 * The audit view of a backend's answer. A raw reply (outside the envelope) is recorded the way
 * Vault records one, as status, content type and body; the body is a string, so it is hashed.
 */
export function auditResponseOf(resp: BackendResponse | null, extras: AuditResponseExtras = {}): AuditResponse {
  const status = extras.status ?? resp?.raw?.status ?? resp?.status;
  const out: AuditResponse = status === undefined ? {} : { status };
  if (!resp) return out;
  if (resp.raw) {
    const body = resp.raw.body;
    // A streamed or binary body (a Raft snapshot) is not the client's JSON: its bytes stay out of the log.
    out.data = isBinary(body)
      ? { http_status_code: resp.raw.status, http_content_type: 'application/octet-stream' }
      : { http_status_code: resp.raw.status, http_content_type: 'application/json', http_raw_body: JSON.stringify(body) };
    return out;
  }
  if (extras.wrapInfo) {
    out.wrapInfo = extras.wrapInfo;
    return out;
  }
  out.data = resp.data ?? null;
  out.auth = resp.auth ? authOf(resp.auth) : null;
  out.warnings = resp.warnings ?? null;
  if (extras.leaseId) out.secret = { leaseId: extras.leaseId };
  return out;
}

/** The text an entry's `error` carries: the message the client was answered with. */
export function auditErrorOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isBinary(body: unknown): boolean {
  return Buffer.isBuffer(body) || body instanceof Uint8Array || typeof (body as { pipe?: unknown } | null)?.pipe === 'function';
}
