import type { JSX } from 'preact';
import { Badge, SectionCard } from './card';
import type { AutopilotState, Section } from './load';

function role(status: string): JSX.Element {
  if (status === 'leader') return <Badge tone="ok">leader</Badge>;
  if (status === 'voter') return <Badge tone="info">voter</Badge>;
  return <Badge tone="warn">{status || 'unknown'}</Badge>;
}

/** Autopilot's view of the Raft peers: who leads, who votes, when each was last heard from. */
export function PeersCard({ section }: { section: Section<AutopilotState> | undefined }): JSX.Element {
  return (
    <SectionCard title="Raft peers" name="peers" section={section} wide>
      {(a) => {
        const servers = Object.values(a.servers ?? {}).sort((x, y) => x.name.localeCompare(y.name) || x.id.localeCompare(y.id));
        return (
          <>
            <p class="row dashboard-summary">
              {a.healthy ? <Badge tone="ok">healthy</Badge> : <Badge tone="danger">unhealthy</Badge>}
              <span>{servers.length} {servers.length === 1 ? 'peer' : 'peers'}, {a.voters?.length ?? 0} voting</span>
              <span class="muted">failure tolerance {a.failure_tolerance}</span>
            </p>
            <div class="table-wrap">
              <table class="dashboard-peers">
                <thead>
                  <tr><th>Node</th><th>Address</th><th>Role</th><th>Voter</th><th>Last contact</th><th>Index</th><th>Health</th></tr>
                </thead>
                <tbody>
                  {servers.map((s) => (
                    <tr key={s.id} data-peer={s.id}>
                      <td>{s.name || s.id}</td>
                      <td class="mono">{s.address}</td>
                      <td>{role(s.status)}</td>
                      <td>{(s.node_type ? s.node_type === 'voter' : a.voters.includes(s.id)) ? 'yes' : 'no'}</td>
                      <td class="mono">{s.status === 'leader' ? '—' : s.last_contact}</td>
                      <td class="mono">{s.last_index}</td>
                      <td>{s.healthy ? <Badge tone="ok">healthy</Badge> : <Badge tone="danger">{s.node_status === 'alive' ? 'unhealthy' : s.node_status}</Badge>}</td>
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
