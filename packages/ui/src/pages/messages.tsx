import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { api, ApiError, errorText } from '../api/client';
import { ConfirmButton, ErrorMessage, formatTime, LoadState, useLoad } from '../components/common';
import { Banner, decodeBase64, encodeBase64, ModalCard, safeLink } from '../components/messages';
import type { PageRoute } from '../page';
import { Link, navigate } from '../router';
import './messages.css';

const BASE = 'sys/config/ui/custom-messages';

interface Listed {
  title: string;
  type: string;
  authenticated: boolean;
  start_time: string;
  end_time: string | null;
  active: boolean;
}

type Tri = '' | 'true' | 'false';

function Filter({ label, value, onChange, options }: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  options: [string, string][];
}): JSX.Element {
  return (
    <label class="field messages-filter">
      <span>{label}</span>
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {options.map(([v, text]) => <option key={v} value={v}>{text}</option>)}
      </select>
    </label>
  );
}

export function MessagesList(): JSX.Element {
  const [active, setActive] = useState<Tri>('');
  const [authenticated, setAuthenticated] = useState<Tri>('');
  const [type, setType] = useState('');
  const [error, setError] = useState<string | null>(null);
  const listed = useLoad(async () => {
    const res = await api.listWithInfo<Listed>(`${BASE}/`, { query: { active: active || undefined, authenticated: authenticated || undefined, type: type || undefined } })
      .catch((err: unknown) => {
        // An empty list is a 404 in Vault's shape.
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      });
    const info = res?.data.key_info ?? {};
    return (res?.data.keys ?? []).map((id) => ({ id, ...(info[id] as Listed) }));
  }, [active, authenticated, type]);

  const remove = async (id: string) => {
    setError(null);
    try {
      await api.remove(`${BASE}/${encodeURIComponent(id)}`);
      listed.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };

  return (
    <section class="page">
      <div class="row messages-head">
        <h1>Custom messages</h1>
        <Link to="/messages/new" class="btn btn-primary">New message</Link>
      </div>
      <div class="row messages-filters" role="group" aria-label="Filters">
        <Filter label="State" value={active} onChange={(v) => setActive(v as Tri)} options={[['', 'Any'], ['true', 'Active'], ['false', 'Inactive']]} />
        <Filter label="Audience" value={authenticated} onChange={(v) => setAuthenticated(v as Tri)} options={[['', 'Any'], ['false', 'Before sign-in'], ['true', 'After sign-in']]} />
        <Filter label="Type" value={type} onChange={setType} options={[['', 'Any'], ['banner', 'Banner'], ['modal', 'Modal']]} />
      </div>
      <ErrorMessage error={error} />
      <LoadState loaded={listed}>
        {(rows) => rows.length === 0 ? <p class="muted">No messages match.</p> : (
          <div class="table-wrap">
            <table class="messages-table">
              <thead><tr><th>Title</th><th>Type</th><th>Audience</th><th>State</th><th>Start</th><th>End</th><th><span class="sr-only">Actions</span></th></tr></thead>
              <tbody>
                {rows.map((m) => (
                  <tr key={m.id} data-message-id={m.id}>
                    <td><Link to={`/messages/${encodeURIComponent(m.id)}`}>{m.title}</Link></td>
                    <td>{m.type}</td>
                    <td>{m.authenticated ? 'after sign-in' : 'before sign-in'}</td>
                    <td><span class={`badge ${m.active ? 'badge-ok' : 'badge-warn'}`}>{m.active ? 'active' : 'inactive'}</span></td>
                    <td>{formatTime(m.start_time)}</td>
                    <td>{formatTime(m.end_time)}</td>
                    <td><div class="messages-actions">
                      <Link to={`/messages/${encodeURIComponent(m.id)}`} class="btn">Edit</Link>
                      <ConfirmButton label="Delete" confirm="Delete it" onConfirm={() => remove(m.id)} />
                    </div></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </LoadState>
    </section>
  );
}

interface Draft {
  title: string;
  body: string;
  type: 'banner' | 'modal';
  authenticated: boolean;
  start: string;
  end: string;
  linkTitle: string;
  linkHref: string;
}

/** `datetime-local` speaks local time without a zone; the API wants RFC 3339. */
function toLocalInput(iso: string | null | undefined): string {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '';
  const d = new Date(t - new Date(t).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 19);
}

function fromLocalInput(value: string): string {
  const t = Date.parse(value);
  return Number.isNaN(t) ? value : new Date(t).toISOString();
}

const emptyDraft = (): Draft => ({
  title: '', body: '', type: 'banner', authenticated: false,
  start: toLocalInput(new Date(Date.now() - 60_000).toISOString()), end: '', linkTitle: '', linkHref: '',
});

function draftFrom(m: Record<string, unknown>): Draft {
  const link = (m['link'] ?? null) as Record<string, string> | null;
  const [linkEntry] = Object.entries(link ?? {});
  return {
    title: String(m['title'] ?? ''),
    body: decodeBase64(String(m['message'] ?? '')),
    type: m['type'] === 'modal' ? 'modal' : 'banner',
    authenticated: m['authenticated'] === true,
    start: toLocalInput(m['start_time'] as string),
    end: toLocalInput(m['end_time'] as string | null),
    linkTitle: linkEntry?.[0] ?? '',
    linkHref: linkEntry?.[1] ?? '',
  };
}

function MessageForm({ id, initial }: { id: string | null; initial: Draft }): JSX.Element {
  const [draft, setDraft] = useState(initial);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (change: Partial<Draft>) => setDraft({ ...draft, ...change });

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    const body: Record<string, unknown> = {
      title: draft.title,
      message: encodeBase64(draft.body),
      type: draft.type,
      authenticated: draft.authenticated,
      start_time: fromLocalInput(draft.start),
      end_time: draft.end === '' ? '' : fromLocalInput(draft.end),
    };
    if (draft.linkTitle !== '' || draft.linkHref !== '') body['link'] = { [draft.linkTitle]: draft.linkHref };
    try {
      await api.write(id === null ? `${BASE}/` : `${BASE}/${encodeURIComponent(id)}`, body);
      navigate('/messages');
    } catch (err) {
      setError(errorText(err));
      setBusy(false);
    }
  };

  const preview = {
    id: 'preview', title: draft.title || 'Title', body: draft.body || 'Message', type: draft.type,
    link: safeLink(draft.linkTitle && draft.linkHref ? { [draft.linkTitle]: draft.linkHref } : null),
  };

  return (
    <div class="messages-editor">
      <form class="card" onSubmit={submit} aria-label="Custom message">
        <label class="field"><span>Title</span>
          <input name="title" required value={draft.title} onInput={(e) => set({ title: e.currentTarget.value })} /></label>
        <label class="field"><span>Message</span>
          <textarea name="message" class="messages-body" required value={draft.body} onInput={(e) => set({ body: e.currentTarget.value })} /></label>
        <div class="row messages-choices">
          <label class="field"><span>Type</span>
            <select name="type" value={draft.type} onChange={(e) => set({ type: e.currentTarget.value === 'modal' ? 'modal' : 'banner' })}>
              <option value="banner">Banner</option>
              <option value="modal">Modal</option>
            </select></label>
          <label class="field"><span>Audience</span>
            <select name="audience" value={draft.authenticated ? 'after' : 'before'} onChange={(e) => set({ authenticated: e.currentTarget.value === 'after' })}>
              <option value="before">Before sign-in</option>
              <option value="after">After sign-in</option>
            </select></label>
        </div>
        <div class="row messages-choices">
          <label class="field"><span>Start</span>
            <input name="start" type="datetime-local" step={1} required value={draft.start} onInput={(e) => set({ start: e.currentTarget.value })} /></label>
          <label class="field"><span>End <span class="muted">(optional)</span></span>
            <input name="end" type="datetime-local" step={1} value={draft.end} onInput={(e) => set({ end: e.currentTarget.value })} /></label>
        </div>
        <div class="row messages-choices">
          <label class="field"><span>Link text <span class="muted">(optional)</span></span>
            <input name="link-title" value={draft.linkTitle} onInput={(e) => set({ linkTitle: e.currentTarget.value })} /></label>
          <label class="field"><span>Link URL</span>
            <input name="link-href" type="url" placeholder="https://" value={draft.linkHref} onInput={(e) => set({ linkHref: e.currentTarget.value })} /></label>
        </div>
        <ErrorMessage error={error} />
        <div class="row">
          <button type="submit" class="btn btn-primary" disabled={busy}>{id === null ? 'Create message' : 'Save message'}</button>
          <Link to="/messages" class="btn btn-quiet">Cancel</Link>
        </div>
      </form>
      <div class="messages-preview" aria-label="Preview">
        <h2>Preview</h2>
        <p class="muted">As shown {draft.authenticated ? 'after' : 'before'} sign-in.</p>
        {preview.type === 'banner' ? <Banner message={preview} /> : <div class="messages-preview-modal"><ModalCard message={preview} /></div>}
      </div>
    </div>
  );
}

export function MessageNew(): JSX.Element {
  return (
    <section class="page">
      <h1>New message</h1>
      <MessageForm id={null} initial={emptyDraft()} />
    </section>
  );
}

export function MessageEdit({ params }: { params: Record<string, string> }): JSX.Element {
  const id = params['id'] ?? '';
  const loaded = useLoad(() => api.read(`${BASE}/${encodeURIComponent(id)}`).then((r) => draftFrom(r?.data ?? {})), [id]);
  return (
    <section class="page">
      <h1>Edit message</h1>
      <LoadState loaded={loaded}>{(draft) => <MessageForm id={id} initial={draft} />}</LoadState>
    </section>
  );
}

const needs = [{ path: `${BASE}/`, any: ['list' as const] }];

export const messagesRoutes: PageRoute[] = [
  { pattern: '/messages', title: 'Custom messages', component: MessagesList, needs, nav: { label: 'Messages', to: '/messages', order: 30 } },
  { pattern: '/messages/new', title: 'New message', component: MessageNew, needs: [{ path: `${BASE}/`, any: ['create', 'update'] }] },
  { pattern: '/messages/:id', title: 'Edit message', component: MessageEdit, needs: [{ path: `${BASE}/`, any: ['list', 'read'] }] },
];
