import { UsageError, type ParsedArgs } from './args';

export type Format = 'table' | 'json' | 'yaml';

export const OUTPUT_FLAGS_HELP = `Output options:
  -format=table|json|yaml  How to print the answer (VAULT_FORMAT; default table)
  -field=NAME              Print only this field's value, with no other decoration`;

export interface OutputOptions {
  format: Format;
  field?: string;
}

export function outputOptions(args: ParsedArgs, env: NodeJS.ProcessEnv = process.env): OutputOptions {
  const raw = args.flags.get('format') ?? env['VAULT_FORMAT'] ?? 'table';
  if (raw !== 'table' && raw !== 'json' && raw !== 'yaml') throw new UsageError(`-format must be table, json or yaml, not "${String(raw)}"`);
  const field = args.flags.get('field');
  if (field === true) throw new UsageError('-field needs a value');
  return field !== undefined ? { format: raw, field } : { format: raw };
}

const PLAIN = /^[A-Za-z_][\w./-]*$/;
const RESERVED = /^(true|false|null|yes|no|on|off|~)$/i;

function yamlScalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = String(v);
  return PLAIN.test(s) && !RESERVED.test(s) ? s : JSON.stringify(s);
}

/** A small YAML writer for JSON values: enough for API answers, always valid YAML. */
export function toYaml(v: unknown, indent = ''): string {
  if (Array.isArray(v)) {
    if (v.length === 0) return `${indent}[]\n`;
    return v.map((item) => {
      if (item !== null && typeof item === 'object' && Object.keys(item).length > 0) {
        const inner = toYaml(item, `${indent}  `);
        return `${indent}- ${inner.slice(indent.length + 2)}`;
      }
      return `${indent}- ${yamlInline(item)}\n`;
    }).join('');
  }
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length === 0) return `${indent}{}\n`;
    return entries.map(([k, val]) => {
      const key = yamlScalar(k);
      if (val !== null && typeof val === 'object' && Object.keys(val).length > 0) return `${indent}${key}:\n${toYaml(val, `${indent}  `)}`;
      return `${indent}${key}: ${yamlInline(val)}\n`;
    }).join('');
  }
  return `${indent}${yamlScalar(v)}\n`;
}

function yamlInline(v: unknown): string {
  if (Array.isArray(v)) return '[]';
  if (v !== null && typeof v === 'object') return '{}';
  return yamlScalar(v);
}

/** How a value shows in a table cell or with -field: strings bare, anything else as Vault's Go prints it. */
export function cell(v: unknown): string {
  if (v === null || v === undefined) return 'n/a';
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return `[${v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' ')}]`;
  if (typeof v === 'object') return `map[${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${k}:${cell(x)}`).join(' ')}]`;
  return String(v);
}

export function kvTable(rows: Array<[string, unknown]>, header: [string, string] = ['Key', 'Value']): string {
  const width = Math.max(header[0].length, ...rows.map(([k]) => k.length));
  const line = (k: string, v: string) => `${k.padEnd(width)}    ${v}`.trimEnd() + '\n';
  return line(header[0], header[1]) + line('-'.repeat(header[0].length), '-'.repeat(header[1].length)) + rows.map(([k, v]) => line(k, cell(v))).join('');
}

/** A table with a header row and a rule under it, columns padded to their widest cell. */
export function columns(out: NodeJS.WritableStream, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('    ').trimEnd() + '\n';
  out.write(line(header));
  out.write(line(widths.map((w) => '-'.repeat(w))));
  for (const r of rows) out.write(line(r));
}

/** Prints a whole answer as JSON or YAML; false when the format is table (the caller draws it). */
export function printStructured(out: NodeJS.WritableStream, opts: OutputOptions, body: unknown): boolean {
  if (opts.format === 'json') {
    out.write(`${JSON.stringify(body, null, 2)}\n`);
    return true;
  }
  if (opts.format === 'yaml') {
    out.write(toYaml(body));
    return true;
  }
  return false;
}

interface SecretBody {
  data?: Record<string, unknown> | null;
  auth?: Record<string, unknown> | null;
  lease_id?: string;
  lease_duration?: number;
  renewable?: boolean;
  warnings?: string[] | null;
  wrap_info?: Record<string, unknown> | null;
}

/** The rows Vault's table shows for a secret: its lease, its auth block, then its data. */
export function secretRows(body: SecretBody, data: Record<string, unknown> | null | undefined = body.data): Array<[string, unknown]> {
  const rows: Array<[string, unknown]> = [];
  if (body.wrap_info) {
    for (const k of ['token', 'accessor', 'ttl', 'creation_time', 'creation_path']) rows.push([`wrapping_${k}`, body.wrap_info[k]]);
    return rows;
  }
  if (body.lease_duration && body.lease_duration > 0) {
    if (body.lease_id) rows.push(['lease_id', body.lease_id]);
    rows.push(['lease_duration', `${body.lease_duration}s`], ['lease_renewable', body.renewable ?? false]);
  }
  const auth = body.auth;
  if (auth) {
    rows.push(['token', auth['client_token']], ['token_accessor', auth['accessor']], ['token_duration', `${String(auth['lease_duration'])}s`],
      ['token_renewable', auth['renewable']], ['token_policies', auth['token_policies']], ['identity_policies', auth['identity_policies'] ?? []],
      ['policies', auth['policies']]);
    for (const [k, v] of Object.entries((auth['metadata'] as Record<string, unknown> | null) ?? {})) rows.push([`token_meta_${k}`, v]);
  }
  for (const k of Object.keys(data ?? {}).sort()) rows.push([k, (data as Record<string, unknown>)[k]]);
  return rows;
}

/** Finds -field's value in an answer: in the data, then the auth block (token, token_accessor...). */
export function fieldOf(body: SecretBody, field: string, data: Record<string, unknown> | null | undefined = body.data): unknown {
  if (data && Object.prototype.hasOwnProperty.call(data, field)) return data[field];
  const row = secretRows(body, data).find(([k]) => k === field);
  if (row) return row[1];
  throw new UsageError(`Field "${field}" not present in secret`);
}

/** Prints -field's value bare (structured values as JSON), or the secret in the chosen format. */
export function printSecret(out: NodeJS.WritableStream, opts: OutputOptions, body: SecretBody, data?: Record<string, unknown> | null): void {
  if (opts.field !== undefined) {
    const v = fieldOf(body, opts.field, data === undefined ? body.data : data);
    out.write(opts.format === 'table' ? `${cell(v)}\n` : printValue(opts, v));
    return;
  }
  if (printStructured(out, opts, body)) return;
  if (body.warnings && body.warnings.length > 0) out.write(`WARNING! The following warnings were returned from the server:\n${body.warnings.map((w) => `  * ${w}`).join('\n')}\n\n`);
  out.write(kvTable(secretRows(body, data === undefined ? body.data : data)));
}

function printValue(opts: OutputOptions, v: unknown): string {
  return opts.format === 'json' ? `${JSON.stringify(v, null, 2)}\n` : toYaml(v);
}

/** `Keys` then one key a line, as Vault lists. */
export function printList(out: NodeJS.WritableStream, opts: OutputOptions, keys: string[]): void {
  if (printStructured(out, opts, keys)) return;
  out.write(`Keys\n----\n${keys.map((k) => `${k}\n`).join('')}`);
}
