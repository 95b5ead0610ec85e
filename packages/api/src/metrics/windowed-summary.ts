import type { Metric, MetricValue, Registry } from 'prom-client';

/**
 * Buckets per doubling of the value: a quantile is reported within about 4% of the true one.
 * Values are expected in milliseconds; below 2^-10 ms (1 us) and above 2^24 ms (4.6 h) they
 * share the end buckets.
 */
const PER_DOUBLING = 8;
const MIN_EXP = -10;
const MAX_EXP = 24;
const BUCKETS = (MAX_EXP - MIN_EXP) * PER_DOUBLING + 2;

function bucketOf(v: number): number {
  if (!(v > 0)) return 0;
  const i = Math.floor((Math.log2(v) - MIN_EXP) * PER_DOUBLING) + 1;
  return i < 1 ? 1 : i >= BUCKETS ? BUCKETS - 1 : i;
}

/** The middle of bucket `i` (on the log scale), which stands for every value in it. */
function valueAt(i: number): number {
  return i === 0 ? 0 : 2 ** ((i - 0.5) / PER_DOUBLING + MIN_EXP);
}

/** One label set: cumulative count and sum, and bucket counts per time window. */
export class SummarySeries {
  count = 0;
  sum = 0;
  private readonly windows: Uint32Array[];
  private current = 0;
  private rotateAt: number;

  constructor(readonly labels: Record<string, string>, private readonly windowMs: number, windows: number, now: number) {
    this.windows = Array.from({ length: windows }, () => new Uint32Array(BUCKETS));
    this.rotateAt = now + windowMs;
  }

  /** `now` is `performance.now()`, which the caller usually has already (it timed what it observes). */
  observe(value: number, now = performance.now()): void {
    if (now >= this.rotateAt) this.rotate(now);
    (this.windows[this.current] as Uint32Array)[bucketOf(value)]!++;
    this.count++;
    this.sum += value;
  }

  /** Moves to the window `now` falls in, emptying the windows it passes (the oldest ones). */
  rotate(now: number): void {
    if (now < this.rotateAt) return;
    const steps = Math.min(this.windows.length, Math.floor((now - this.rotateAt) / this.windowMs) + 1);
    for (let i = 0; i < steps; i++) {
      this.current = (this.current + 1) % this.windows.length;
      (this.windows[this.current] as Uint32Array).fill(0);
    }
    this.rotateAt += Math.floor((now - this.rotateAt) / this.windowMs + 1) * this.windowMs;
  }

  /** The quantiles over the retained windows, NaN for each when nothing was observed in them. */
  quantiles(qs: readonly number[]): number[] {
    const merged = new Float64Array(BUCKETS);
    let total = 0;
    for (const w of this.windows) {
      for (let i = 0; i < BUCKETS; i++) merged[i]! += w[i]!;
    }
    for (let i = 0; i < BUCKETS; i++) total += merged[i]!;
    if (total === 0) return qs.map(() => NaN);
    return qs.map((q) => {
      const rank = Math.max(1, Math.ceil(q * total));
      let seen = 0;
      for (let i = 0; i < BUCKETS; i++) {
        seen += merged[i]!;
        if (seen >= rank) return valueAt(i);
      }
      return valueAt(BUCKETS - 1);
    });
  }
}

/**
 * A Prometheus summary whose observation is a bucket increment: prom-client's own keeps a
 * t-digest per age bucket, about a microsecond and a half per observation in this use, which
 * the request path of every API call cannot afford. Quantiles come from log-scale buckets over
 * a sliding window of `windows` x `windowMs`; `_count` and `_sum` are cumulative, as a summary's are.
 */
export class WindowedSummary<L extends string = string> {
  readonly type = 'summary';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, SummarySeries>();
  private readonly windowMs: number;

  constructor(private readonly options: {
    name: string; help: string; labelNames?: readonly L[]; percentiles: readonly number[]; maxAgeSeconds: number; ageBuckets: number; registers: Registry[];
  }) {
    this.windowMs = (options.maxAgeSeconds * 1000) / options.ageBuckets;
    // prom-client takes any object that answers `get` and `reset` as its metrics do.
    for (const r of options.registers) r.registerMetric(this as unknown as Metric);
  }

  get name(): string {
    return this.options.name;
  }

  get help(): string {
    return this.options.help;
  }

  /** The series of these label values, in `labelNames` order; callers on a hot path keep it. */
  labels(...values: string[]): SummarySeries {
    const key = values.join('\u0000');
    let s = this.series.get(key);
    if (!s) {
      const labels: Record<string, string> = {};
      (this.options.labelNames ?? []).forEach((name, i) => {
        labels[name] = values[i] ?? '';
      });
      s = new SummarySeries(labels, this.windowMs, this.options.ageBuckets, performance.now());
      this.series.set(key, s);
    }
    return s;
  }

  observe(value: number): void {
    this.labels().observe(value);
  }

  /** Drops the series of these label values (prom-client's `remove`). */
  remove(...values: string[]): void {
    this.series.delete(values.join('\u0000'));
  }

  async get(): Promise<{ name: string; help: string; type: 'summary'; aggregator: 'sum'; values: Array<MetricValue<string> & { metricName?: string }> }> {
    const now = performance.now();
    const values: Array<MetricValue<string> & { metricName?: string }> = [];
    for (const s of this.series.values()) {
      s.rotate(now);
      const qs = s.quantiles(this.options.percentiles);
      this.options.percentiles.forEach((q, i) => values.push({ labels: { ...s.labels, quantile: q }, value: qs[i] as number }));
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}
