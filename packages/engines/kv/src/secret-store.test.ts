import { formatSignedDuration, formatTime, newMetadata, parseDeleteAfter, trimVersions, versionKey } from './secret-store';

describe('formatTime', () => {
  it('prints RFC 3339 the way Go does: no trailing zeros in the fraction', () => {
    expect(formatTime(Date.UTC(2026, 0, 1))).toBe('2026-01-01T00:00:00Z');
    expect(formatTime(Date.UTC(2026, 0, 1, 12, 30, 5, 120))).toBe('2026-01-01T12:30:05.12Z');
    expect(formatTime(Date.UTC(2026, 0, 1, 0, 0, 0, 7))).toBe('2026-01-01T00:00:00.007Z');
  });
});

describe('delete_version_after parsing and printing', () => {
  it.each([
    ['3h', 10800, '3h0m0s'], ['90s', 90, '1m30s'], [45, 45, '45s'], ['0s', 0, '0s'], ['', 0, '0s'],
    ['-1s', -1, '-1s'], [-60, -60, '-1m0s'], ['-1ms', -1, '-1s'],
  ])('%j is %d seconds, printed %s', (input, seconds, printed) => {
    expect(parseDeleteAfter('delete_version_after', input)).toBe(seconds);
    expect(formatSignedDuration(seconds)).toBe(printed);
  });

  it.each(['soon', '-', '1y', true, {}])('refuses %j naming the field', (input) => {
    expect(() => parseDeleteAfter('delete_version_after', input)).toThrow('"delete_version_after"');
  });
});

describe('trimVersions', () => {
  it('removes the oldest versions beyond the limit and moves oldest_version', () => {
    const meta = newMetadata(0);
    for (let v = 1; v <= 5; v++) meta.versions[String(v)] = { createdTime: 0, deletionTime: null, destroyed: false };
    meta.currentVersion = 5;
    expect(trimVersions(meta, 5)).toEqual([]);
    expect(meta.oldestVersion).toBe(0);
    expect(trimVersions(meta, 2)).toEqual([1, 2, 3]);
    expect(Object.keys(meta.versions)).toEqual(['4', '5']);
    expect(meta.oldestVersion).toBe(4);
  });
});

describe('versionKey', () => {
  it('keeps version data of nested secret paths in separate subtrees', () => {
    const a = versionKey('a', 1);
    const nested = versionKey('a/1', 1);
    expect(a).toMatch(/^versions\/[0-9a-f]{64}\/1$/);
    expect(nested.startsWith(a.slice(0, -1))).toBe(false);
  });
});
