/**
 * What the scheduler keeps per configuration, in storage beside it: the schedule itself
 * (`next`), the attempt in progress, and the outcome of the last one. Times are Unix ms; 0 is
 * "never".
 */
export interface SnapshotStatus {
  next: number;
  /** Set while an attempt runs; an attempt found set by a new active node was interrupted. */
  current: { start: number; name: string; url: string } | null;
  lastStart: number;
  lastEnd: number;
  lastError: string;
  lastUrl: string;
  lastSize: number;
  consecutiveErrors: number;
}

export function freshStatus(next: number): SnapshotStatus {
  return { next, current: null, lastStart: 0, lastEnd: 0, lastError: '', lastUrl: '', lastSize: 0, consecutiveErrors: 0 };
}

/** Go's zero time, which Vault prints for a time that has not happened. */
const ZERO_TIME = '0001-01-01T00:00:00Z';

function time(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString() : ZERO_TIME;
}

/** The `status/:name` reply. */
export function statusView(s: SnapshotStatus): Record<string, unknown> {
  return {
    consecutive_errors: s.consecutiveErrors,
    last_snapshot_start: time(s.lastStart),
    last_snapshot_end: time(s.lastEnd),
    last_snapshot_error: s.lastError,
    last_snapshot_url: s.lastUrl,
    last_snapshot_size: s.lastSize,
    next_snapshot_start: time(s.next),
    snapshot_start: time(s.current?.start ?? 0),
    snapshot_url: s.current?.url ?? '',
  };
}
