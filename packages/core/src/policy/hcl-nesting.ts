/**
 * How deeply an HCL document nests, found without parsing it. The HCL parser recurses once per
 * level: a few thousand levels fit in a small policy and cost it seconds, overflow its stack, or
 * leave its runtime broken. A real policy nests three or four levels (a path block, a parameter
 * block, a list), so a cheap scan can refuse the rest before the parser sees them.
 *
 * Counted: braces, brackets and parentheses in expressions, and `${`/`%{` template sequences in
 * quoted strings and heredocs (an expression can nest inside one). Text in strings, heredocs and
 * comments is skipped otherwise. The scan is forgiving: malformed input is left to the parser.
 */

type Frame = { kind: 'open'; close: string } | { kind: 'string' } | { kind: 'heredoc'; marker: string } | { kind: 'template' };

const OPENERS: Readonly<Record<string, string>> = { '{': '}', '[': ']', '(': ')' };
const HEREDOC_START = /<<-?([A-Za-z_][A-Za-z0-9_-]*)\r?\n/y;

/** The greatest number of nested brackets and template sequences open at once. */
export function hclNestingDepth(text: string): number {
  const stack: Frame[] = [];
  let depth = 0;
  let max = 0;
  const push = (frame: Frame): void => {
    stack.push(frame);
    if (frame.kind === 'open' || frame.kind === 'template') {
      depth++;
      if (depth > max) max = depth;
    }
  };
  const pop = (): void => {
    const frame = stack.pop();
    if (frame && (frame.kind === 'open' || frame.kind === 'template')) depth--;
  };

  let i = 0;
  while (i < text.length) {
    const top = stack[stack.length - 1];
    const c = text[i] as string;
    if (top?.kind === 'string' || top?.kind === 'heredoc') {
      if (top.kind === 'heredoc' && (i === 0 || text[i - 1] === '\n')) {
        const end = text.indexOf('\n', i);
        const line = text.slice(i, end === -1 ? text.length : end);
        if (line.trim() === top.marker) {
          pop();
          i += line.length;
          continue;
        }
      }
      if (top.kind === 'string' && c === '\\') {
        i += 2;
      } else if (top.kind === 'string' && (c === '"' || c === '\n')) {
        pop();
        i++;
      } else if ((c === '$' || c === '%') && text[i + 1] === c && text[i + 2] === '{') {
        i += 3; // `$${` and `%%{` are literal text.
      } else if ((c === '$' || c === '%') && text[i + 1] === '{') {
        push({ kind: 'template' });
        i += 2;
      } else {
        i++;
      }
      continue;
    }
    // In an expression: the top level, a bracket, or a template sequence.
    if (c === '#' || (c === '/' && text[i + 1] === '/')) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end + 1;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end === -1 ? text.length : end + 2;
    } else if (c === '"') {
      push({ kind: 'string' });
      i++;
    } else if (c === '<' && text[i + 1] === '<') {
      HEREDOC_START.lastIndex = i;
      const m = HEREDOC_START.exec(text);
      if (m) {
        push({ kind: 'heredoc', marker: m[1] as string });
        i += m[0].length;
      } else {
        i += 2;
      }
    } else if (OPENERS[c] !== undefined) {
      push({ kind: 'open', close: OPENERS[c] as string });
      i++;
    } else if (c === '}' && top?.kind === 'template') {
      pop();
      i++;
    } else if (top?.kind === 'open' && c === top.close) {
      pop();
      i++;
    } else {
      i++;
    }
  }
  return max;
}
