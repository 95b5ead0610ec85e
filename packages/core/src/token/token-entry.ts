/** A service token as stored (under the hash of its ID). Times are milliseconds since epoch. */
export interface TokenEntry {
  hash: string;
  accessor: string;
  /** Hash of the parent token; absent for orphans. */
  parent?: string;
  policies: string[];
  path: string;
  meta: Record<string, string>;
  displayName: string;
  numUses: number;
  creationTime: number;
  /** The TTL the token was created with, in seconds (0 = no expiry). */
  creationTtl: number;
  /** When the token stops working (0 = never). */
  expireTime: number;
  explicitMaxTtl: number;
  period: number;
  renewable: boolean;
  type: 'service' | 'batch';
  boundCidrs: string[];
  entityId: string;
  lastRenewalTime?: number;
  namespace: string;
  /**
   * For a token issued by an auth method's login that asked to be consulted on renewal: the
   * mount (by UUID, as mounts can move), what the login kept for itself, and the renewal
   * ceiling in seconds (0: none) when it is not a hard cap.
   */
  login?: { mountUuid: string; internal: Record<string, unknown>; maxTtl: number };
}

export function isExpired(entry: Pick<TokenEntry, 'expireTime'>, now: number): boolean {
  return entry.expireTime !== 0 && entry.expireTime <= now;
}
