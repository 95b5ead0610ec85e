import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, errorText } from '../api/client';
import { apiPath, mountSegment } from '../api/mounts';
import { ConfirmButton, ErrorMessage, formatTime, LoadState, useLoad } from '../components/common';
import { SecretEditor } from '../components/secret-editor';
import { Link, navigate } from '../router';

interface VersionMeta {
  created_time?: string;
  deletion_time?: string;
  destroyed?: boolean;
}

interface SecretMetadata {
  current_version?: number;
  oldest_version?: number;
  max_versions?: number;
  cas_required?: boolean;
  delete_version_after?: string;
  created_time?: string;
  updated_time?: string;
  custom_metadata?: Record<string, string> | null;
  versions?: Record<string, VersionMeta>;
}

const folderLink = (mount: string, folder: string) => `/secrets/kv/${mountSegment(mount)}/list/${apiPath(folder)}`;
const secretLink = (mount: string, path: string) => `/secrets/kv/${mountSegment(mount)}/show/${apiPath(path)}`;

function Breadcrumbs({ mount, path, leaf }: { mount: string; path: string; leaf: boolean }): JSX.Element {
  const parts = path.split('/').filter(Boolean);
  return (
    <nav class="crumbs" aria-label="Breadcrumbs">
      <Link to="/secrets">Secrets</Link>
      <span class="crumbs-sep">/</span>
      <Link to={folderLink(mount, '')}>{mount.replace(/\/$/, '')}</Link>
      {parts.map((part, i) => {
        const last = i === parts.length - 1;
        const to = leaf && last ? secretLink(mount, parts.join('/')) : folderLink(mount, parts.slice(0, i + 1).join('/'));
        return <span key={to}><span class="crumbs-sep">/</span>{last ? <span aria-current="page">{part}</span> : <Link to={to}>{part}</Link>}</span>;
      })}
    </nav>
  );
}

/** A folder of a KV v2 mount: its keys by LIST, folders first. */
export function KvFolder({ mount, folder }: { mount: string; folder: string }): JSX.Element {
  const prefix = folder === '' ? '' : `${folder.replace(/\/+$/, '')}/`;
  const keys = useLoad(() => api.list(`${mount}metadata/${apiPath(prefix)}`), [mount, prefix]);
  const [creating, setCreating] = useState(false);
  const [name, setName] = useState('');
  const [error, setError] = useState<string | null>(null);

  const create = async (data: Record<string, unknown>) => {
    const path = `${prefix}${name.trim().replace(/^\/+/, '')}`;
    if (name.trim() === '' || path.endsWith('/')) {
      setError('The secret needs a name that does not end with "/".');
      return;
    }
    setError(null);
    try {
      await api.write(`${mount}data/${apiPath(path)}`, { data });
      navigate(secretLink(mount, path));
    } catch (err) {
      setError(errorText(err));
    }
  };

  return (
    <section class="page">
      <Breadcrumbs mount={mount} path={prefix} leaf={false} />
      <div class="row secrets-head">
        <h1>{prefix === '' ? mount : prefix}</h1>
        <button type="button" class="btn btn-primary" onClick={() => setCreating(!creating)}>{creating ? 'Cancel' : 'New secret'}</button>
      </div>
      {creating && (
        <div class="card stack">
          <label class="field">
            <span>Path under {mount}{prefix}</span>
            <input name="secret-path" value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="app/config" />
          </label>
          <SecretEditor initial={{}} submitLabel="Save secret" onSubmit={create} />
          <ErrorMessage error={error} />
        </div>
      )}
      <LoadState loaded={keys}>
        {(list) => list.length === 0 ? <p class="muted">No secrets here yet.</p> : (
          <ul class="secrets-list">
            {[...list].sort((a, b) => Number(b.endsWith('/')) - Number(a.endsWith('/')) || a.localeCompare(b)).map((key) => (
              <li key={key}>
                {key.endsWith('/')
                  ? <Link to={folderLink(mount, `${prefix}${key.slice(0, -1)}`)} class="secrets-folder">{key}</Link>
                  : <Link to={secretLink(mount, `${prefix}${key}`)} class="secrets-secret">{key}</Link>}
              </li>
            ))}
          </ul>
        )}
      </LoadState>
    </section>
  );
}

function display(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function SecretValues({ data }: { data: Record<string, unknown> }): JSX.Element {
  const [revealed, setRevealed] = useState<ReadonlySet<string>>(new Set());
  const [copied, setCopied] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const toggle = (key: string) => {
    const next = new Set(revealed);
    if (next.has(key)) next.delete(key);
    else next.add(key);
    setRevealed(next);
  };
  const copy = async (key: string) => {
    try {
      await navigator.clipboard.writeText(display(data[key]));
      setCopied(key);
      setError(null);
    } catch (err) {
      setError(`The browser refused to copy: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const keys = Object.keys(data).sort();
  if (keys.length === 0) return <p class="muted">This version holds no keys.</p>;
  return (
    <div class="table-wrap">
      <table class="secrets-values">
        <thead><tr><th>Key</th><th>Value</th><th><span class="sr-only">Actions</span></th></tr></thead>
        <tbody>
          {keys.map((key) => (
            <tr key={key}>
              <td class="mono">{key}</td>
              <td class="mono secrets-value" data-key={key}>{revealed.has(key) ? display(data[key]) : '••••••••'}</td>
              <td><div class="secrets-actions">
                <button type="button" class="btn" aria-label={`${revealed.has(key) ? 'Hide' : 'Reveal'} ${key}`} onClick={() => toggle(key)}>{revealed.has(key) ? 'Hide' : 'Reveal'}</button>
                <button type="button" class="btn" aria-label={`Copy ${key}`} onClick={() => void copy(key)}>{copied === key ? 'Copied' : 'Copy'}</button>
              </div></td>
            </tr>
          ))}
        </tbody>
      </table>
      <ErrorMessage error={error} />
    </div>
  );
}

function versionState(v: VersionMeta | undefined): 'active' | 'deleted' | 'destroyed' {
  if (v?.destroyed) return 'destroyed';
  if (v?.deletion_time && v.deletion_time !== '') return 'deleted';
  return 'active';
}

/** One secret: its values (masked), a new version, its versions and metadata. */
export function KvSecret({ mount, path }: { mount: string; path: string }): JSX.Element {
  const [version, setVersion] = useState<number | null>(null);
  const [editing, setEditing] = useState(false);
  const [actionError, setActionError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const p = apiPath(path);
  const meta = useLoad(() => api.read<SecretMetadata>(`${mount}metadata/${p}`).then((r) => r?.data ?? {}), [mount, p, tick]);
  const shown = version ?? meta.data?.current_version ?? null;
  const state = shown === null ? 'active' : versionState(meta.data?.versions?.[String(shown)]);
  const secret = useLoad(async () => {
    if (shown === null || state !== 'active') return null;
    try {
      const res = await api.read<{ data: Record<string, unknown> | null }>(`${mount}data/${p}`, { query: { version: shown } });
      return res?.data.data ?? null;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    }
  }, [mount, p, shown, state, tick]);

  const act = async (what: () => Promise<unknown>) => {
    setActionError(null);
    try {
      await what();
      setTick((t) => t + 1);
    } catch (err) {
      setActionError(errorText(err));
    }
  };
  const save = async (data: Record<string, unknown>) => {
    await act(() => api.write(`${mount}data/${p}`, { data }));
    setEditing(false);
    setVersion(null);
  };
  const versions = Object.entries(meta.data?.versions ?? {}).map(([n, v]) => ({ n: Number(n), v })).sort((a, b) => b.n - a.n);

  return (
    <section class="page">
      <Breadcrumbs mount={mount} path={path} leaf />
      <div class="row secrets-head">
        <h1 class="mono">{path}</h1>
        <span class="badge">version {shown ?? '—'}</span>
        {state !== 'active' && <span class="badge badge-danger">{state}</span>}
      </div>
      <ErrorMessage error={actionError} />
      <div class="stack">
        <div class="card">
          <div class="row secrets-head">
            <h2>Data</h2>
            <button type="button" class="btn btn-primary" onClick={() => setEditing(!editing)}>{editing ? 'Cancel' : 'New version'}</button>
          </div>
          {editing && (
            <SecretEditor initial={secret.data ?? {}} submitLabel="Save version" onSubmit={save} />
          )}
          {!editing && (state !== 'active'
            ? <p class="muted">Version {shown} is {state}{state === 'deleted' ? '; undelete it to read it again.' : ' and cannot be read again.'}</p>
            : <LoadState loaded={secret}>{(data) => data ? <SecretValues key={`${shown}`} data={data} /> : <p class="muted">No data.</p>}</LoadState>)}
        </div>
        <div class="card">
          <h2>Versions</h2>
          <LoadState loaded={meta}>
            {() => (
              <div class="table-wrap">
                <table class="secrets-versions">
                  <thead><tr><th>Version</th><th>Created</th><th>State</th><th><span class="sr-only">Actions</span></th></tr></thead>
                  <tbody>
                    {versions.map(({ n, v }) => {
                      const s = versionState(v);
                      const body = { versions: [n] };
                      return (
                        <tr key={n} data-version={n}>
                          <td>{n === shown ? <strong>{n}</strong> : n}{n === meta.data?.current_version && <span class="muted"> (current)</span>}</td>
                          <td>{formatTime(v.created_time)}</td>
                          <td><span class={`badge ${s === 'active' ? 'badge-ok' : 'badge-danger'}`}>{s}</span></td>
                          <td><div class="secrets-actions">
                            <button type="button" class="btn" disabled={n === shown} onClick={() => { setEditing(false); setVersion(n); }}>View</button>
                            {s === 'active' && <button type="button" class="btn" onClick={() => void act(() => api.write(`${mount}delete/${p}`, body))}>Delete</button>}
                            {s === 'deleted' && <button type="button" class="btn" onClick={() => void act(() => api.write(`${mount}undelete/${p}`, body))}>Undelete</button>}
                            {s !== 'destroyed' && <ConfirmButton label="Destroy" confirm={`Destroy version ${n}`} onConfirm={() => act(() => api.write(`${mount}destroy/${p}`, body))} />}
                          </div></td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            )}
          </LoadState>
        </div>
        <div class="card">
          <h2>Metadata</h2>
          <LoadState loaded={meta}>
            {(m) => (
              <dl class="secrets-meta">
                <dt>Current version</dt><dd>{m.current_version ?? '—'}</dd>
                <dt>Oldest version</dt><dd>{m.oldest_version ?? '—'}</dd>
                <dt>Maximum versions</dt><dd>{m.max_versions ? m.max_versions : 'mount default'}</dd>
                <dt>Check-and-set required</dt><dd>{m.cas_required ? 'yes' : 'no'}</dd>
                <dt>Delete versions after</dt><dd>{m.delete_version_after && m.delete_version_after !== '0s' ? m.delete_version_after : 'never'}</dd>
                <dt>Created</dt><dd>{formatTime(m.created_time)}</dd>
                <dt>Updated</dt><dd>{formatTime(m.updated_time)}</dd>
                <dt>Custom metadata</dt>
                <dd>{Object.entries(m.custom_metadata ?? {}).map(([k, v]) => <div key={k} class="mono">{k}: {v}</div>)}
                  {Object.keys(m.custom_metadata ?? {}).length === 0 && '—'}</dd>
              </dl>
            )}
          </LoadState>
          <ConfirmButton label="Delete secret and all versions" confirm="Delete everything"
            onConfirm={async () => {
              setActionError(null);
              try {
                await api.remove(`${mount}metadata/${p}`);
                navigate(folderLink(mount, path.split('/').slice(0, -1).join('/')));
              } catch (err) {
                setActionError(errorText(err));
              }
            }} />
        </div>
      </div>
    </section>
  );
}
