import { Registry } from 'prom-client';
import { parseExposition, valueOf } from './test-support/exposition';
import { SummarySeries, WindowedSummary } from './windowed-summary';

describe('windowed summary', () => {
  it('reports quantiles within a few percent of the true ones', () => {
    const s = new SummarySeries({}, 1000, 5, 0);
    // 1..10000 ms, in a shuffled order: the true p50 is 5000, p90 9000, p99 9900.
    const values = Array.from({ length: 10_000 }, (_, i) => i + 1);
    for (let i = values.length - 1; i > 0; i--) {
      const j = (i * 7919) % (i + 1);
      [values[i], values[j]] = [values[j] as number, values[i] as number];
    }
    for (const v of values) s.observe(v, 10);
    const [p50, p90, p99] = s.quantiles([0.5, 0.9, 0.99]) as [number, number, number];
    expect(Math.abs(p50 / 5000 - 1)).toBeLessThan(0.05);
    expect(Math.abs(p90 / 9000 - 1)).toBeLessThan(0.05);
    expect(Math.abs(p99 / 9900 - 1)).toBeLessThan(0.05);
    expect(s.count).toBe(10_000);
    expect(s.sum).toBe(50_005_000);
    // Sub-millisecond values keep their scale.
    const fast = new SummarySeries({}, 1000, 5, 0);
    for (let i = 0; i < 100; i++) fast.observe(0.2, 1);
    expect(Math.abs((fast.quantiles([0.5])[0] as number) / 0.2 - 1)).toBeLessThan(0.05);
  });

  it('forgets observations older than its windows for quantiles, never for count and sum', () => {
    const s = new SummarySeries({}, 1000, 3, 0);
    s.observe(100, 500);
    s.observe(100, 1500);
    expect(s.quantiles([0.5])).toEqual([expect.closeTo(100, -1)]);
    s.observe(1, 2500);
    // At 3.2 s the window of the first 100 is gone, at 4.2 s that of the second.
    s.rotate(3200);
    expect(s.quantiles([0.99])[0]).toBeCloseTo(100, -1);
    s.rotate(4200);
    expect(s.quantiles([0.99])[0]).toBeCloseTo(1, 0);
    s.rotate(60_000);
    expect(s.quantiles([0.5])).toEqual([NaN]);
    expect(s.count).toBe(3);
    expect(s.sum).toBe(201);
  });

  it('is exposed by prom-client as a summary with quantiles, _sum and _count per label set', async () => {
    const registry = new Registry();
    const summary = new WindowedSummary({
      name: 'x_ms', help: 'a test summary', labelNames: ['kind'], percentiles: [0.5, 0.99], maxAgeSeconds: 60, ageBuckets: 3, registers: [registry],
    });
    summary.labels('a').observe(4);
    summary.labels('a').observe(4);
    summary.labels('b').observe(10);
    const { samples, types } = parseExposition(await registry.metrics());
    expect(types.get('x_ms')).toBe('summary');
    expect(valueOf(samples, 'x_ms', { kind: 'a', quantile: '0.5' })).toBeCloseTo(4, 0);
    expect(valueOf(samples, 'x_ms_count', { kind: 'a' })).toBe(2);
    expect(valueOf(samples, 'x_ms_sum', { kind: 'a' })).toBe(8);
    expect(valueOf(samples, 'x_ms_count', { kind: 'b' })).toBe(1);
    const json = await registry.getMetricsAsJSON();
    expect(json[0]).toMatchObject({ name: 'x_ms', type: 'summary' });
  });
});
