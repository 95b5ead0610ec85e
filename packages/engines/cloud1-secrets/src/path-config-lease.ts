import {
  BadRequestError, definePath, formatDuration, getJson, putJson, type LogicalStorage, type PathDefinition,
} from '@strongroom/core';
import { KEYS } from './storage-keys';

/** Lease settings of iam_user credentials, in seconds. */
export interface LeaseConfig {
  lease: number;
  leaseMax: number;
}

export function readLeaseConfig(storage: LogicalStorage): Promise<LeaseConfig | null> {
  return getJson<LeaseConfig>(storage, KEYS.leaseConfig);
}

const UNIT_SECONDS: Record<string, number> = { ns: 1e-9, us: 1e-6, 'µs': 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };

/**
 * A duration with a unit suffix, `h` being the largest (`72h`, `1h30m`, `90s`): the spec's format
 * for these two fields, so days and bare numbers are refused rather than guessed at.
 */
export function parseLeaseDuration(field: string, value: string): number {
  const text = value.trim();
  if (text === '0') return 0;
  const part = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y;
  let total = 0;
  let pos = 0;
  while (pos < text.length) {
    part.lastIndex = pos;
    const m = part.exec(text);
    if (!m) {
      throw new BadRequestError(
        `invalid value for "${field}": "${value}" is not a duration with a unit suffix such as "72h", "30m" or "90s" (h is the largest unit)`,
      );
    }
    total += Number(m[1]) * (UNIT_SECONDS[m[2] as string] as number);
    pos = part.lastIndex;
  }
  if (text === '') throw new BadRequestError(`missing required field "${field}"`);
  return Math.floor(total);
}

/** `config/lease`: the TTL and maximum TTL of iam_user leases (the mount's own when unset). */
export function configLeasePaths(): PathDefinition[] {
  return [
    definePath({
      pattern: 'config/lease',
      fields: {
        lease: { type: 'string', required: true, description: 'default lease of iam_user credentials, e.g. "1h"' },
        lease_max: { type: 'string', required: true, description: 'maximum lease of iam_user credentials, e.g. "24h"' },
      },
      operations: {
        read: async (req) => {
          const config = await readLeaseConfig(req.storage);
          return config ? { data: { lease: formatDuration(config.lease), lease_max: formatDuration(config.leaseMax) } } : null;
        },
        update: async (req, f) => {
          const lease = parseLeaseDuration('lease', f.string('lease'));
          const leaseMax = parseLeaseDuration('lease_max', f.string('lease_max'));
          if (leaseMax > 0 && lease > leaseMax) {
            throw new BadRequestError(`invalid value for "lease_max": must not be shorter than "lease" (${formatDuration(lease)})`);
          }
          await putJson(req.storage, KEYS.leaseConfig, { lease, leaseMax } satisfies LeaseConfig);
          return null;
        },
      },
      help: 'The lease and maximum lease of iam_user credentials.',
    }),
  ];
}
