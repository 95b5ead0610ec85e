import type { JSX } from 'preact';
import { Badge, SectionCard } from './card';
import { bytes, parseTime, relative } from './format';
import type { Section, SnapshotRow } from './load';

function Row({ row, now }: { row: SnapshotRow; now: number }): JSX.Element {
  if (!row.status.ok) {
    return (
      <tr data-snapshot={row.name}>
        <td>{row.name}</td>
        <td colSpan={4}><span class="error dashboard-inline-error">{row.status.error}</span></td>
      </tr>
    );
  }
  const s = row.status.data;
  const last = parseTime(s.last_snapshot_end) ?? parseTime(s.last_snapshot_start);
  // The reason goes on a row of its own: squeezed into a column it would stand one word a line.
  return (
    <>
    <tr data-snapshot={row.name} class={s.last_snapshot_error ? 'dashboard-has-error' : undefined}>
      <td>{row.name}</td>
      <td class="dashboard-nowrap" title={s.last_snapshot_url || undefined}>{relative(last, now)}</td>
      <td class="dashboard-nowrap" title={s.next_snapshot_start}>{relative(parseTime(s.next_snapshot_start), now)}</td>
      <td class="mono dashboard-nowrap">{s.last_snapshot_size > 0 ? bytes(s.last_snapshot_size) : '—'}</td>
      <td>
        {s.last_snapshot_error
          ? <Badge tone="danger">{s.consecutive_errors} failed</Badge>
          : last === null ? <span class="muted">none yet</span> : <Badge tone="ok">ok</Badge>}
      </td>
    </tr>
    {s.last_snapshot_error && (
      <tr data-snapshot-error={row.name}>
        <td colSpan={5} class="dashboard-snapshot-error">{s.last_snapshot_error}</td>
      </tr>
    )}
    </>
  );
}

/** Each automated snapshot configuration: when it last ran and runs next, how big, what went wrong. */
export function SnapshotsCard({ section, now }: { section: Section<SnapshotRow[]> | undefined; now: number }): JSX.Element {
  return (
    <SectionCard title="Automated snapshots" name="snapshots" section={section} wide>
      {(rows) => rows.length === 0 ? <p class="muted">No automated snapshot configuration.</p> : (
        <div class="table-wrap">
          <table class="dashboard-snapshots">
            <thead><tr><th>Configuration</th><th>Last snapshot</th><th>Next</th><th>Size</th><th>Errors</th></tr></thead>
            <tbody>{rows.map((r) => <Row key={r.name} row={r} now={now} />)}</tbody>
          </table>
        </div>
      )}
    </SectionCard>
  );
}
