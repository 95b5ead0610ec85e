import type { JSX } from 'preact';
import { Badge, Facts, SectionCard } from './card';
import { parseTime, relative, short } from './format';
import { LagChart } from './lag-chart';
import { secondaryLags, type ReplicationPeer, type ReplicationStatus, type Section } from './load';
import type { SeriesMap } from './samples';

function connection(status: string | undefined): JSX.Element {
  if (status === 'connected' || status === 'ready') return <Badge tone="ok">{status}</Badge>;
  if (status === 'connecting') return <Badge tone="warn">{status}</Badge>;
  return <Badge tone="danger">{status || 'unknown'}</Badge>;
}

function stateBadge(state: string | undefined): JSX.Element {
  if (state === 'running' || state === 'stream-wals') return <Badge tone="ok">{state}</Badge>;
  if (state === 'merkle-diff' || state === 'merkle-sync') return <Badge tone="warn">{state}</Badge>;
  return <Badge tone="danger">{state || 'unknown'}</Badge>;
}

function heartbeat(peer: ReplicationPeer, now: number): JSX.Element {
  const at = parseTime(peer.last_heartbeat);
  return <span title={peer.last_heartbeat || undefined}>{relative(at, now)}</span>;
}

function PrimaryView({ s, lags, history, windowMs, now }: {
  s: ReplicationStatus; lags: Map<string, number>; history: SeriesMap; windowMs: number; now: number;
}): JSX.Element {
  const secondaries = [...(s.secondaries ?? [])].sort((a, b) => (a.node_id ?? '').localeCompare(b.node_id ?? ''));
  const known = s.known_secondaries ?? [];
  return (
    <>
      <Facts items={[
        ['Mode', <Badge tone="info">primary</Badge>],
        ['State', stateBadge(s.state)],
        ['Last WAL', <span class="mono" data-field="last_wal">{s.last_wal ?? '—'}</span>],
        ['Cluster ID', <span class="mono">{short(s.cluster_id ?? '—')}</span>, s.cluster_id],
        ['Merkle root', <span class="mono">{short(s.merkle_root || '—', 12)}</span>, s.merkle_root],
      ]} />
      {secondaries.length === 0 ? (
        <p class="muted">{known.length === 0 ? 'No secondary has been issued a token.' : `Tokens issued to ${known.join(', ')}; none has connected yet.`}</p>
      ) : (
        <>
          <div class="table-wrap">
            <table class="dashboard-secondaries">
              <thead>
                <tr><th>Secondary</th><th>Connection</th><th>Lag</th><th>Last remote WAL</th><th>Last heartbeat</th></tr>
              </thead>
              <tbody>
                {secondaries.map((p) => {
                  const lag = p.node_id === undefined ? undefined : lags.get(p.node_id);
                  return (
                    <tr key={p.node_id} data-secondary={p.node_id}>
                      <td>{p.node_id}<div class="muted mono dashboard-sub">{p.api_address}</div></td>
                      <td>{connection(p.connection_status)}</td>
                      <td class="mono dashboard-nowrap" data-field="lag">{lag === undefined ? '—' : `${lag} WAL`}</td>
                      <td class="mono" data-field="last_remote_wal">{p.last_remote_wal ?? '—'}</td>
                      <td class="dashboard-nowrap">{heartbeat(p, now)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          <h3 class="dashboard-chart-title">Lag behind last WAL, last {Math.round(windowMs / 60_000)} minutes</h3>
          <LagChart series={history} windowMs={windowMs} now={now} unit="WAL entries" />
        </>
      )}
    </>
  );
}

function SecondaryView({ s, now }: { s: ReplicationStatus; now: number }): JSX.Element {
  const primaries = s.primaries ?? [];
  return (
    <>
      <Facts items={[
        ['Mode', <Badge tone="info">secondary</Badge>],
        ['State', stateBadge(s.state)],
        ['Connection', connection(s.connection_state)],
        ['Secondary ID', s.secondary_id ?? '—'],
        ['Last remote WAL', <span class="mono" data-field="last_remote_wal">{s.last_remote_wal ?? '—'}</span>],
        ['Primary', <span class="mono">{s.primary_cluster_addr || '—'}</span>],
      ]} />
      {primaries.length > 0 && (
        <div class="table-wrap">
          <table class="dashboard-primaries">
            <thead><tr><th>Primary node</th><th>Connection</th><th>Last heartbeat</th></tr></thead>
            <tbody>
              {primaries.map((p) => (
                <tr key={p.cluster_address}>
                  <td class="mono">{p.cluster_address}</td>
                  <td>{connection(p.connection_status)}</td>
                  <td>{heartbeat(p, now)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p class="muted">The lag behind the primary's last WAL shows on the primary's dashboard.</p>
    </>
  );
}

/** DR or performance replication of this cluster, as its status endpoint reports it. */
export function ReplicationCard({ kind, section, history, windowMs, now }: {
  kind: 'dr' | 'performance';
  section: Section<ReplicationStatus> | undefined;
  history: SeriesMap;
  windowMs: number;
  now: number;
}): JSX.Element {
  const title = kind === 'dr' ? 'DR replication' : 'Performance replication';
  return (
    // Disabled, it is one line: two such cards share a row instead of taking two.
    <SectionCard title={title} name={`replication-${kind}`} section={section} wide={!section?.ok || section.data.mode !== 'disabled'}>
      {(s) => {
        if (s.mode === 'primary') return <PrimaryView s={s} lags={secondaryLags(s)} history={history} windowMs={windowMs} now={now} />;
        if (s.mode === 'secondary') return <SecondaryView s={s} now={now} />;
        return <p class="muted">Not enabled on this cluster.</p>;
      }}
    </SectionCard>
  );
}
