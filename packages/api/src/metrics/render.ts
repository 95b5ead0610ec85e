import { BadRequestError } from '@strongroom/core';
import type { MetricObjectWithValues, MetricValue, Registry } from 'prom-client';
import { TextReply } from '../http/text-reply';

type Labels = Record<string, string | number | undefined>;

/** Vault's JSON shape for a summary or histogram: what a count and a sum tell. */
function sample(name: string, labels: Labels, count: number, sum: number) {
  return { Name: name, Count: count, Sum: sum, Mean: count > 0 ? sum / count : 0, Labels: labels };
}

/**
 * The registry as Vault's JSON (`sys/metrics` without `format`): `Gauges`, `Counters` and
 * `Samples`, each entry with its labels. Names stay as Prometheus shows them, so both formats
 * name a family the same way. Quantiles and buckets are Prometheus detail and are left out.
 */
export function vaultJson(families: MetricObjectWithValues<MetricValue<string>>[], now: Date) {
  const gauges: unknown[] = [];
  const counters: unknown[] = [];
  const samples: unknown[] = [];
  for (const family of families) {
    const type = String(family.type);
    if (type === 'gauge') {
      for (const v of family.values) gauges.push({ Name: family.name, Value: v.value, Labels: v.labels });
    } else if (type === 'counter') {
      for (const v of family.values) counters.push({ Name: family.name, Count: v.value, Sum: v.value, Labels: v.labels });
    } else if (type === 'summary' || type === 'histogram') {
      // Each label set has a `_count` and a `_sum` value beside its quantiles or buckets.
      const groups = new Map<string, { labels: Labels; count: number; sum: number }>();
      for (const v of family.values) {
        const metric = (v as { metricName?: string }).metricName ?? family.name;
        const isCount = metric.endsWith('_count');
        if (!isCount && !metric.endsWith('_sum')) continue;
        const labels: Labels = { ...v.labels };
        const key = JSON.stringify(labels);
        const g = groups.get(key) ?? { labels, count: 0, sum: 0 };
        if (isCount) g.count = v.value;
        else g.sum = v.value;
        groups.set(key, g);
      }
      for (const g of groups.values()) samples.push(sample(family.name, g.labels, g.count, g.sum));
    }
  }
  return { Timestamp: now.toISOString(), Gauges: gauges, Counters: counters, Samples: samples };
}

/** `sys/metrics`: `format=prometheus` is the text exposition; no format is Vault's JSON. */
export async function renderMetrics(registry: Registry, format: string): Promise<{ status: number; body: unknown }> {
  if (format === 'prometheus') return { status: 200, body: new TextReply(registry.contentType, await registry.metrics()) };
  if (format === '') return { status: 200, body: vaultJson(await registry.getMetricsAsJSON(), new Date()) };
  throw new BadRequestError('invalid value for "format": must be "prometheus", or left out for JSON');
}
