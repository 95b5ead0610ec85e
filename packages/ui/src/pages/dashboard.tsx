import type { JSX } from 'preact';
import type { PageProps, PageRoute } from '../page';

export function Dashboard(_props: PageProps): JSX.Element {
  return (
    <section class="page">
      <h1>Dashboard</h1>
      <p class="muted">Cluster, replication, snapshot and sync state will show here.</p>
    </section>
  );
}

export const dashboardRoutes: PageRoute[] = [
  {
    pattern: '/dashboard',
    title: 'Dashboard',
    component: Dashboard,
    nav: { label: 'Dashboard', to: '/dashboard', order: 10 },
    needs: [{ path: 'sys/storage/raft/configuration', any: ['read'] }],
  },
];
