import type { JSX } from 'preact';
import { api } from '../api/client';
import { apiPath, mountSegment } from '../api/mounts';
import { formatTime, LoadState, useLoad } from '../components/common';
import { Link } from '../router';

interface TransitKeyInfo {
  name?: string;
  type?: string;
  latest_version?: number;
  min_decryption_version?: number;
  min_encryption_version?: number;
  auto_rotate_period?: number | string;
  deletion_allowed?: boolean;
  exportable?: boolean;
  derived?: boolean;
  supports_encryption?: boolean;
  supports_decryption?: boolean;
  supports_signing?: boolean;
  keys?: Record<string, number | { creation_time?: string; public_key?: string }>;
}

const keyLink = (mount: string, name: string) => `/secrets/transit/${mountSegment(mount)}/${encodeURIComponent(name)}`;

export function TransitKeys({ mount }: { mount: string }): JSX.Element {
  const keys = useLoad(() => api.list(`${mount}keys`), [mount]);
  return (
    <section class="page">
      <nav class="crumbs" aria-label="Breadcrumbs"><Link to="/secrets">Secrets</Link><span class="crumbs-sep">/</span><span aria-current="page">{mount}</span></nav>
      <h1>Transit keys in {mount}</h1>
      <LoadState loaded={keys}>
        {(list) => list.length === 0 ? <p class="muted">No keys in this mount.</p> : (
          <ul class="secrets-list">
            {[...list].sort().map((name) => <li key={name}><Link to={keyLink(mount, name)}>{name}</Link></li>)}
          </ul>
        )}
      </LoadState>
    </section>
  );
}

function rotation(period: TransitKeyInfo['auto_rotate_period']): string {
  if (period === undefined || period === 0 || period === '0s' || period === '0') return 'never';
  return typeof period === 'number' ? `every ${period} s` : `every ${period}`;
}

function created(entry: NonNullable<TransitKeyInfo['keys']>[string]): string {
  if (typeof entry === 'number') return formatTime(new Date(entry * 1000).toISOString());
  return formatTime(entry.creation_time);
}

export function TransitKey({ mount, name }: { mount: string; name: string }): JSX.Element {
  const key = useLoad(() => api.read<TransitKeyInfo>(`${mount}keys/${apiPath(name)}`).then((r) => r?.data ?? {}), [mount, name]);
  return (
    <section class="page">
      <nav class="crumbs" aria-label="Breadcrumbs">
        <Link to="/secrets">Secrets</Link><span class="crumbs-sep">/</span>
        <Link to={`/secrets/transit/${mountSegment(mount)}`}>{mount}</Link><span class="crumbs-sep">/</span>
        <span aria-current="page">{name}</span>
      </nav>
      <h1 class="mono">{name}</h1>
      <LoadState loaded={key}>
        {(k) => (
          <div class="stack">
            <div class="card">
              <dl class="secrets-meta transit-key">
                <dt>Type</dt><dd>{k.type ?? '—'}</dd>
                <dt>Latest version</dt><dd>{k.latest_version ?? '—'}</dd>
                <dt>Minimum decryption version</dt><dd>{k.min_decryption_version ?? '—'}</dd>
                <dt>Minimum encryption version</dt><dd>{k.min_encryption_version || 'latest'}</dd>
                <dt>Automatic rotation</dt><dd>{rotation(k.auto_rotate_period)}</dd>
                <dt>Deletion allowed</dt><dd>{k.deletion_allowed ? 'yes' : 'no'}</dd>
                <dt>Exportable</dt><dd>{k.exportable ? 'yes' : 'no'}</dd>
                <dt>Derived</dt><dd>{k.derived ? 'yes' : 'no'}</dd>
                <dt>Supports</dt>
                <dd>{[k.supports_encryption && 'encryption', k.supports_decryption && 'decryption', k.supports_signing && 'signing'].filter(Boolean).join(', ') || '—'}</dd>
              </dl>
            </div>
            <div class="card">
              <h2>Versions</h2>
              <div class="table-wrap">
                <table class="transit-versions">
                  <thead><tr><th>Version</th><th>Created</th></tr></thead>
                  <tbody>
                    {Object.entries(k.keys ?? {}).sort((a, b) => Number(b[0]) - Number(a[0])).map(([v, entry]) => (
                      <tr key={v}><td>{v}</td><td>{created(entry)}</td></tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </div>
          </div>
        )}
      </LoadState>
    </section>
  );
}
