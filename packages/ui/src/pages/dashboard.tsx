import type { JSX } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { fetchCapabilities, type CapabilityMap } from '../api/capabilities';
import { errorText } from '../api/client';
import { HaCard, SealCard } from '../dashboard/seal-card';
import { CARD_PATHS, loadDashboard, secondaryLags, type DashboardData, type ReplicationStatus, type Section } from '../dashboard/load';
import { PeersCard } from '../dashboard/peers-card';
import { ReplicationCard } from '../dashboard/replication-card';
import { addSamples, type SeriesMap } from '../dashboard/samples';
import { SnapshotsCard } from '../dashboard/snapshots-card';
import { SyncCard } from '../dashboard/sync-card';
import { useRefresh } from '../dashboard/use-refresh';
import type { PageProps, PageRoute } from '../page';
import './dashboard.css';

const REFRESH_MS = 5_000;
/** How far back the lag charts reach; samples older than this are dropped from memory. */
const WINDOW_MS = 5 * 60_000;

interface LagHistory {
  dr: SeriesMap;
  performance: SeriesMap;
}

const statusOf = (s: Section<ReplicationStatus>): ReplicationStatus | undefined => (s.ok ? s.data : undefined);

function clock(at: number): string {
  return new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/**
 * The cluster at a glance: seal and HA, Raft peers, replication with its lag, automated
 * snapshots and secret sync. Refreshes every few seconds while open; cards the token may not
 * read are left out rather than shown as errors.
 */
export function Dashboard(_props: PageProps): JSX.Element {
  const [caps, setCaps] = useState<CapabilityMap | null>(null);
  const [capsError, setCapsError] = useState<string | null>(null);
  const [history, setHistory] = useState<LagHistory>({ dr: new Map(), performance: new Map() });

  useEffect(() => {
    let live = true;
    fetchCapabilities(CARD_PATHS).then(
      (found) => { if (live) setCaps(found); },
      (err: unknown) => {
        // The open cards (seal, HA, replication) still work without knowing the rest.
        if (live) { setCapsError(errorText(err)); setCaps({}); }
      },
    );
    return () => { live = false; };
  }, []);

  const load = useCallback(async (): Promise<DashboardData> => {
    const d = await loadDashboard(caps ?? {});
    setHistory((h) => ({
      dr: addSamples(h.dr, secondaryLags(statusOf(d.dr)), d.at, WINDOW_MS),
      performance: addSamples(h.performance, secondaryLags(statusOf(d.performance)), d.at, WINDOW_MS),
    }));
    return d;
  }, [caps]);

  const { value: d, busy, refreshNow } = useRefresh(load, REFRESH_MS, caps !== null);
  const now = d?.at ?? Date.now();

  return (
    <section class="page dashboard">
      <div class="dashboard-head">
        <h1>Dashboard</h1>
        <div class="row dashboard-refresh">
          <span class="muted" role="status" data-updated={d?.at}>
            {d ? `Updated ${clock(d.at)} · every ${REFRESH_MS / 1000} s` : 'Loading…'}
          </span>
          <button type="button" class="btn" onClick={refreshNow} disabled={busy}>Refresh</button>
        </div>
      </div>
      {capsError && <p class="error" role="alert">Could not check this token's capabilities: {capsError}</p>}
      <div class="dashboard-grid">
        <SealCard section={d?.seal} />
        <HaCard section={d?.leader} now={now} />
        {(d === null || d.autopilot) && <PeersCard section={d?.autopilot} />}
        <ReplicationCard kind="dr" section={d?.dr} history={history.dr} windowMs={WINDOW_MS} now={now} />
        <ReplicationCard kind="performance" section={d?.performance} history={history.performance} windowMs={WINDOW_MS} now={now} />
        {d?.snapshots && <SnapshotsCard section={d.snapshots} now={now} />}
        {d?.sync && <SyncCard section={d.sync} />}
      </div>
    </section>
  );
}

export const dashboardRoutes: PageRoute[] = [
  {
    pattern: '/dashboard',
    title: 'Dashboard',
    component: Dashboard,
    nav: { label: 'Dashboard', to: '/dashboard', order: 10 },
    needs: [{ path: 'sys/storage/raft/autopilot/state', any: ['read'] }],
  },
];
