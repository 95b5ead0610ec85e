import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { errorText } from '../api/client';

export interface Loaded<T> {
  data: T | undefined;
  error: string | null;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change (and on `reload`), keeping only the latest answer. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: string | null; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => { if (live) setState({ data, error: null, loading: false }); },
      (err: unknown) => { if (live) setState({ data: undefined, error: errorText(err), loading: false }); },
    );
    return () => { live = false; };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function ErrorMessage({ error }: { error: string | null | undefined }): JSX.Element | null {
  return error ? <p class="error" role="alert">{error}</p> : null;
}

/** Shows the API state of a load: its error, a loading line, or the children. */
export function LoadState<T>({ loaded, children }: { loaded: Loaded<T>; children: (data: T) => ComponentChildren }): JSX.Element {
  if (loaded.error) return <ErrorMessage error={loaded.error} />;
  if (loaded.data === undefined) return <p class="muted">Loading…</p>;
  return <>{children(loaded.data)}</>;
}

/** A destructive action asks once more in place, instead of a browser dialog. */
export function ConfirmButton({ label, confirm, onConfirm, disabled }: {
  label: string;
  confirm: string;
  onConfirm: () => void | Promise<void>;
  disabled?: boolean;
}): JSX.Element {
  const [asking, setAsking] = useState(false);
  if (!asking) return <button type="button" class="btn btn-danger" disabled={disabled} onClick={() => setAsking(true)}>{label}</button>;
  return (
    <span class="row">
      <button type="button" class="btn btn-danger" onClick={() => { setAsking(false); void onConfirm(); }}>{confirm}</button>
      <button type="button" class="btn btn-quiet" onClick={() => setAsking(false)}>Cancel</button>
    </span>
  );
}

export function formatTime(value: unknown): string {
  if (typeof value !== 'string' || value === '' || value.startsWith('0001-01-01')) return '—';
  const t = Date.parse(value);
  return Number.isNaN(t) ? value : new Date(t).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
