import { BadRequestError } from '@strongroom/core';
import { changedFilters, dynamicFilter, filterAllowsKey, mountUuidOf, parsePathsFilter } from './paths-filter';

const MOUNTS = [
  { uuid: 'u1', path: 'secret/', namespace: '' },
  { uuid: 'u2', path: 'auth/userpass/', namespace: '' },
  { uuid: 'u3', path: 'team/kv/', namespace: 'team/' },
];
const NAMESPACES = ['', 'team/', 'other/'];
const byUuid = (uuid: string) => MOUNTS.find((m) => m.uuid === uuid);

it('maps a data key to its mount, and leaves every other key to pass', () => {
  expect(mountUuidOf('logical/u1/data/x')).toBe('u1');
  expect(mountUuidOf('auth/u2/user/bob')).toBe('u2');
  expect(mountUuidOf('core/mounts')).toBeNull();
  const deny = { mode: 'deny' as const, paths: ['secret/', 'team/'] };
  expect(filterAllowsKey(deny, 'logical/u1/data/x', byUuid)).toBe(false);
  expect(filterAllowsKey(deny, 'logical/u3/data/x', byUuid)).toBe(false);
  expect(filterAllowsKey(deny, 'auth/u2/user/bob', byUuid)).toBe(true);
  expect(filterAllowsKey(deny, 'core/mounts', byUuid)).toBe(true);
  const allow = { mode: 'allow' as const, paths: ['auth/userpass/'] };
  expect(filterAllowsKey(allow, 'logical/u1/data/x', byUuid)).toBe(false);
  expect(filterAllowsKey(allow, 'auth/u2/user/bob', byUuid)).toBe(true);
  expect(filterAllowsKey(allow, 'core/policy/default', byUuid)).toBe(true);
});

it('checks mode and paths, and warns about a path that names nothing yet', () => {
  expect(() => parsePathsFilter('block', ['secret/'], MOUNTS, NAMESPACES)).toThrow(new BadRequestError('invalid value for "mode": expected "allow" or "deny"'));
  expect(() => parsePathsFilter('deny', [], MOUNTS, NAMESPACES)).toThrow(/"paths"/);
  expect(() => parsePathsFilter('deny', ['a/../b'], MOUNTS, NAMESPACES)).toThrow(/"paths"/);
  expect(() => parsePathsFilter('deny', [3], MOUNTS, NAMESPACES)).toThrow(/"paths": item 0/);
  const { filter, warnings } = parsePathsFilter('deny', ['/secret', 'team/', 'nothing-here'], MOUNTS, NAMESPACES);
  expect(filter).toEqual({ mode: 'deny', paths: ['secret/', 'team/', 'nothing-here/'] });
  expect(warnings).toEqual(['"nothing-here/" names no mount or namespace yet; the filter applies to it once it exists']);
});

it('shows the mounts and namespaces a filter keeps away', () => {
  expect(dynamicFilter(null, MOUNTS, NAMESPACES)).toEqual({ dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] });
  expect(dynamicFilter({ mode: 'deny', paths: ['team/'] }, MOUNTS, NAMESPACES)).toEqual({ dynamic_filtered_mounts: ['team/kv/'], dynamic_filtered_namespaces: ['team/'] });
  expect(dynamicFilter({ mode: 'allow', paths: ['team/kv/'] }, MOUNTS, NAMESPACES)).toEqual({
    dynamic_filtered_mounts: ['auth/userpass/', 'secret/'], dynamic_filtered_namespaces: ['other/'],
  });
});

describe('changedFilters', () => {
  const allow = { mode: 'allow' as const, paths: ['secret/'] };
  const deny = { mode: 'deny' as const, paths: ['secret/'] };

  it('names the secondaries whose filter was set, changed or removed since the last reading', () => {
    expect(changedFilters({ a: allow, b: allow, c: allow }, { a: allow, b: deny, d: deny }).sort()).toEqual(['b', 'c', 'd']);
    expect(changedFilters({}, {})).toEqual([]);
  });

  it('names none against no earlier reading: a node that starts has missed no change', () => {
    expect(changedFilters(null, { a: allow, b: deny })).toEqual([]);
  });
});
