import type { JSX } from 'preact';
import { Badge, Facts, SectionCard } from './card';
import { parseTime, relative, short } from './format';
import type { LeaderStatus, Section, SealStatus } from './load';

export function SealCard({ section }: { section: Section<SealStatus> | undefined }): JSX.Element {
  return (
    <SectionCard title="Seal" name="seal" section={section}>
      {(s) => (
        <Facts items={[
          ['State', s.sealed ? <Badge tone="danger">sealed</Badge> : <Badge tone="ok">unsealed</Badge>],
          ['Seal type', s.type],
          ['Key shares', `${s.t} of ${s.n}${s.sealed ? ` (${s.progress} given)` : ''}`],
          ['Storage', s.storage_type ?? '—'],
          ['Version', s.version],
          ['Cluster', s.cluster_name ?? '—', s.cluster_id],
          ['Cluster ID', <span class="mono">{short(s.cluster_id ?? '—')}</span>, s.cluster_id],
        ]} />
      )}
    </SectionCard>
  );
}

export function HaCard({ section, now }: { section: Section<LeaderStatus> | undefined; now: number }): JSX.Element {
  return (
    <SectionCard title="High availability" name="ha" section={section}>
      {(l) => {
        const since = parseTime(l.active_time);
        return l.ha_enabled ? (
          <Facts items={[
            ['This node', l.is_self ? <Badge tone="ok">active</Badge> : <Badge tone="info">{l.performance_standby ? 'performance standby' : 'standby'}</Badge>],
            ['Active node', <span class="mono">{l.leader_address || 'none elected'}</span>],
            ['Cluster address', <span class="mono">{l.leader_cluster_address || '—'}</span>],
            ['Active since', relative(since, now), l.active_time],
          ]} />
        ) : <p class="muted">HA is not enabled on this storage.</p>;
      }}
    </SectionCard>
  );
}
