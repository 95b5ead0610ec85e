import type { JSX } from 'preact';
import type { SeriesMap } from './samples';

const WIDTH = 320;
const HEIGHT = 120;
const PAD = { left: 34, right: 8, top: 8, bottom: 18 };
/** Series beyond this many share the last colour; a set rarely has more secondaries. */
const COLOURS = 4;

/** A round top for the y axis (1, 2, 5, 10, 20, ...), so its label reads at a glance. */
export function niceMax(value: number): number {
  if (value <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

/**
 * Lag samples of each series over the last `windowMs`, drawn with SVG attributes only (the
 * CSP allows no inline style); colours come from the page's stylesheet by class. The picture is
 * for the eye; the numbers are in the table beside it and in the label for screen readers.
 */
export function LagChart({ series, windowMs, now, unit }: {
  series: SeriesMap;
  windowMs: number;
  now: number;
  unit: string;
}): JSX.Element {
  const entries = [...series.entries()].filter(([, samples]) => samples.length > 0);
  const peak = Math.max(0, ...entries.flatMap(([, samples]) => samples.map((s) => s.value)));
  const top = niceMax(peak);
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const x = (at: number) => PAD.left + plotW * Math.min(1, Math.max(0, 1 - (now - at) / windowMs));
  const y = (v: number) => PAD.top + plotH * (1 - Math.min(v, top) / top);
  const minutes = Math.round(windowMs / 60_000);
  const label = entries.length === 0
    ? `No lag samples yet for the last ${minutes} minutes`
    : entries.map(([name, samples]) => {
      const last = samples[samples.length - 1]?.value ?? 0;
      const max = Math.max(...samples.map((s) => s.value));
      return `${name}: ${last} ${unit} now, at most ${max} over the last ${minutes} minutes`;
    }).join('; ');

  return (
    <figure class="dashboard-chart">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={label} class="dashboard-chart-svg">
        <title>{label}</title>
        <line class="dashboard-chart-axis" x1={PAD.left} y1={PAD.top} x2={PAD.left} y2={PAD.top + plotH} />
        <line class="dashboard-chart-axis" x1={PAD.left} y1={PAD.top + plotH} x2={PAD.left + plotW} y2={PAD.top + plotH} />
        <line class="dashboard-chart-grid" x1={PAD.left} y1={PAD.top} x2={PAD.left + plotW} y2={PAD.top} />
        <text class="dashboard-chart-label" x={PAD.left - 4} y={PAD.top + 4} text-anchor="end">{top}</text>
        <text class="dashboard-chart-label" x={PAD.left - 4} y={PAD.top + plotH} text-anchor="end">0</text>
        <text class="dashboard-chart-label" x={PAD.left} y={HEIGHT - 4}>−{minutes} min</text>
        <text class="dashboard-chart-label" x={PAD.left + plotW} y={HEIGHT - 4} text-anchor="end">now</text>
        {entries.map(([name, samples], i) => (
          <g key={name} class={`dashboard-chart-series dashboard-chart-series-${Math.min(i, COLOURS - 1)}`} data-series={name}>
            {samples.length > 1 && (
              <polyline fill="none" points={samples.map((s) => `${x(s.at).toFixed(1)},${y(s.value).toFixed(1)}`).join(' ')} />
            )}
            {samples.slice(-1).map((s) => <circle key="last" cx={x(s.at)} cy={y(s.value)} r="2.5" />)}
          </g>
        ))}
      </svg>
      {entries.length > 1 && (
        <figcaption class="dashboard-chart-legend">
          {entries.map(([name], i) => (
            <span key={name} class={`dashboard-chart-key dashboard-chart-series-${Math.min(i, COLOURS - 1)}`}>{name}</span>
          ))}
        </figcaption>
      )}
    </figure>
  );
}
