/** Short, locale-free renderings for dense cards: the same text at any width and in screenshots. */

export function bytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** `12 s`, `4 min`, `3 h`, `2 d`: coarse on purpose, the exact time is in the title. */
export function duration(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 90) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 90) return `${min} min`;
  const h = Math.round(min / 60);
  if (h < 36) return `${h} h`;
  return `${Math.round(h / 24)} d`;
}

/**
 * A server time relative to the browser's clock. Vault writes "never" as the zero time
 * (`0001-01-01T00:00:00Z`) or an empty string, so both read as null.
 */
export function parseTime(text: unknown): number | null {
  if (typeof text !== 'string' || text === '' || text.startsWith('0001-')) return null;
  const t = Date.parse(text);
  return Number.isNaN(t) ? null : t;
}

export function relative(at: number | null, now: number): string {
  if (at === null) return 'never';
  return at <= now ? `${duration(now - at)} ago` : `in ${duration(at - now)}`;
}

/** Long IDs and hashes cut to a recognizable head; the whole value stays in the title. */
export function short(text: string, keep = 8): string {
  return text.length > keep + 1 ? `${text.slice(0, keep)}…` : text;
}
