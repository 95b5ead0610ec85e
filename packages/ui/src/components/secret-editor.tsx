import type { JSX } from 'preact';
import { useState } from 'preact/hooks';

interface Row {
  key: string;
  value: string;
}

function rowsOf(data: Record<string, unknown>): Row[] {
  const rows = Object.entries(data).map(([key, value]) => ({ key, value: typeof value === 'string' ? value : JSON.stringify(value) }));
  return rows.length > 0 ? rows : [{ key: '', value: '' }];
}

function fromRows(rows: Row[]): Record<string, unknown> | string {
  const data: Record<string, unknown> = {};
  for (const [i, row] of rows.entries()) {
    if (row.key === '' && row.value === '') continue;
    if (row.key === '') return `Row ${i + 1} has a value but no key.`;
    if (row.key in data) return `The key "${row.key}" appears twice.`;
    data[row.key] = row.value;
  }
  return data;
}

function fromJson(text: string): Record<string, unknown> | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return `The JSON is not valid: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'The JSON must be an object of keys and values.';
  return parsed as Record<string, unknown>;
}

/** A secret's next version, as key/value rows or as JSON; switching keeps what was typed. */
export function SecretEditor({ initial, submitLabel, onSubmit }: {
  initial: Record<string, unknown>;
  submitLabel: string;
  onSubmit: (data: Record<string, unknown>) => void | Promise<void>;
}): JSX.Element {
  const [mode, setMode] = useState<'rows' | 'json'>('rows');
  const [rows, setRows] = useState<Row[]>(() => rowsOf(initial));
  const [json, setJson] = useState(() => JSON.stringify(initial, null, 2));
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const current = () => (mode === 'rows' ? fromRows(rows) : fromJson(json));
  const switchTo = (next: 'rows' | 'json') => {
    if (next === mode) return;
    const data = current();
    if (typeof data === 'string') {
      setProblem(data);
      return;
    }
    setProblem(null);
    if (next === 'json') setJson(JSON.stringify(data, null, 2));
    else setRows(rowsOf(data));
    setMode(next);
  };
  const setRow = (i: number, change: Partial<Row>) => setRows(rows.map((r, j) => (j === i ? { ...r, ...change } : r)));
  const submit = async (e: Event) => {
    e.preventDefault();
    const data = current();
    if (typeof data === 'string') {
      setProblem(data);
      return;
    }
    setProblem(null);
    setBusy(true);
    try {
      await onSubmit(data);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="stack secret-editor" onSubmit={submit} aria-label="Secret data">
      <div class="row" role="group" aria-label="Editor mode">
        <button type="button" class={`btn ${mode === 'rows' ? 'btn-selected' : ''}`} aria-pressed={mode === 'rows'} onClick={() => switchTo('rows')}>Key/value</button>
        <button type="button" class={`btn ${mode === 'json' ? 'btn-selected' : ''}`} aria-pressed={mode === 'json'} onClick={() => switchTo('json')}>JSON</button>
      </div>
      {mode === 'json'
        ? <label class="field"><span>JSON</span><textarea name="json" spellcheck={false} value={json} onInput={(e) => setJson(e.currentTarget.value)} /></label>
        : (
          <div class="stack secret-editor-rows">
            {rows.map((row, i) => (
              <div class="secret-editor-row" key={i}>
                <input aria-label={`Key ${i + 1}`} placeholder="key" value={row.key} onInput={(e) => setRow(i, { key: e.currentTarget.value })} />
                <input aria-label={`Value ${i + 1}`} placeholder="value" type="password" autocomplete="off" value={row.value} onInput={(e) => setRow(i, { value: e.currentTarget.value })} />
                <button type="button" class="btn btn-quiet" aria-label={`Remove row ${i + 1}`} onClick={() => setRows(rows.length > 1 ? rows.filter((_, j) => j !== i) : [{ key: '', value: '' }])}>Remove</button>
              </div>
            ))}
            <div><button type="button" class="btn" onClick={() => setRows([...rows, { key: '', value: '' }])}>Add row</button></div>
          </div>
        )}
      {problem && <p class="error" role="alert">{problem}</p>}
      <div><button type="submit" class="btn btn-primary" disabled={busy}>{submitLabel}</button></div>
    </form>
  );
}
