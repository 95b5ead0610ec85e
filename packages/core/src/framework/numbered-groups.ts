/**
 * A path pattern with its named groups turned into numbered ones, and the name of each group by
 * number. A regex with named groups builds a `groups` object on every match; reading the numbered
 * results instead saves that object for every request routed.
 */
export interface NumberedPattern {
  source: string;
  /** One entry per capturing group, in order: its name, or undefined for an unnamed group. */
  names: Array<string | undefined>;
}

const NAMED_GROUP = /^\?<([A-Za-z_$][\w$]*)>/;

/** Null when the pattern refers back to a group by name, which only a named group can serve. */
export function numberGroups(pattern: string): NumberedPattern | null {
  if (pattern.includes('\\k<')) return null;
  let source = '';
  const names: Array<string | undefined> = [];
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      source += pattern.slice(i, i + 2);
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      source += c;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') {
      if (pattern[i + 1] !== '?') names.push(undefined);
      else {
        const named = NAMED_GROUP.exec(pattern.slice(i + 1));
        if (named) {
          names.push(named[1]);
          source += '(';
          i += named[0].length;
          continue;
        }
      }
    }
    source += c;
  }
  return { source, names };
}

/** The named captures of a match of a numbered pattern, leaving out groups that took no part. */
export function capturesOf(match: RegExpExecArray, names: ReadonlyArray<string | undefined>): Record<string, string> {
  const captures: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const value = match[i + 1];
    if (name !== undefined && value !== undefined) captures[name] = value;
  }
  return captures;
}
