import type { JSX } from 'preact';
import { isKv2, isTransit, mountSegment, secretMounts } from '../api/mounts';
import { LoadState, useLoad } from '../components/common';
import type { PageRoute } from '../page';
import { Link } from '../router';
import { KvFolder, KvSecret } from './secrets-kv';
import { TransitKey, TransitKeys } from './secrets-transit';
import './secrets.css';

/** The secret mounts this UI can browse: KV version 2 and transit. */
export function SecretMounts(): JSX.Element {
  const mounts = useLoad(secretMounts, []);
  return (
    <section class="page">
      <h1>Secrets</h1>
      <LoadState loaded={mounts}>
        {(all) => {
          const shown = all.filter((m) => isKv2(m) || isTransit(m));
          if (shown.length === 0) return <p class="muted">This token sees no KV version 2 or transit mount.</p>;
          return (
            <div class="table-wrap">
              <table class="secrets-mounts">
                <thead><tr><th>Mount</th><th>Type</th><th>Description</th></tr></thead>
                <tbody>
                  {shown.map((m) => (
                    <tr key={m.path}>
                      <td><Link to={isTransit(m) ? `/secrets/transit/${mountSegment(m.path)}` : `/secrets/kv/${mountSegment(m.path)}/list/`}>{m.path}</Link></td>
                      <td>{isTransit(m) ? 'transit' : 'kv v2'}</td>
                      <td class="muted">{m.description}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          );
        }}
      </LoadState>
    </section>
  );
}

const mountOf = (params: Record<string, string>) => `${params['mount'] ?? ''}/`;

export const secretsRoutes: PageRoute[] = [
  { pattern: '/secrets', title: 'Secrets', component: SecretMounts, nav: { label: 'Secrets', to: '/secrets', order: 20 } },
  { pattern: '/secrets/kv/:mount/list', title: 'Secrets', component: ({ params }) => <KvFolder mount={mountOf(params)} folder="" /> },
  { pattern: '/secrets/kv/:mount/list/*', title: 'Secrets', component: ({ params }) => <KvFolder mount={mountOf(params)} folder={params['*'] ?? ''} /> },
  { pattern: '/secrets/kv/:mount/show/*', title: 'Secret', component: ({ params }) => <KvSecret mount={mountOf(params)} path={params['*'] ?? ''} /> },
  { pattern: '/secrets/transit/:mount', title: 'Transit keys', component: ({ params }) => <TransitKeys mount={mountOf(params)} /> },
  { pattern: '/secrets/transit/:mount/:key', title: 'Transit key', component: ({ params }) => <TransitKey mount={mountOf(params)} name={params['key'] ?? ''} /> },
];
