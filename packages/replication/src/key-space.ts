/**
 * Which part of the replicated key space a physical key belongs to.
 *
 * - `replicated`: shared by every cluster of a replication set (mount tables, secrets, policies,
 *   the seal configuration and keyring).
 * - `local`: state a performance secondary keeps for itself (its tokens and leases), which a DR
 *   secondary still copies, since it takes over the primary's clients.
 * - null: state of this one cluster that never leaves it (its replication role and credentials,
 *   its autopilot settings).
 */
export type KeyClass = 'replicated' | 'local';

/** Physical prefix of everything that belongs to this cluster alone. */
export const CLUSTER_LOCAL_PREFIX = 'core/local/';

// The wrapped root key: each cluster's own auto seal wraps it (a secondary's from its activation).
const CLUSTER_LOCAL_KEYS = new Set(['core/autopilot-configuration', 'core/wrapped-root-key']);
const LOCAL_PREFIXES = ['sys/token/', 'sys/expire/'];

export function classifyKey(key: string): KeyClass | null {
  if (key.startsWith(CLUSTER_LOCAL_PREFIX) || CLUSTER_LOCAL_KEYS.has(key)) return null;
  return LOCAL_PREFIXES.some((p) => key.startsWith(p)) ? 'local' : 'replicated';
}
