import { definePath, getJson, putJson, type LogicalStorage, type PathDefinition } from '@strongroom/core';
import type { Cloud1Context } from './context';
import { DEFAULT_SAFETY_BUFFER, readTidyConfig } from './path-config-tidy';
import { withAccessListEntry } from './access-list';
import { KEYS, type TidyKind } from './storage-keys';

/** How often the active node tidies both lists, unless their settings disable it. */
export const PERIODIC_TIDY_INTERVAL_MS = 3600_000;

const PREFIX: Record<TidyKind, string> = { 'identity-accesslist': KEYS.accessListPrefix, 'roletag-denylist': KEYS.denyListPrefix };

/**
 * Removes the entries of one list whose expiration plus `safetyBuffer` seconds has passed.
 * Entries are read one by one, so an entry updated meanwhile by a login is judged on its new
 * expiration. Answers how many were removed.
 */
export async function tidyList(storage: LogicalStorage, mountUuid: string, kind: TidyKind, safetyBuffer: number, now: number): Promise<number> {
  const prefix = PREFIX[kind];
  let removed = 0;
  for (const key of await storage.list(prefix)) {
    const judge = async () => {
      const entry = await getJson<{ expirationTime: number }>(storage, prefix + key);
      if (!entry || now <= entry.expirationTime + safetyBuffer * 1000) return;
      await storage.delete(prefix + key);
      removed++;
    };
    // An access list entry is judged under its lock, so a login renewing it meanwhile is not undone.
    if (kind === 'identity-accesslist') await withAccessListEntry(mountUuid, key, judge);
    else await judge();
  }
  return removed;
}

/** Per mount: one tidy of each list at a time (a second request is told it is running). */
export class Tidier {
  private readonly running = new Set<TidyKind>();

  constructor(private readonly ctx: Cloud1Context) {}

  async run(storage: LogicalStorage, mountUuid: string, kind: TidyKind, safetyBuffer: number): Promise<number | null> {
    if (this.running.has(kind)) return null;
    this.running.add(kind);
    try {
      return await tidyList(storage, mountUuid, kind, safetyBuffer, this.ctx.clock.now());
    } finally {
      this.running.delete(kind);
    }
  }

  /**
   * The active node's background tidy: at most once per interval, judged by a time kept in
   * storage so that a restart or a new leader keeps the schedule; each list with its settings.
   */
  async periodic(storage: LogicalStorage, mountUuid: string): Promise<void> {
    const now = this.ctx.clock.now();
    const last = await getJson<{ at: number }>(storage, KEYS.lastPeriodicTidy);
    if (last && now - last.at < PERIODIC_TIDY_INTERVAL_MS) return;
    await putJson(storage, KEYS.lastPeriodicTidy, { at: now });
    for (const kind of ['identity-accesslist', 'roletag-denylist'] as const) {
      const settings = await readTidyConfig(storage, kind);
      if (settings.disablePeriodicTidy) continue;
      const removed = await this.run(storage, mountUuid, kind, settings.safetyBuffer);
      if (removed) this.ctx.logger.info('cloud1 auth tidied expired entries', { list: kind, removed });
    }
  }
}

const ROUTES: Array<{ pattern: string; kind: TidyKind }> = [
  { pattern: 'tidy/identity-accesslist', kind: 'identity-accesslist' },
  { pattern: 'tidy/identity-whitelist', kind: 'identity-accesslist' },
  { pattern: 'tidy/roletag-denylist', kind: 'roletag-denylist' },
  { pattern: 'tidy/roletag-blacklist', kind: 'roletag-denylist' },
];

export function tidyPaths(_ctx: Cloud1Context, tidier: Tidier): PathDefinition[] {
  return ROUTES.map(({ pattern, kind }) => definePath({
    pattern,
    fields: { safety_buffer: { type: 'duration', default: DEFAULT_SAFETY_BUFFER } },
    operations: {
      update: async (req, f) => {
        const removed = await tidier.run(req.storage, req.mount.uuid, kind, f.int('safety_buffer'));
        // 202 as Vault answers a tidy; here the work is done by the time the answer goes out.
        const warning = removed === null
          ? `a tidy of the ${kind} is already in progress`
          : `tidy of the ${kind} finished: ${removed} expired ${removed === 1 ? 'entry' : 'entries'} removed`;
        return { status: 202, warnings: [warning], data: { removed: removed ?? 0 } };
      },
    },
    help: `Removes ${kind} entries whose expiration plus safety_buffer has passed.`,
  }));
}
