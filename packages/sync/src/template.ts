import { BadRequestError } from '@strongroom/core';

/** What a secret name template may refer to; each is a string known when a secret is synced. */
export const PLACEHOLDERS = [
  'DestinationType', 'DestinationName', 'NamespacePath', 'MountPath', 'MountAccessor', 'SecretPath', 'SecretBaseName', 'SecretKey',
] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];

export const FILTERS = ['uppercase', 'lowercase', 'replace'] as const;
type Filter = { name: 'uppercase' } | { name: 'lowercase' } | { name: 'replace'; from: string; to: string };

type Part = { text: string } | { placeholder: Placeholder; filters: Filter[] };

/** A parsed template: literal text and `{{ .Placeholder | filter ... }}` actions. */
export interface SecretNameTemplate {
  source: string;
  parts: Part[];
  uses(placeholder: Placeholder): boolean;
}

/** Templates are stored and shown; a bound keeps a read small and a render cheap. */
export const MAX_TEMPLATE_LENGTH = 1024;

function invalid(rule: string): never {
  throw new BadRequestError(`invalid value for "secret_name_template": ${rule}`);
}

/** Splits an action into words, keeping quoted strings (Go's escapes for quote and backslash) whole. */
function words(action: string): string[] {
  const out: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|(\|)|([^\s|"]+))/gy;
  let m: RegExpExecArray | null;
  let consumed = 0;
  while ((m = re.exec(action)) !== null && m[0] !== '') {
    consumed = re.lastIndex;
    if (m[1] !== undefined) out.push(JSON.stringify(unquote(m[1])));
    else out.push((m[2] ?? m[3]) as string);
  }
  if (action.slice(consumed).trim() !== '') invalid('an action holds an unterminated string');
  return out;
}

function unquote(body: string): string {
  return body.replace(/\\(.)/g, (_all, c: string) => {
    if (c === '"' || c === '\\') return c;
    return invalid('only \\" and \\\\ may be escaped inside a string');
  });
}

function isQuoted(word: string | undefined): word is string {
  return word !== undefined && word.startsWith('"');
}

function parseAction(action: string): Part {
  const segments: string[][] = [[]];
  for (const w of words(action)) {
    if (w === '|') segments.push([]);
    else (segments[segments.length - 1] as string[]).push(w);
  }
  const [head, ...rest] = segments;
  if (!head || head.length !== 1 || !(head[0] as string).startsWith('.')) {
    invalid('each {{ }} action must start with a placeholder such as .SecretPath');
  }
  const name = (head[0] as string).slice(1);
  const placeholder = PLACEHOLDERS.find((p) => p === name);
  if (!placeholder) invalid(`unknown placeholder; use one of ${PLACEHOLDERS.map((p) => `.${p}`).join(', ')}`);
  const filters = rest.map((seg): Filter => {
    const [fn, ...args] = seg;
    if (fn === 'uppercase' || fn === 'lowercase') {
      if (args.length > 0) invalid(`filter ${fn} takes no arguments`);
      return { name: fn };
    }
    if (fn === 'replace') {
      if (args.length !== 2 || !isQuoted(args[0]) || !isQuoted(args[1])) invalid('filter replace takes two quoted strings: replace "from" "to"');
      const from = JSON.parse(args[0] as string) as string;
      if (from === '') invalid('filter replace needs a non-empty string to replace');
      return { name: 'replace', from, to: JSON.parse(args[1] as string) as string };
    }
    return invalid(`unknown filter; use one of ${FILTERS.join(', ')}`);
  });
  return { placeholder, filters };
}

/** Parses a template, or throws a BadRequestError naming `secret_name_template` and the rule. */
export function parseTemplate(source: string): SecretNameTemplate {
  if (source.trim() === '') invalid('must not be empty');
  if (source.length > MAX_TEMPLATE_LENGTH) invalid(`must be at most ${MAX_TEMPLATE_LENGTH} characters`);
  const parts: Part[] = [];
  let rest = source;
  while (rest !== '') {
    const open = rest.indexOf('{{');
    const close = rest.indexOf('}}');
    if (close !== -1 && (open === -1 || close < open)) invalid('"}}" without a matching "{{"');
    if (open === -1) {
      parts.push({ text: rest });
      break;
    }
    if (open > 0) parts.push({ text: rest.slice(0, open) });
    const end = rest.indexOf('}}', open + 2);
    if (end === -1) invalid('"{{" without a matching "}}"');
    // Go's trim markers ("{{- " and " -}}") are accepted and trim nothing: names hold no layout.
    const action = rest.slice(open + 2, end).replace(/^-\s/, '').replace(/\s-$/, '');
    if (action.includes('{{')) invalid('actions cannot be nested');
    parts.push(parseAction(action));
    rest = rest.slice(end + 2);
  }
  if (!parts.some((p) => 'placeholder' in p)) invalid('must use at least one placeholder, or every secret would get the same name');
  return { source, parts, uses: (p) => parts.some((part) => 'placeholder' in part && part.placeholder === p) };
}

/** Fills a parsed template in; every placeholder it uses must be given. */
export function renderTemplate(template: SecretNameTemplate, values: Partial<Record<Placeholder, string>>): string {
  return template.parts.map((part) => {
    if ('text' in part) return part.text;
    let v = values[part.placeholder];
    if (v === undefined) throw new Error(`no value for placeholder ${part.placeholder}`);
    for (const f of part.filters) {
      if (f.name === 'uppercase') v = v.toUpperCase();
      else if (f.name === 'lowercase') v = v.toLowerCase();
      else v = v.split(f.from).join(f.to);
    }
    return v;
  }).join('');
}
