import { AsyncLocalStorage } from 'node:async_hooks';
import { BadRequestError, InternalError } from '../errors';
import type { Caller, Operation } from '../framework/types';

/** A write a performance secondary hands its primary, which runs it on the secondary's behalf. */
export interface ForwardedWrite {
  operation: Operation;
  /** Without `/v1/` and without a leading slash, as the client sent it. */
  path: string;
  data: Record<string, unknown>;
  /** The X-Vault-Namespace header value as the client sent it, if any. */
  namespace?: string;
  remoteAddress?: string;
}

/**
 * Thrown by the storage of a performance secondary when a request's handler writes a key that
 * only the primary may write; nothing of that write was stored. The core answers the request by
 * forwarding it, so a client sees this only when there is no primary to forward to.
 */
export class SharedWriteRefused extends InternalError {
  constructor(key: string) {
    super(`a performance secondary cannot write replicated storage (${key.split('/', 2).join('/')}/...) and has no primary to forward to`);
  }
}

/**
 * Thrown on a performance secondary when a request about what the cluster keeps for itself (or
 * a login, whose token must be this cluster's) wrote a shared key: the primary knows nothing of
 * this cluster's tokens, leases and local mounts (or has local mounts of its own at the same
 * paths), so such a request is never forwarded.
 */
export class LocalRequestNotForwarded extends InternalError {
  constructor(path: string) {
    super(`${path} is served by this cluster for itself and is not forwarded to the primary, but it tried to write replicated storage`);
  }
}

/** Of the system backend's paths (without `sys/`), those about tokens, leases and wrapped responses. */
const LOCAL_SYSTEM_PATHS = /^(leases\/|renew(\/|$)|revoke(\/|-prefix\/|-force\/|$)|wrapping\/)/;

/**
 * Whether a request is about what each cluster keeps for itself: a local mount, the token store,
 * cubbyholes, leases and wrapped responses. A performance secondary runs it there and never
 * forwards it; a primary refuses it forwarded.
 */
export function staysLocal(entry: { local: boolean; type: string }, relative: string): boolean {
  if (entry.local || entry.type === 'token' || entry.type === 'cubbyhole') return true;
  return entry.type === 'system' && LOCAL_SYSTEM_PATHS.test(relative);
}

/** What a request running on a performance secondary learns from its storage. */
export interface WriteScope {
  /** A write of a shared key was refused: the request must go to the primary. */
  refused: boolean;
}

/**
 * The write request a storage write belongs to. Backends may catch and wrap storage errors, so
 * the refusal is recorded here as well, where the core finds it whatever the handler did with it.
 */
const writeScopes = new AsyncLocalStorage<WriteScope>();
let scopesInFlight = 0;

/**
 * Runs a write request of a performance secondary in its scope. Before Node 24, an enabled
 * AsyncLocalStorage hooks every promise of the process, reads included (on Node 20 a third more
 * CPU per KV read in the core), so the scope is switched off whenever no write is in flight;
 * reads never enter one (see `isSharedWriteRefusal`).
 */
export async function inWriteScope<T>(scope: WriteScope, run: () => Promise<T>): Promise<T> {
  scopesInFlight++;
  try {
    return await writeScopes.run(scope, run);
  } finally {
    if (--scopesInFlight === 0) writeScopes.disable();
  }
}

/** The scope of the write request this code runs for, if it runs for one. */
export function currentWriteScope(): WriteScope | undefined {
  return writeScopes.getStore();
}

/**
 * Whether `err` is, or wraps through `cause`, a refused write of a shared key: how a read, which
 * runs without a scope, learns that it must go to the primary.
 */
export function isSharedWriteRefusal(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 8 && e instanceof Error; depth++, e = (e as { cause?: unknown }).cause) {
    if (e instanceof SharedWriteRefused) return true;
  }
  return false;
}

/**
 * Who a forwarded write runs as on the primary: the secondary checked the client's token, ACL
 * and sudo with its own tokens (which the primary does not know) before it forwarded.
 */
export const FORWARDED_CALLER: Caller = Object.freeze({
  accessor: '', policies: ['root'], displayName: 'forwarded', entityId: '', isRoot: true, tokenHash: '', tokenType: 'service',
  metadata: {}, sudo: true,
}) as Caller;

/** Paths about one cluster itself (its seal, keys, storage, replication roles), never run for another one. */
const CLUSTER_ONLY = ['sys/seal', 'sys/unseal', 'sys/init', 'sys/step-down', 'sys/storage/', 'sys/replication/', 'sys/generate-root', 'sys/rekey', 'sys/rotate'];

export function checkForwardable(path: string): void {
  if (CLUSTER_ONLY.some((p) => path === p || path.startsWith(p.endsWith('/') ? p : `${p}/`) || (p.endsWith('/') && path === p.slice(0, -1)))) {
    throw new BadRequestError(`invalid value for "path": ${path} concerns one cluster only and cannot be forwarded`);
  }
}
