import type { Readable } from 'node:stream';
import type { LogicalStorage } from '../storage/logical';
import type { FieldData, FieldSchemas } from './fields';

export type Operation = 'read' | 'list' | 'create' | 'update' | 'patch' | 'delete';

export const OPERATIONS: readonly Operation[] = ['read', 'list', 'create', 'update', 'patch', 'delete'];

/** Mount settings a backend may consult (lease TTL bounds, engine options such as KV version). */
export interface MountSettings {
  path: string;
  type: string;
  accessor: string;
  uuid: string;
  defaultLeaseTtl: number;
  maxLeaseTtl: number;
  options: Record<string, string>;
}

/** The caller as the router resolved it from the token. */
export interface Caller {
  accessor: string;
  policies: string[];
  displayName: string;
  entityId: string;
  isRoot: boolean;
  /** Hashed token ID: the key of the token entry, never the token itself. */
  tokenHash: string;
  tokenType: 'service' | 'batch';
  metadata: Record<string, string>;
  /** Whether the ACL rule that admitted this request grants `sudo` (or the token is root). */
  sudo: boolean;
}

export interface BackendRequest {
  id: string;
  operation: Operation;
  /** Path relative to the mount, without a leading slash. */
  path: string;
  mount: MountSettings;
  storage: LogicalStorage;
  data: Record<string, unknown>;
  caller?: Caller;
  /** The raw client token, present only for backends that manage tokens (auth/token). */
  clientToken?: string;
  remoteAddress?: string;
  headers: Record<string, string | undefined>;
  /** Seconds, when the caller asked for the reply to be wrapped (X-Vault-Wrap-TTL). */
  wrapTtl?: number;
  /** The namespace the request runs in (`path` is '' for the root namespace). */
  namespace: { id: string; path: string };
  /** A binary request body (sent as application/octet-stream), unread; `data` is then empty. */
  body?: Readable;
}

export interface AuthResult {
  clientToken: string;
  accessor: string;
  policies: string[];
  tokenPolicies: string[];
  metadata: Record<string, string> | null;
  leaseDuration: number;
  renewable: boolean;
  entityId: string;
  tokenType: 'service' | 'batch';
  orphan: boolean;
  numUses: number;
}

/**
 * A secret with a lifetime. Core registers a lease for it (the reply then carries `lease_id`)
 * and later calls the secret type's `revoke` with `internal`, which is never shown to clients.
 */
export interface SecretResult {
  /** Names an entry of the backend's `secretTypes`. */
  type: string;
  /** Seconds; 0 means the mount's default lease TTL. */
  ttl: number;
  renewable: boolean;
  internal: Record<string, unknown>;
}

/** What a backend does when one of its leases is renewed or ends. */
export interface SecretType {
  /** Undo whatever issuing the secret created. Throwing makes core retry later, with backoff. */
  revoke(req: BackendRequest, internal: Record<string, unknown>): Promise<void>;
  /** Called on renewal; may shorten the TTL or refuse by throwing. Absent: renewal is a no-op. */
  renew?(req: BackendRequest, internal: Record<string, unknown>, increment: number): Promise<{ ttl?: number } | void>;
}

/**
 * A successful login by an auth method. Core turns it into an identity (entity and alias, by
 * `aliasName` within the mount) and an orphan token carrying the entity ID; the reply's `auth`
 * block is filled in by core.
 */
export interface LoginResult {
  /** The caller's stable name within the auth method (a role ID, an ARN, an instance ID). */
  aliasName: string;
  /** Token metadata; also the alias metadata (a changed value rewrites the alias). */
  metadata?: Record<string, string>;
  policies: string[];
  noDefaultPolicy?: boolean;
  displayName?: string;
  /** Seconds; 0 or absent means the mount's default. */
  ttl?: number;
  maxTtl?: number;
  period?: number;
  numUses?: number;
  boundCidrs?: string[];
  tokenType?: 'service' | 'batch';
  /**
   * Seconds; a hard cap on the token's life from its creation. When a login sets it (even to 0),
   * `maxTtl` stops being a hard cap and becomes the ceiling the auth method may restate at each
   * renewal (a role's current token_max_ttl); without it, `maxTtl` is the hard cap, as before.
   */
  explicitMaxTtl?: number;
  /** The alias's metadata when it must differ from the token's (values that change every login). */
  aliasMetadata?: Record<string, string>;
  /**
   * Kept with a service token and never shown; handed back to the auth method's
   * `Backend.renewLogin` when the token is renewed (Vault's auth InternalData).
   */
  internal?: Record<string, unknown>;
}

/** What core tells an auth method when a token one of its logins issued is being renewed. */
export interface LoginRenewRequest {
  /** The `internal` of the login that issued the token. */
  internal: Record<string, unknown>;
  metadata: Record<string, string>;
  policies: string[];
  /** Seconds the caller asked for (0: the token's own TTL). */
  increment: number;
  /** When the token was issued (ms since epoch). */
  issuedAt: number;
}

/**
 * An auth method's answer to a renewal: the current values of its role (Vault's renew handlers
 * re-read them). Absent fields keep the token's own. Refusing is done by throwing.
 */
export interface LoginRenewal {
  ttl?: number;
  maxTtl?: number;
  period?: number;
}

export interface BackendResponse {
  data?: Record<string, unknown> | null;
  secret?: SecretResult;
  login?: LoginResult;
  warnings?: string[];
  auth?: AuthResult;
  /** Overrides the HTTP status of an enveloped reply (e.g. KV answers 404 with metadata). */
  status?: number;
  /** A reply outside Vault's envelope, as sys/health and sys/seal-status send. */
  raw?: { status: number; body: unknown };
  /** Vault copies `data`'s keys to the top level of some sys replies; old clients read them there. */
  copyDataToTop?: boolean;
}

export type OperationHandler = (req: BackendRequest, fields: FieldData) => Promise<BackendResponse | null>;

export interface PathDefinition {
  /** Regex source relative to the mount, anchored at both ends; named groups become fields. */
  pattern: string;
  fields?: FieldSchemas;
  operations: Partial<Record<Operation, OperationHandler>>;
  /**
   * Decides whether a write is a `create` or an `update` for the ACL, as Vault does. Without it,
   * every write is an `update`. A check that knows at once (a cached entry) may answer without
   * a Promise, which saves the request a turn of the microtask queue.
   */
  existenceCheck?: (req: BackendRequest, fields: FieldData) => boolean | Promise<boolean>;
  /** Operations callable without a token (true = all). */
  unauthenticated?: boolean | readonly Operation[];
  /** Operations that also need the `sudo` capability (true = all). */
  sudo?: boolean | readonly Operation[];
  /** Answers only in the root namespace (cluster-wide operations such as seal or storage). */
  restricted?: boolean;
  /** Data keys outside `fields` are the payload (KV); they produce no "ignored" warning. */
  arbitraryFields?: boolean;
  help?: string;
}

export function definePath(def: PathDefinition): PathDefinition {
  return def;
}
