import type { ClassicLevel } from 'classic-level';

/** Above the keys a state holds, for sizing the last range (which has no upper bound) only. */
const TOP = Buffer.alloc(16, 0xff);
/** Bisections deep enough for a thousand ranges however unevenly the keys fall. */
const MAX_DEPTH = 40;
/** Digits of a cut point: 0 for "the key ends here", else a code point plus one. */
const BASE = 0x110001;

/** LevelDB's estimate of the bytes on disk of the keys from `from` up to `to` (or the end). */
export function approximateBytes(db: ClassicLevel<string, Buffer>, from: string, to?: string): Promise<number> {
  return db.approximateSize(Buffer.from(from, 'utf8'), to === undefined ? TOP : Buffer.from(to, 'utf8'), { keyEncoding: 'buffer' });
}

/**
 * Cut points, in increasing order, that split the keys from `from` on into ranges of about
 * `rangeBytes` each (at most `maxRanges` ranges), by bisecting between the first and last key
 * of each range still too large. Only how even the ranges are depends on them: each cut lies
 * strictly inside the range it splits, so the ranges cover every key, in order, once. They are
 * strings (valid UTF-8) because the threads that read the ranges use the database's string keys.
 */
export async function planCuts(db: ClassicLevel<string, Buffer>, from: string, rangeBytes: number, maxRanges: number): Promise<string[]> {
  const cuts: string[] = [];
  // Low half first, so the cuts come out in order.
  const split = async (lo: string, hi: string | undefined, depth: number): Promise<void> => {
    if (depth >= MAX_DEPTH || cuts.length + 1 >= maxRanges) return;
    if (await approximateBytes(db, lo, hi) <= rangeBytes) return;
    const range = hi === undefined ? { gte: lo } : { gte: lo, lt: hi };
    const [first] = await db.keys({ ...range, limit: 1 }).all();
    const [last] = await db.keys({ ...range, limit: 1, reverse: true }).all();
    if (first === undefined || last === undefined) return;
    const inside = (m: string | undefined): m is string => m !== undefined && byteOrder(lo, m) < 0 && (hi === undefined || byteOrder(m, hi) < 0);
    const middle = between(first, last);
    const mid = inside(middle) ? middle : inside(last) ? last : undefined;
    if (mid === undefined) return;
    await split(lo, mid, depth + 1);
    cuts.push(mid);
    await split(mid, hi, depth + 1);
  };
  await split(from, undefined, 0);
  return cuts;
}

/**
 * A string about halfway between `a` and `b` in code point order (which is UTF-8's byte order),
 * from the two code points after their common prefix; undefined when none lies between there.
 */
export function between(a: string, b: string): string | undefined {
  const ca = Array.from(a);
  const cb = Array.from(b);
  let c = 0;
  while (c < ca.length && c < cb.length && ca[c] === cb[c]) c++;
  const low = digit(ca, c) * BASE + digit(ca, c + 1);
  const high = digit(cb, c) * BASE + digit(cb, c + 1);
  const m = Math.floor((low + high) / 2);
  if (m <= low) return undefined;
  const first = Math.floor(m / BASE);
  const second = m % BASE;
  let out = ca.slice(0, c).join('');
  if (first > 0) out += codePoint(first - 1);
  if (second > 0) out += codePoint(second - 1);
  return out;
}

export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function digit(codePoints: string[], i: number): number {
  return i < codePoints.length ? (codePoints[i]!.codePointAt(0) as number) + 1 : 0;
}

/** A lone surrogate would become U+FFFD in UTF-8, out of order: the next code point above them stands in. */
function codePoint(n: number): string {
  return String.fromCodePoint(n >= 0xd800 && n <= 0xdfff ? 0xe000 : n);
}
