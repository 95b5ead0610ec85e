import type { Clock } from '../clock';
import type { Operation } from '../framework/types';
import type { Logger } from '../logger';

/**
 * The caller behind a request, as the audit log describes it. Tokens and accessors are given in
 * the clear; each device hashes them under its own salt.
 */
export interface AuditAuth {
  clientToken?: string;
  accessor?: string;
  displayName?: string;
  /** Every policy that applied (token and identity policies). */
  policies?: string[];
  tokenPolicies?: string[];
  identityPolicies?: string[];
  metadata?: Record<string, string> | null;
  entityId?: string;
  tokenType?: string;
  /** The TTL the token was created with, in seconds; 0 for none. */
  tokenTtl?: number;
  /** Milliseconds since the epoch. */
  tokenIssueTime?: number;
  numUses?: number;
}

export interface AuditRequest {
  id: string;
  operation: Operation;
  /** The full API path, without `/v1/` (`secret/data/app`, not the mount-relative path). */
  path: string;
  /** The mount's API path (`secret/`, `auth/token/`). */
  mountPoint?: string;
  mountType?: string;
  mountAccessor?: string;
  clientToken?: string;
  clientTokenAccessor?: string;
  remoteAddress?: string;
  data?: Record<string, unknown> | null;
  /** Defaults to the root namespace; `path` is shown for child namespaces (`team-a/`). */
  namespace?: { id: string; path?: string };
  /** Seconds, when the caller asked for a wrapped response. */
  wrapTtl?: number;
  /** Top-level data keys whose values stay in the clear (the mount's `audit_non_hmac_request_keys`). */
  nonHmacKeys?: readonly string[];
}

export interface AuditWrapInfo {
  token: string;
  accessor: string;
  ttl: number;
  /** Milliseconds since the epoch. */
  creationTime: number;
  creationPath: string;
  wrappedAccessor?: string;
}

export interface AuditResponse {
  /** The HTTP status answered. Vault's entries do not carry it, so the file device leaves it out. */
  status?: number;
  /** The lease Core registered for a secret the response hands out. */
  secret?: { leaseId: string } | null;
  data?: Record<string, unknown> | null;
  auth?: AuditAuth | null;
  warnings?: string[] | null;
  wrapInfo?: AuditWrapInfo | null;
  redirect?: string;
  /** Top-level data keys whose values stay in the clear (the mount's `audit_non_hmac_response_keys`). */
  nonHmacKeys?: readonly string[];
}

export interface AuditRequestInput {
  request: AuditRequest;
  /** Absent for requests that carried no (valid) token. */
  auth?: AuditAuth;
  /** Why the request was refused before it ran (bad token, permission denied). */
  error?: string;
}

export interface AuditResponseInput extends AuditRequestInput {
  /** Null when the request failed before there was anything to answer; `error` says why. */
  response: AuditResponse | null;
}

/** One enabled device as `sys/audit` shows it (and as the table stores it, minus the salt). */
export interface AuditDeviceInfo {
  path: string;
  type: string;
  description: string;
  options: Record<string, string>;
  local: boolean;
}

export interface AuditDeviceConfig {
  path: string;
  options: Record<string, string>;
  /** The device's HMAC key. */
  salt: Buffer;
  clock: Clock;
  logger: Logger;
}

/** A sink for audit entries; it formats and hashes them itself, since options differ per device. */
export interface AuditDevice {
  logRequest(input: AuditRequestInput): Promise<void>;
  logResponse(input: AuditResponseInput): Promise<void>;
  /** `hmac-sha256:<hex>` of `input` under this device's salt, the form its entries carry. */
  hash(input: string): string;
  close(): Promise<void>;
}

export interface AuditDeviceFactory {
  readonly type: string;
  /**
   * Checks the options and opens whatever the device writes to, so that a bad option or an
   * unwritable destination is refused at enable time, naming the option (BadRequestError).
   */
  create(config: AuditDeviceConfig): Promise<AuditDevice>;
  /**
   * Rules checked only when a device is enabled, not when a stored one is reopened at unseal: a
   * rule added in a later version must not stop a server holding an older device from unsealing.
   */
  checkNewOptions?(options: Readonly<Record<string, string>>): void;
}
