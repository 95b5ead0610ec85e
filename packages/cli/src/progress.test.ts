import { humanBytes, humanCount, humanDuration, progressLine } from './progress';

function sink(columns?: number): { stream: NodeJS.WritableStream; text: () => string } {
  let text = '';
  const stream = { write: (chunk: string) => { text += chunk; return true; }, ...(columns ? { columns } : {}) } as unknown as NodeJS.WritableStream;
  return { stream, text: () => text };
}

/** The line as a terminal shows it: whatever follows the last carriage return and clear. */
const shown = (text: string) => text.split('\r\x1b[K').pop() ?? '';

describe('the progress line', () => {
  it('shows bytes done of the total, the percentage, the rate and the time left, redrawn in place', () => {
    const err = sink();
    let t = 1_000;
    const p = progressLine({ stream: err.stream, tty: true, unit: 'bytes', label: 'Restoring snapshot', total: 10 * 1024 * 1024, now: () => t });
    t += 1_000;
    p.update(2 * 1024 * 1024);
    expect(shown(err.text())).toBe('Restoring snapshot  2.0 MiB / 10.0 MiB  20%  2.0 MiB/s  ETA 4s');
    t += 1_000;
    p.update(4 * 1024 * 1024);
    expect(shown(err.text())).toBe('Restoring snapshot  4.0 MiB / 10.0 MiB  40%  2.0 MiB/s  ETA 3s');
    // One line redrawn: every draw starts by going back to the line's start and clearing it.
    expect(err.text().split('\r\x1b[K')).toHaveLength(3);
    expect(err.text()).not.toContain('\n');
    p.finish();
    expect(err.text().endsWith('\r\x1b[K')).toBe(true);
    expect(shown(err.text())).toBe('');
  });

  it('shows no ETA and no percentage when the total is unknown, and takes a total learned later', () => {
    const err = sink();
    let t = 0;
    const p = progressLine({ stream: err.stream, tty: true, unit: 'bytes', label: 'Saving snapshot', now: () => t });
    t += 2_000;
    p.update(3 * 1024);
    expect(shown(err.text())).toBe('Saving snapshot  3.0 KiB  1.5 KiB/s');
    t += 2_000;
    p.update(8 * 1024, 16 * 1024);
    expect(shown(err.text())).toBe('Saving snapshot  8.0 KiB / 16.0 KiB  50%  2.0 KiB/s  ETA 4s');
  });

  it('throttles redraws, and draws at once after a new label', () => {
    const err = sink();
    let t = 0;
    const p = progressLine({ stream: err.stream, tty: true, unit: 'keys', label: 'Reindex: scanning storage', total: 1000, intervalMs: 200, now: () => t });
    for (let i = 1; i <= 50; i++) {
      t += 10;
      p.update(i * 10);
    }
    // 500 ms of updates every 10 ms: a draw at the first and then one per 200 ms.
    expect(err.text().split('\r\x1b[K').length - 1).toBe(3);
    p.relabel('Reindex: building the tree');
    t += 1;
    p.update(1000);
    expect(shown(err.text())).toMatch(/^Reindex: building the tree {2}1000 keys \/ 1000 keys {2}100% {2}\d+ keys\/s {2}ETA 0s$/);
  });

  it('writes nothing at all when the stream is not a terminal', () => {
    const err = sink();
    const p = progressLine({ stream: err.stream, tty: false, unit: 'bytes', label: 'Saving snapshot', total: 100 });
    p.update(50);
    p.relabel('other');
    p.update(100);
    p.finish();
    expect(err.text()).toBe('');
  });

  it('cuts the line to the terminal\'s width, so that it never wraps', () => {
    const err = sink(20);
    let t = 0;
    const p = progressLine({ stream: err.stream, tty: true, unit: 'bytes', label: 'Restoring snapshot', total: 1 << 30, now: () => t });
    t += 1_000;
    p.update(1 << 20);
    expect(shown(err.text())).toHaveLength(19);
  });

  it('prints sizes, counts and durations in human units', () => {
    expect(humanBytes(512)).toBe('512 B');
    expect(humanBytes(1536)).toBe('1.5 KiB');
    expect(humanBytes(5 * 1024 ** 3)).toBe('5.0 GiB');
    expect(humanCount(9999)).toBe('9999');
    expect(humanCount(12_345)).toBe('12.3k');
    expect(humanCount(2_500_000)).toBe('2.5M');
    expect(humanDuration(0.2)).toBe('1s');
    expect(humanDuration(65)).toBe('1m05s');
    expect(humanDuration(3 * 3600 + 7 * 60)).toBe('3h07m');
  });
});
