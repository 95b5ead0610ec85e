/** One measurement of a series at a time (ms since the epoch). */
export interface Sample {
  at: number;
  value: number;
}

/** Named series of samples, trimmed to a time window; what the lag chart draws. */
export type SeriesMap = ReadonlyMap<string, readonly Sample[]>;

/**
 * Adds this round's values and drops what left the window, and series no longer reported at
 * all (a revoked secondary) once their last sample did. A new map, so the page re-renders.
 */
export function addSamples(series: SeriesMap, values: ReadonlyMap<string, number>, at: number, windowMs: number): SeriesMap {
  const from = at - windowMs;
  const next = new Map<string, readonly Sample[]>();
  for (const [name, samples] of series) {
    const kept = samples.filter((s) => s.at >= from);
    if (kept.length > 0 || values.has(name)) next.set(name, kept);
  }
  for (const [name, value] of values) {
    next.set(name, [...(next.get(name) ?? []), { at, value }]);
  }
  return next;
}
