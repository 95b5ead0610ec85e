import type { JSX } from 'preact';
import { Badge, SectionCard } from './card';
import type { Section, SyncDestination } from './load';

function tone(status: string): 'ok' | 'warn' | 'danger' | 'info' {
  if (status === 'SYNCED') return 'ok';
  if (status.includes('ERROR') || status.includes('FAIL')) return 'danger';
  if (status === 'PENDING' || status.endsWith('ING')) return 'warn';
  return 'info';
}

function Counts({ counts }: { counts: Record<string, number> }): JSX.Element {
  const entries = Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return <span class="muted">none</span>;
  return <span class="row">{entries.map(([status, n]) => <Badge key={status} tone={tone(status)}>{status} {n}</Badge>)}</span>;
}

/** Secret sync destinations with their associations counted by latest sync status. */
export function SyncCard({ section }: { section: Section<SyncDestination[]> | undefined }): JSX.Element {
  return (
    <SectionCard title="Sync destinations" name="sync" section={section} wide>
      {(destinations) => {
        if (destinations.length === 0) return <p class="muted">No sync destination.</p>;
        const totals: Record<string, number> = {};
        for (const d of destinations) {
          if (!d.associations.ok) continue;
          for (const [status, n] of Object.entries(d.associations.data)) totals[status] = (totals[status] ?? 0) + n;
        }
        return (
          <>
            <p class="row dashboard-summary"><span>{destinations.length} {destinations.length === 1 ? 'destination' : 'destinations'}</span><Counts counts={totals} /></p>
            <div class="table-wrap">
              <table class="dashboard-sync">
                <thead><tr><th>Type</th><th>Name</th><th>Associations</th><th>By status</th></tr></thead>
                <tbody>
                  {destinations.map((d) => (
                    <tr key={`${d.type}/${d.name}`} data-destination={`${d.type}/${d.name}`}>
                      <td>{d.type}</td>
                      <td>{d.name}</td>
                      <td class="mono">{d.associations.ok ? Object.values(d.associations.data).reduce((a, b) => a + b, 0) : '—'}</td>
                      <td>{d.associations.ok ? <Counts counts={d.associations.data} /> : <span class="error dashboard-inline-error">{d.associations.error}</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        );
      }}
    </SectionCard>
  );
}
