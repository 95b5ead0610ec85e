import { BadRequestError } from './errors';
import { checkPathName, MAX_NAME_BYTES } from './path-names';

function refusal(name: unknown): string {
  try {
    checkPathName('path', name);
  } catch (err) {
    expect(err).toBeInstanceOf(BadRequestError);
    return (err as BadRequestError).message;
  }
  throw new Error(`expected ${JSON.stringify(name)} to be refused`);
}

describe('checkPathName', () => {
  it('accepts ordinary names, with segments and non-ASCII text', () => {
    for (const name of ['secret', 'team/app/', 'a.b', '...', 'ünïcødé', 'emoji-\u{1F511}', 'x'.repeat(MAX_NAME_BYTES)]) {
      expect(() => checkPathName('path', name)).not.toThrow();
    }
  });

  it.each([
    ['a NUL byte', 'a\u0000b', /"path": must not contain NUL/],
    ['a newline', 'a\nb', /"path": must not contain NUL or other control/],
    ['a C1 control', 'a\u0085b', /"path": must not contain NUL or other control/],
    ['a lone high surrogate', 'a\ud800b', /"path": must be valid Unicode/],
    ['a lone low surrogate', '\udc00', /"path": must be valid Unicode/],
    ['a "." segment', 'a/./b', /"path": must not contain "\." or "\.\."/],
    ['a ".." segment', '../../x', /"path": must not contain "\." or "\.\."/],
    ['the name "."', '.', /"path": must not contain "\." or "\.\."/],
    ['a name over the byte limit', 'x'.repeat(MAX_NAME_BYTES + 1), /"path": 257 bytes is longer than the limit of 256/],
    ['a name over the byte limit in UTF-8', 'é'.repeat(129), /"path": 258 bytes/],
    ['a number', 1e400, /"path": must be a string/],
    ['a boolean', true, /"path": must be a string/],
  ])('refuses %s, naming the field', (_what, name, message) => {
    expect(refusal(name)).toMatch(message);
  });

  it('does not quote the name it refuses', () => {
    expect(refusal(`${'y'.repeat(1000)}\u0000`)).not.toContain('yyy');
  });
});
