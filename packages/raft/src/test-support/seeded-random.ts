/**
 * A seeded pseudo-random source for tests, so a failing generated case replays exactly from its
 * seed. Not for anything secret: the generator is small and predictable by design.
 */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** A uniformly chosen element; throws on an empty list, which is always a test bug. */
  pick<T>(items: readonly T[]): T;
}

/**
 * Mulberry32 (a public-domain 32-bit generator): one word of state, good enough statistics for
 * shuffling test inputs, and identical output on every platform because it uses only 32-bit
 * integer arithmetic.
 */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number): number => Math.floor(next() * n);
  return {
    next,
    int,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[int(items.length)] as T;
    },
  };
}
