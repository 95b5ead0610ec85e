/**
 * A small text-template language in the shape of Go's text/template, which is what Vault users
 * write their `username_template` in: `{{ .Field }}` values, pipelines (`a | b 3`), parenthesized
 * sub-pipelines, string and number literals, `if`/`else if`/`else`/`end`, `{{-`/`-}}` whitespace
 * trimming and `{{/* comments *\/}}`. The functions are the template helpers Vault documents
 * (truncation, case, hashing, time and random values) plus `printf` and the comparison builtins.
 *
 * Parsing checks everything it can (syntax, function names, field names) so that a bad template
 * is refused when it is configured, not when credentials are requested.
 */
import { createHash, randomInt, randomUUID } from 'node:crypto';

/** A template that does not parse or cannot run; the message says where and why. */
export class TemplateError extends Error {}

type Value = string | number | boolean;

type Operand =
  | { kind: 'field'; name: string }
  | { kind: 'literal'; value: Value }
  | { kind: 'function'; name: string }
  | { kind: 'pipeline'; pipeline: Pipeline };

/** Commands joined by `|`; each command's result is the last argument of the next. */
type Pipeline = Operand[][];

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'output'; pipeline: Pipeline }
  | { kind: 'if'; branches: { condition: Pipeline; body: Node[] }[]; otherwise: Node[] };

type Token =
  | { kind: 'field'; text: string }
  | { kind: 'ident'; text: string }
  | { kind: 'literal'; value: Value }
  | { kind: '(' }
  | { kind: ')' }
  | { kind: '|' };

/** What a running template may read besides its fields. */
export interface TemplateEnvironment {
  /** Milliseconds since the epoch, for `unix_time` and `timestamp`. */
  now(): number;
}

type TemplateFunction = (env: TemplateEnvironment, args: Value[]) => Value;

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

function arity(name: string, args: Value[], min: number, max = min): void {
  if (args.length < min || args.length > max) {
    const wanted = min === max ? `${min}` : `${min} to ${max}`;
    throw new TemplateError(`${name} takes ${wanted} argument(s), got ${args.length}`);
  }
}

function asInt(name: string, v: Value | undefined): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n)) throw new TemplateError(`${name} needs an integer, got ${JSON.stringify(v)}`);
  return n;
}

const str = (v: Value | undefined): string => (v === undefined ? '' : String(v));

function truthy(v: Value): boolean {
  return v !== false && v !== 0 && v !== '';
}

/** Go's printf for the verbs a name template needs: %s %v %d %q and %%. */
function printf(format: string, args: Value[]): string {
  let next = 0;
  return format.replace(/%([svdq%])/g, (_m, verb: string) => {
    if (verb === '%') return '%';
    if (next >= args.length) return `%!${verb}(MISSING)`;
    const arg = args[next++] as Value;
    if (verb === 'd') return typeof arg === 'number' ? String(Math.trunc(arg)) : `%!d(${typeof arg}=${String(arg)})`;
    if (verb === 'q') return JSON.stringify(String(arg));
    return String(arg);
  });
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/**
 * Formats a UTC time with a Go reference layout (`2006-01-02T15:04:05Z07:00`). The common
 * elements are understood; anything else is copied as is.
 */
export function formatGoLayout(ms: number, layout: string): string {
  const d = new Date(ms);
  const hour12 = d.getUTCHours() % 12 === 0 ? 12 : d.getUTCHours() % 12;
  const elements: [string, () => string][] = [
    ['January', () => MONTHS[d.getUTCMonth()] as string],
    ['Monday', () => DAYS[d.getUTCDay()] as string],
    ['2006', () => pad(d.getUTCFullYear(), 4)],
    ['Z07:00', () => 'Z'],
    ['-07:00', () => '+00:00'],
    ['Z0700', () => 'Z'],
    ['-0700', () => '+0000'],
    ['.000000000', () => `.${pad(d.getUTCMilliseconds(), 3)}000000`],
    ['.000000', () => `.${pad(d.getUTCMilliseconds(), 3)}000`],
    ['.000', () => `.${pad(d.getUTCMilliseconds(), 3)}`],
    ['Jan', () => (MONTHS[d.getUTCMonth()] as string).slice(0, 3)],
    ['Mon', () => (DAYS[d.getUTCDay()] as string).slice(0, 3)],
    ['MST', () => 'UTC'],
    ['01', () => pad(d.getUTCMonth() + 1, 2)],
    ['02', () => pad(d.getUTCDate(), 2)],
    ['15', () => pad(d.getUTCHours(), 2)],
    ['03', () => pad(hour12, 2)],
    ['04', () => pad(d.getUTCMinutes(), 2)],
    ['05', () => pad(d.getUTCSeconds(), 2)],
    ['06', () => pad(d.getUTCFullYear() % 100, 2)],
    ['PM', () => (d.getUTCHours() < 12 ? 'AM' : 'PM')],
    ['pm', () => (d.getUTCHours() < 12 ? 'am' : 'pm')],
  ];
  let out = '';
  let i = 0;
  outer: while (i < layout.length) {
    for (const [element, render] of elements) {
      if (layout.startsWith(element, i)) {
        out += render();
        i += element.length;
        continue outer;
      }
    }
    out += layout[i];
    i++;
  }
  return out;
}

const FUNCTIONS: Record<string, TemplateFunction> = {
  // truncate N s: the first N characters of s.
  truncate: (_env, a) => {
    arity('truncate', a, 2);
    const n = asInt('truncate', a[0]);
    if (n < 0) throw new TemplateError('truncate needs a length of 0 or more');
    return str(a[1]).slice(0, n);
  },
  // truncate_sha256 N s: s when it fits, else its first N-8 characters and 8 hex digits of its
  // SHA-256, so long inputs that share a prefix still come out different.
  truncate_sha256: (_env, a) => {
    arity('truncate_sha256', a, 2);
    const n = asInt('truncate_sha256', a[0]);
    if (n < 8) throw new TemplateError('truncate_sha256 needs a length of 8 or more');
    const s = str(a[1]);
    if (s.length <= n) return s;
    return s.slice(0, n - 8) + createHash('sha256').update(s).digest('hex').slice(0, 8);
  },
  uppercase: (_env, a) => (arity('uppercase', a, 1), str(a[0]).toUpperCase()),
  lowercase: (_env, a) => (arity('lowercase', a, 1), str(a[0]).toLowerCase()),
  // replace OLD NEW s
  replace: (_env, a) => (arity('replace', a, 3), str(a[2]).split(str(a[0])).join(str(a[1]))),
  sha256: (_env, a) => (arity('sha256', a, 1), createHash('sha256').update(str(a[0])).digest('hex')),
  base64: (_env, a) => (arity('base64', a, 1), Buffer.from(str(a[0]), 'utf8').toString('base64')),
  unix_time: (env, a) => (arity('unix_time', a, 0), String(Math.floor(env.now() / 1000))),
  unix_time_millis: (env, a) => (arity('unix_time_millis', a, 0), String(Math.floor(env.now()))),
  timestamp: (env, a) => (arity('timestamp', a, 1), formatGoLayout(env.now(), str(a[0]))),
  uuid: (_env, a) => (arity('uuid', a, 0), randomUUID()),
  // random N: N random letters and digits.
  random: (_env, a) => {
    arity('random', a, 1);
    const n = asInt('random', a[0]);
    if (n < 1 || n > 1024) throw new TemplateError('random needs a length between 1 and 1024');
    let out = '';
    for (let i = 0; i < n; i++) out += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
    return out;
  },
  printf: (_env, a) => {
    if (a.length < 1) throw new TemplateError('printf needs a format');
    return printf(str(a[0]), a.slice(1));
  },
  // eq a b c...: whether a equals any of the others, as Go's builtin.
  eq: (_env, a) => {
    if (a.length < 2) throw new TemplateError('eq needs at least 2 arguments');
    return a.slice(1).some((b) => b === a[0]);
  },
  ne: (_env, a) => (arity('ne', a, 2), a[0] !== a[1]),
  not: (_env, a) => (arity('not', a, 1), !truthy(a[0] as Value)),
  and: (_env, a) => {
    if (a.length < 1) throw new TemplateError('and needs an argument');
    return a.find((v) => !truthy(v)) ?? (a[a.length - 1] as Value);
  },
  or: (_env, a) => {
    if (a.length < 1) throw new TemplateError('or needs an argument');
    return a.find((v) => truthy(v)) ?? (a[a.length - 1] as Value);
  },
  len: (_env, a) => (arity('len', a, 1), str(a[0]).length),
};

// --- lexing ----------------------------------------------------------------------------------

interface Action {
  tokens: Token[];
  /** Where the action starts in the template, for messages. */
  offset: number;
}

type Piece = { kind: 'text'; text: string } | { kind: 'action'; action: Action };

function tokenize(text: string, start: number): { tokens: Token[]; end: number; trimRight: boolean } {
  const tokens: Token[] = [];
  let i = start;
  for (;;) {
    while (i < text.length && /\s/.test(text[i] as string)) i++;
    if (i >= text.length) throw new TemplateError(`unclosed action starting at character ${start}`);
    if (text.startsWith('}}', i)) return { tokens, end: i + 2, trimRight: false };
    if (text.startsWith('-}}', i) && /\s/.test(text[i - 1] ?? '')) return { tokens, end: i + 3, trimRight: true };
    const c = text[i] as string;
    if (c === '(' || c === ')' || c === '|') {
      tokens.push({ kind: c });
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (j >= text.length) throw new TemplateError(`unterminated string at character ${i}`);
      try {
        tokens.push({ kind: 'literal', value: JSON.parse(text.slice(i, j + 1)) as string });
      } catch {
        throw new TemplateError(`bad escape in the string at character ${i}`);
      }
      i = j + 1;
    } else if (c === '`') {
      const j = text.indexOf('`', i + 1);
      if (j < 0) throw new TemplateError(`unterminated raw string at character ${i}`);
      tokens.push({ kind: 'literal', value: text.slice(i + 1, j) });
      i = j + 1;
    } else {
      const m = /^(?:\.[A-Za-z_]\w*|[A-Za-z_]\w*|-?\d+)/.exec(text.slice(i));
      if (!m) throw new TemplateError(`unexpected "${c}" at character ${i}`);
      const word = m[0];
      if (word.startsWith('.')) tokens.push({ kind: 'field', text: word.slice(1) });
      else if (/^-?\d/.test(word)) tokens.push({ kind: 'literal', value: Number(word) });
      else if (word === 'true' || word === 'false') tokens.push({ kind: 'literal', value: word === 'true' });
      else tokens.push({ kind: 'ident', text: word });
      i += word.length;
    }
  }
}

function lex(text: string): Piece[] {
  const pieces: Piece[] = [];
  let pos = 0;
  let trimNext = false;
  while (pos <= text.length) {
    const open = text.indexOf('{{', pos);
    let literal = text.slice(pos, open < 0 ? text.length : open);
    if (trimNext) literal = literal.replace(/^\s+/, '');
    if (open < 0) {
      if (literal !== '') pieces.push({ kind: 'text', text: literal });
      break;
    }
    let start = open + 2;
    if (text[start] === '-' && /\s/.test(text[start + 1] ?? '')) {
      literal = literal.replace(/\s+$/, '');
      start += 1;
    }
    if (literal !== '') pieces.push({ kind: 'text', text: literal });
    const rest = text.slice(start).trimStart();
    if (rest.startsWith('/*')) {
      const close = text.indexOf('*/', start);
      const endMatch = close < 0 ? null : /^\s*(-?)}}/.exec(text.slice(close + 2));
      if (close < 0 || !endMatch) throw new TemplateError(`unclosed comment at character ${open}`);
      trimNext = endMatch[1] === '-';
      pos = close + 2 + endMatch[0].length;
      continue;
    }
    const { tokens, end, trimRight } = tokenize(text, start);
    pieces.push({ kind: 'action', action: { tokens, offset: open } });
    trimNext = trimRight;
    pos = end;
  }
  return pieces;
}

// --- parsing ---------------------------------------------------------------------------------

class Parser {
  private index = 0;

  constructor(private readonly pieces: Piece[], private readonly fields: ReadonlySet<string>) {}

  parse(): Node[] {
    const { nodes, stop } = this.list();
    if (stop) throw new TemplateError(`unexpected {{${stop.word}}} at character ${stop.offset}`);
    return nodes;
  }

  /** Nodes up to an `else` or `end` (returned as `stop`), or to the end of the template. */
  private list(): { nodes: Node[]; stop?: { word: 'else' | 'end'; rest: Token[]; offset: number } } {
    const nodes: Node[] = [];
    while (this.index < this.pieces.length) {
      const piece = this.pieces[this.index++] as Piece;
      if (piece.kind === 'text') {
        nodes.push(piece);
        continue;
      }
      const { tokens, offset } = piece.action;
      const first = tokens[0];
      if (!first) throw new TemplateError(`empty action at character ${offset}`);
      if (first.kind === 'ident' && (first.text === 'else' || first.text === 'end')) {
        return { nodes, stop: { word: first.text, rest: tokens.slice(1), offset } };
      }
      if (first.kind === 'ident' && first.text === 'if') {
        nodes.push(this.ifNode(tokens.slice(1), offset));
        continue;
      }
      nodes.push({ kind: 'output', pipeline: this.pipeline(tokens, offset) });
    }
    return { nodes };
  }

  private ifNode(condition: Token[], offset: number): Node {
    const branches: { condition: Pipeline; body: Node[] }[] = [];
    let current = this.pipeline(condition, offset);
    for (;;) {
      const { nodes, stop } = this.list();
      if (!stop) throw new TemplateError(`{{if}} at character ${offset} has no {{end}}`);
      branches.push({ condition: current, body: nodes });
      if (stop.word === 'end') {
        if (stop.rest.length > 0) throw new TemplateError(`unexpected tokens after {{end}} at character ${stop.offset}`);
        return { kind: 'if', branches, otherwise: [] };
      }
      const next = stop.rest[0];
      if (next?.kind === 'ident' && next.text === 'if') {
        current = this.pipeline(stop.rest.slice(1), stop.offset);
        continue;
      }
      if (stop.rest.length > 0) throw new TemplateError(`unexpected tokens after {{else}} at character ${stop.offset}`);
      const tail = this.list();
      if (tail.stop?.word !== 'end') throw new TemplateError(`{{else}} at character ${stop.offset} has no {{end}}`);
      if (tail.stop.rest.length > 0) throw new TemplateError(`unexpected tokens after {{end}} at character ${tail.stop.offset}`);
      return { kind: 'if', branches, otherwise: tail.nodes };
    }
  }

  private pipeline(tokens: Token[], offset: number): Pipeline {
    const { pipeline, next } = this.parsePipeline(tokens, 0, offset);
    if (next !== tokens.length) throw new TemplateError(`unexpected ")" in the action at character ${offset}`);
    return pipeline;
  }

  private parsePipeline(tokens: Token[], start: number, offset: number): { pipeline: Pipeline; next: number } {
    const pipeline: Pipeline = [];
    let command: Operand[] = [];
    let i = start;
    const finish = () => {
      if (command.length === 0) throw new TemplateError(`missing command in the action at character ${offset}`);
      if (command[0]?.kind !== 'function' && command.length > 1) {
        throw new TemplateError(`only a function takes arguments, in the action at character ${offset}`);
      }
      if (command[0]?.kind !== 'function' && pipeline.length > 0) {
        throw new TemplateError(`cannot pipe into a value that is not a function, in the action at character ${offset}`);
      }
      pipeline.push(command);
      command = [];
    };
    while (i < tokens.length) {
      const t = tokens[i] as Token;
      if (t.kind === ')') break;
      if (t.kind === '|') {
        finish();
        i++;
        continue;
      }
      if (t.kind === '(') {
        const inner = this.parsePipeline(tokens, i + 1, offset);
        if (tokens[inner.next]?.kind !== ')') throw new TemplateError(`unclosed "(" in the action at character ${offset}`);
        command.push({ kind: 'pipeline', pipeline: inner.pipeline });
        i = inner.next + 1;
        continue;
      }
      if (t.kind === 'field') {
        if (!this.fields.has(t.text)) {
          throw new TemplateError(`unknown field .${t.text} at character ${offset}; known: ${[...this.fields].map((f) => `.${f}`).join(', ')}`);
        }
        command.push({ kind: 'field', name: t.text });
      } else if (t.kind === 'ident') {
        if (!Object.hasOwn(FUNCTIONS, t.text)) throw new TemplateError(`unknown function "${t.text}" at character ${offset}`);
        command.push({ kind: 'function', name: t.text });
      } else {
        command.push({ kind: 'literal', value: t.value });
      }
      i++;
    }
    finish();
    return { pipeline, next: i };
  }
}

// --- running ---------------------------------------------------------------------------------

export class Template {
  constructor(private readonly nodes: Node[]) {}

  render(values: Readonly<Record<string, string>>, env: TemplateEnvironment): string {
    return this.renderNodes(this.nodes, values, env);
  }

  private renderNodes(nodes: Node[], values: Readonly<Record<string, string>>, env: TemplateEnvironment): string {
    let out = '';
    for (const node of nodes) {
      if (node.kind === 'text') out += node.text;
      else if (node.kind === 'output') out += String(this.run(node.pipeline, values, env));
      else {
        const branch = node.branches.find((b) => truthy(this.run(b.condition, values, env)));
        out += this.renderNodes(branch ? branch.body : node.otherwise, values, env);
      }
    }
    return out;
  }

  private run(pipeline: Pipeline, values: Readonly<Record<string, string>>, env: TemplateEnvironment): Value {
    let piped: Value | undefined;
    for (const command of pipeline) {
      const [head, ...rest] = command as [Operand, ...Operand[]];
      if (head.kind !== 'function') {
        piped = this.operand(head, values, env);
        continue;
      }
      const args = rest.map((o) => this.operand(o, values, env));
      if (piped !== undefined) args.push(piped);
      piped = (FUNCTIONS[head.name] as TemplateFunction)(env, args);
    }
    return piped as Value;
  }

  private operand(o: Operand, values: Readonly<Record<string, string>>, env: TemplateEnvironment): Value {
    switch (o.kind) {
      case 'literal':
        return o.value;
      case 'field':
        return values[o.name] ?? '';
      case 'function':
        // A bare function name as an argument is called with no arguments, as in Go.
        return (FUNCTIONS[o.name] as TemplateFunction)(env, []);
      case 'pipeline':
        return this.run(o.pipeline, values, env);
    }
  }
}

/** Parses `text`, allowing only the named fields; throws TemplateError. */
export function parseTemplate(text: string, fields: readonly string[]): Template {
  return new Template(new Parser(lex(text), new Set(fields)).parse());
}
