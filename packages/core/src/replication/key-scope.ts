import { DATA_PREFIX } from '../mounts/mount-table';

/** How replication sees a physical key. */
export interface KeyScope {
  /**
   * shared: a performance secondary gets it. local: tokens, leases, cubbyholes, local mounts'
   * data and their table entries; each cluster keeps its own.
   */
  scope: 'shared' | 'local';
}

const SHARED: KeyScope = Object.freeze({ scope: 'shared' });
const LOCAL: KeyScope = Object.freeze({ scope: 'local' });

/**
 * Prefixes of what each cluster keeps for itself: its own state (`core/local/`), tokens with
 * their cubbyholes, leases, the root namespace's local mount tables, and the copies of its
 * performance role (a primary's set, a secondary's link and mark), which its DR secondaries
 * hold but no performance secondary may (they hold the set's CA key, a secondary's client key).
 */
const LOCAL_PREFIXES = ['core/local/', 'core/local-mounts', 'core/local-auth', 'sys/token/', 'sys/expire/', 'core/replication-performance-'];
/**
 * A cluster's own settings outside `core/local/` (kept where they were before replication), its
 * local audit devices, and the root key as its own auto seal wrapped it.
 */
const LOCAL_KEYS = new Set(['core/autopilot-configuration', 'core/local-audit', 'core/wrapped-root-key']);
const NAMESPACE_DATA = 'core/namespaces/';
const DATA_PREFIXES = Object.values(DATA_PREFIX);

/**
 * The scope of `key`, given the UUIDs of the mounts enabled with `local` and, by mount UUID, the
 * prefixes of a mount's storage its engine keeps local (see `Backend.localStorage`). Runs for
 * every key of every streamed write, so it looks at prefixes, one set and one lookup only.
 */
export function scopeOf(
  key: string, localMounts: ReadonlySet<string>, localStorage?: (uuid: string) => readonly string[] | undefined,
): KeyScope {
  for (const prefix of LOCAL_PREFIXES) if (key.startsWith(prefix)) return LOCAL;
  if (LOCAL_KEYS.has(key)) return LOCAL;
  if (key.startsWith(NAMESPACE_DATA)) {
    // core/namespaces/<id>/local-mounts, core/namespaces/<id>/local-auth
    const slash = key.indexOf('/', NAMESPACE_DATA.length);
    return slash > 0 && key.startsWith('local-', slash + 1) ? LOCAL : SHARED;
  }
  for (const prefix of DATA_PREFIXES) {
    if (!key.startsWith(prefix)) continue;
    const slash = key.indexOf('/', prefix.length);
    const uuid = slash < 0 ? key.slice(prefix.length) : key.slice(prefix.length, slash);
    if (localMounts.has(uuid)) return LOCAL;
    if (slash > 0 && localStorage) {
      for (const local of localStorage(uuid) ?? []) if (key.startsWith(local, slash + 1)) return LOCAL;
    }
    return SHARED;
  }
  return SHARED;
}
