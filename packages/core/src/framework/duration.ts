import { BadRequestError } from '../errors';

const UNIT_SECONDS: Record<string, number> = { ns: 1e-9, us: 1e-6, 'µs': 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600, d: 86400 };
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)/y;

/**
 * The longest duration Vault can hold: Go's time.Duration counts nanoseconds in an int64, about
 * 292 years. Anything longer is no duration there, and here it would end past the last date a
 * Date can show (a lease or a deletion time that cannot be printed).
 */
export const MAX_DURATION_SECONDS = 9_223_372_036;

/**
 * Parses a duration the way Vault clients write them: integer seconds (number or numeric
 * string) or a Go-style string such as `72h`, `1h30m`, `90s`, `7d`. Returns whole seconds.
 * Returns null when the value is not a duration or is longer than MAX_DURATION_SECONDS, so
 * callers can name the field in their error.
 */
export function parseDurationSeconds(value: unknown): number | null {
  const seconds = parseUnbounded(value);
  return seconds !== null && seconds <= MAX_DURATION_SECONDS ? seconds : null;
}

function parseUnbounded(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.floor(value) : null;
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (text === '') return 0;
  if (/^\d+$/.test(text)) return Number(text);
  let total = 0;
  PART.lastIndex = 0;
  let pos = 0;
  while (pos < text.length) {
    PART.lastIndex = pos;
    const m = PART.exec(text);
    if (!m) return null;
    total += Number(m[1]) * (UNIT_SECONDS[m[2] as string] as number);
    pos = PART.lastIndex;
  }
  return Math.floor(total);
}

export function requireDuration(field: string, value: unknown): number {
  const seconds = parseDurationSeconds(value);
  if (seconds === null) {
    throw new BadRequestError(`invalid value for "${field}": expected a duration such as "72h" or a non-negative number of seconds`);
  }
  return seconds;
}

/** Formats seconds as Vault prints durations in some responses (e.g. `1h0m0s`, `0s`). */
export function formatDuration(seconds: number): string {
  if (seconds <= 0) return '0s';
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
