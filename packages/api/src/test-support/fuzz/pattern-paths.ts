import type { Random } from '../../../../raft/src/test-support/seeded-random';

/**
 * Turns a path table's pattern (the regex subset the tables use: literals, groups, named
 * captures, alternation, character classes and the quantifiers ? * + {n,m}) into concrete
 * paths. Named captures are filled by the caller, so a fuzzer decides what goes where a name
 * goes; everything else gets a short value the pattern accepts.
 */

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'class'; source: string }
  | { kind: 'group'; name?: string; source: string; alternatives: Node[][] }
  | { kind: 'repeat'; node: Node; min: number; max: number };

/** A piece of a generated path: pattern text as is, or a capture's value still to be encoded. */
export type PathPart = { text: string } | { capture: string; value: string };

class Parser {
  private pos = 0;
  constructor(private readonly src: string) {}

  parse(): Node[][] {
    const alts = this.alternatives();
    if (this.pos !== this.src.length) throw new Error(`unexpected "${this.src[this.pos]}" in pattern ${this.src}`);
    return alts;
  }

  private alternatives(): Node[][] {
    const alts: Node[][] = [this.sequence()];
    while (this.src[this.pos] === '|') {
      this.pos += 1;
      alts.push(this.sequence());
    }
    return alts;
  }

  private sequence(): Node[] {
    const seq: Node[] = [];
    while (this.pos < this.src.length && this.src[this.pos] !== '|' && this.src[this.pos] !== ')') {
      seq.push(this.quantified(this.atom()));
    }
    return seq;
  }

  private atom(): Node {
    const start = this.pos;
    const c = this.src[this.pos] as string;
    if (c === '(') {
      this.pos += 1;
      let name: string | undefined;
      if (this.src.startsWith('?:', this.pos)) this.pos += 2;
      else if (this.src.startsWith('?<', this.pos)) {
        const end = this.src.indexOf('>', this.pos);
        name = this.src.slice(this.pos + 2, end);
        this.pos = end + 1;
      }
      const alternatives = this.alternatives();
      if (this.src[this.pos] !== ')') throw new Error(`unclosed group in pattern ${this.src}`);
      this.pos += 1;
      return { kind: 'group', ...(name ? { name } : {}), source: this.src.slice(start, this.pos), alternatives };
    }
    if (c === '[') {
      let i = this.pos + 1;
      while (this.src[i] !== ']') i += this.src[i] === '\\' ? 2 : 1;
      this.pos = i + 1;
      return { kind: 'class', source: this.src.slice(start, this.pos) };
    }
    if (c === '.') {
      this.pos += 1;
      return { kind: 'class', source: '.' };
    }
    if (c === '\\') {
      const next = this.src[this.pos + 1] as string;
      this.pos += 2;
      return /[dDwWsS]/.test(next) ? { kind: 'class', source: `\\${next}` } : { kind: 'text', text: next };
    }
    this.pos += 1;
    return { kind: 'text', text: c };
  }

  private quantified(node: Node): Node {
    const c = this.src[this.pos];
    if (c === '?') return this.take(1, { kind: 'repeat', node, min: 0, max: 1 });
    if (c === '*') return this.take(1, { kind: 'repeat', node, min: 0, max: 2 });
    if (c === '+') return this.take(1, { kind: 'repeat', node, min: 1, max: 2 });
    if (c === '{') {
      const m = /^\{(\d+)(?:,(\d*))?\}/.exec(this.src.slice(this.pos)) as RegExpExecArray;
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[2] === '' ? min + 2 : Number(m[2]);
      return this.take(m[0].length, { kind: 'repeat', node, min, max });
    }
    return node;
  }

  private take(n: number, node: Node): Node {
    this.pos += n;
    return node;
  }
}

/** Characters tried, in order, for a class outside any capture: plain ones first. */
const CLASS_CANDIDATES = ['a', 'z', '0', '1', '_', '-', '.', 'x'];

function classChar(source: string, rnd: Random): string {
  const re = new RegExp(`^${source}$`);
  const fits = CLASS_CANDIDATES.filter((c) => re.test(c));
  return fits.length > 0 ? rnd.pick(fits) : 'a';
}

/**
 * A pattern ready to make paths. `fill` is asked for the value of each named capture the
 * generated path passes through, with the capture's own regex source.
 */
export class PatternPaths {
  private readonly root: Node[][];

  constructor(readonly pattern: string) {
    this.root = new Parser(pattern).parse();
  }

  /** The names of every capture in the pattern. */
  captureNames(): string[] {
    const names: string[] = [];
    const walk = (node: Node): void => {
      if (node.kind === 'group') {
        if (node.name) names.push(node.name);
        node.alternatives.forEach((seq) => seq.forEach(walk));
      } else if (node.kind === 'repeat') walk(node.node);
    };
    this.root.forEach((seq) => seq.forEach(walk));
    return names;
  }

  generate(rnd: Random, fill: (name: string, source: string) => string): PathPart[] {
    const parts: PathPart[] = [];
    const emit = (node: Node): void => {
      switch (node.kind) {
        case 'text':
          parts.push({ text: node.text });
          break;
        case 'class':
          parts.push({ text: classChar(node.source, rnd) });
          break;
        case 'group':
          if (node.name) parts.push({ capture: node.name, value: fill(node.name, node.source) });
          else rnd.pick(node.alternatives).forEach(emit);
          break;
        case 'repeat': {
          const count = node.min + rnd.int(node.max - node.min + 1);
          for (let i = 0; i < count; i += 1) emit(node.node);
          break;
        }
      }
    };
    rnd.pick(this.root).forEach(emit);
    return parts;
  }
}
