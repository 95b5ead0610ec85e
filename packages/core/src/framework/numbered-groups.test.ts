import { capturesOf, numberGroups } from './numbered-groups';

/** What a match of the pattern as written captures, by name, without groups that took no part. */
function namedCaptures(pattern: string, path: string): Record<string, string> | null {
  const m = new RegExp(`^(?:${pattern})$`).exec(path);
  if (!m) return null;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.groups ?? {})) if (v !== undefined) out[k] = v;
  return out;
}

function numberedCaptures(pattern: string, path: string): Record<string, string> | null {
  const numbered = numberGroups(pattern);
  if (!numbered) throw new Error('not numbered');
  const m = new RegExp(`^(?:${numbered.source})$`).exec(path);
  return m ? capturesOf(m, numbered.names) : null;
}

describe('path patterns with numbered groups', () => {
  const cases: Array<[string, string[]]> = [
    ['encrypt/(?<name>\\w(([\\w-.@]+)?\\w)?)', ['encrypt/app', 'encrypt/a-b.c', 'encrypt/', 'encrypt/a/b']],
    ['keys/(?<name>[^/]+)(/(?<version>\\d+))?', ['keys/k', 'keys/k/3', 'keys/k/x']],
    ['(?<path>.+?)/(?:config|tune)(?<rest>[(?<x>)\\]]*)', ['a/b/config', 'a/tune(?<x>)]', 'nothing']],
    ['data/(?<path>.*)', ['data/', 'data/a/b%20c']],
    ['(a)|(?<only>b)', ['a', 'b']],
    ['lit\\(?<not>x\\)', ['lit(?<not>x)', 'litx)']],
    ['(?:(?<=x)y|(?<!z)(?<w>w))', ['w', 'y']],
  ];
  it.each(cases)('captures what the named pattern %s captures', (pattern, paths) => {
    for (const path of paths) expect([path, numberedCaptures(pattern, path)]).toEqual([path, namedCaptures(pattern, path)]);
  });

  it('keeps the pattern as written when it refers back to a group by name', () => {
    expect(numberGroups('(?<a>x)\\k<a>')).toBeNull();
  });

  it('leaves character classes, escapes and lookarounds as they are', () => {
    expect(numberGroups('[(?<a>)](?<b>x)\\(?<c>(?=y)(?<!z)')).toEqual({ source: '[(?<a>)](x)\\(?<c>(?=y)(?<!z)', names: ['b'] });
  });
});
