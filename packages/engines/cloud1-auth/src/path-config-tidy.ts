import { definePath, getJson, putJson, type LogicalStorage, type PathDefinition } from '@strongroom/core';
import type { Cloud1Context } from './context';
import { KEYS, type TidyKind } from './storage-keys';

export interface TidyConfig {
  /** Seconds past an entry's expiration before tidy removes it. */
  safetyBuffer: number;
  disablePeriodicTidy: boolean;
}

export const DEFAULT_SAFETY_BUFFER = 72 * 3600;

export async function readTidyConfig(storage: LogicalStorage, kind: TidyKind): Promise<TidyConfig> {
  return (await getJson<TidyConfig>(storage, KEYS.tidyConfig(kind))) ?? { safetyBuffer: DEFAULT_SAFETY_BUFFER, disablePeriodicTidy: false };
}

/** Current names first; the deprecated whitelist/blacklist names serve the same settings. */
const ALIASES: Array<{ pattern: string; kind: TidyKind }> = [
  { pattern: 'config/tidy/identity-accesslist', kind: 'identity-accesslist' },
  { pattern: 'config/tidy/identity-whitelist', kind: 'identity-accesslist' },
  { pattern: 'config/tidy/roletag-denylist', kind: 'roletag-denylist' },
  { pattern: 'config/tidy/roletag-blacklist', kind: 'roletag-denylist' },
];

export function configTidyPaths(_ctx: Cloud1Context): PathDefinition[] {
  return ALIASES.map(({ pattern, kind }) => definePath({
    pattern,
    fields: {
      safety_buffer: { type: 'duration', default: DEFAULT_SAFETY_BUFFER },
      disable_periodic_tidy: { type: 'bool', default: false },
    },
    existenceCheck: async (req) => (await req.storage.get(KEYS.tidyConfig(kind))) !== null,
    operations: {
      read: async (req) => {
        const stored = await getJson<TidyConfig>(req.storage, KEYS.tidyConfig(kind));
        return stored ? { data: { safety_buffer: stored.safetyBuffer, disable_periodic_tidy: stored.disablePeriodicTidy } } : null;
      },
      create: async (req, f) => {
        const current = await readTidyConfig(req.storage, kind);
        await putJson(req.storage, KEYS.tidyConfig(kind), {
          safetyBuffer: f.has('safety_buffer') ? f.int('safety_buffer') : current.safetyBuffer,
          disablePeriodicTidy: f.has('disable_periodic_tidy') ? f.bool('disable_periodic_tidy') : current.disablePeriodicTidy,
        } satisfies TidyConfig);
        return null;
      },
      delete: async (req) => {
        await req.storage.delete(KEYS.tidyConfig(kind));
        return null;
      },
    },
    help: `Settings of the periodic tidy of the ${kind === 'identity-accesslist' ? 'identity access list' : 'role tag deny list'}.`,
  }));
}
