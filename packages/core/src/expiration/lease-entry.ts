import type { TableKind } from '../mounts/mount-table';

/** A lease as stored under `sys/expire/id/<lease_id>`. Times are milliseconds since epoch. */
export interface LeaseEntry {
  leaseId: string;
  /** The mount that issued the secret, by table and UUID (paths can move; UUIDs do not). */
  mountKind: TableKind;
  mountUuid: string;
  /** The request path, relative to the mount, that issued the secret. */
  path: string;
  secretType: string;
  internal: Record<string, unknown>;
  /** Hash of the token that owns the lease; '' when none. */
  tokenHash: string;
  issueTime: number;
  expireTime: number;
  lastRenewalTime: number;
  renewable: boolean;
  /** Failed revocations so far; drives the retry backoff. */
  revokeAttempts: number;
  lastError?: string;
}
