/**
 * One line of progress on stderr, redrawn in place: how much is done, the rate and, when the
 * total is known, the percentage and the time left. It is drawn only on a terminal: piped or
 * redirected, stderr gets nothing, so a script's log holds only what the command printed.
 */

export type ProgressUnit = 'bytes' | 'keys';

export interface ProgressOptions {
  stream: NodeJS.WritableStream;
  /** Whether `stream` is a terminal; when not, nothing is ever written. */
  tty: boolean;
  unit: ProgressUnit;
  label: string;
  total?: number;
  /** Milliseconds between redraws: a busy stream would otherwise spend its time drawing. */
  intervalMs?: number;
  now?: () => number;
}

const CLEAR_LINE = '\r\x1b[K';

export function humanBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i] as string}`;
}

export function humanCount(n: number): string {
  if (n < 10_000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

export function humanDuration(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 60) return `${s}s`;
  const pad = (x: number) => String(x).padStart(2, '0');
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  return `${Math.floor(s / 3600)}h${pad(Math.floor((s % 3600) / 60))}m`;
}

export interface Progress {
  /** Records how much is done (and the total, once it is known); redraws if the last draw is old enough. */
  update(done: number, total?: number): void;
  /** Changes the words before the numbers (a reindex's stage); the next update draws at once. */
  relabel(label: string): void;
  /** Clears the line, leaving the cursor where the line began. */
  finish(): void;
}

const SILENT: Progress = { update: () => {}, relabel: () => {}, finish: () => {} };

export function progressLine(options: ProgressOptions): Progress {
  if (!options.tty) return SILENT;
  const now = options.now ?? Date.now;
  const interval = options.intervalMs ?? 200;
  const started = now();
  const { stream, unit } = options;
  let label = options.label;
  let total = options.total;
  let drawnAt: number | undefined;
  let drawn = false;
  const amount = unit === 'bytes' ? humanBytes : (n: number) => `${humanCount(n)} keys`;

  const render = (done: number): string => {
    const parts = [label, total !== undefined ? `${amount(done)} / ${amount(total)}` : amount(done)];
    if (total !== undefined && total > 0) parts.push(`${Math.min(100, Math.floor((done / total) * 100))}%`);
    const elapsed = (now() - started) / 1000;
    const rate = elapsed > 0 ? done / elapsed : 0;
    if (rate > 0) {
      parts.push(`${amount(rate)}/s`);
      if (total !== undefined && total >= done) parts.push(`ETA ${humanDuration((total - done) / rate)}`);
    }
    const line = parts.join('  ');
    // A line wider than the terminal wraps, and \r would then redraw only its last row.
    const columns = (stream as { columns?: number }).columns;
    return columns && columns > 1 && line.length >= columns ? line.slice(0, columns - 1) : line;
  };

  return {
    update(done, newTotal) {
      if (newTotal !== undefined) total = newTotal;
      const t = now();
      if (drawnAt !== undefined && t - drawnAt < interval) return;
      drawnAt = t;
      drawn = true;
      stream.write(`${CLEAR_LINE}${render(done)}`);
    },
    relabel(next) {
      if (next === label) return;
      label = next;
      drawnAt = undefined;
    },
    finish() {
      if (drawn) stream.write(CLEAR_LINE);
      drawn = false;
    },
  };
}
