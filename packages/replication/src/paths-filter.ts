import { BadRequestError } from '@strongroom/core';
import type { PathsFilter } from './role-state';

/** A mount as a paths filter sees it: its full path (namespace, then `auth/` for auth methods) and its namespace. */
export interface FilterMount {
  uuid: string;
  path: string;
  namespace: string;
}

/** Where mounts keep their data: `logical/<uuid>/...` and `auth/<uuid>/...`. */
const DATA_AREAS = ['logical/', 'auth/'];

/** The UUID of the mount whose data `key` is, if it is a mount's data. */
export function mountUuidOf(key: string): string | null {
  for (const area of DATA_AREAS) {
    if (!key.startsWith(area)) continue;
    const end = key.indexOf('/', area.length);
    return end > area.length ? key.slice(area.length, end) : null;
  }
  return null;
}

function matches(paths: readonly string[], path: string): boolean {
  return paths.some((p) => path.startsWith(p));
}

/** Whether a filter lets a secondary hold a mount's data: `allow` names what it gets, `deny` what it does not. */
export function filterAllowsMount(filter: PathsFilter, mount: Pick<FilterMount, 'path'>): boolean {
  const named = matches(filter.paths, mount.path);
  return filter.mode === 'allow' ? named : !named;
}

/**
 * Keys that are no mount's data (mount tables, policies, the keyring) always pass: the
 * secondary needs them all to serve the mounts it does get.
 */
export function filterAllowsKey(filter: PathsFilter, key: string, mountOf: (uuid: string) => FilterMount | undefined): boolean {
  const uuid = mountUuidOf(key);
  if (uuid === null) return true;
  const mount = mountOf(uuid);
  // A mount the tables do not know (being removed): its data goes nowhere new.
  if (!mount) return filter.mode === 'deny';
  return filterAllowsMount(filter, mount);
}

/** A filter path as stored: no leading slash, one trailing slash. */
export function normalizeFilterPath(raw: unknown, at: number): string {
  if (typeof raw !== 'string') throw new BadRequestError(`invalid value for "paths": item ${at} is not a string`);
  const trimmed = raw.trim().replace(/^\/+/, '').replace(/\/+$/, '');
  if (trimmed === '' || trimmed.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')) {
    throw new BadRequestError(`invalid value for "paths": "${raw}" is not a mount or namespace path`);
  }
  return `${trimmed}/`;
}

/** Checks `mode` and `paths` of a filter request; a path naming no mount or namespace is kept, with a warning (as Vault does). */
export function parsePathsFilter(mode: unknown, paths: unknown, mounts: readonly FilterMount[], namespaces: readonly string[]): { filter: PathsFilter; warnings: string[] } {
  if (mode !== 'allow' && mode !== 'deny') throw new BadRequestError('invalid value for "mode": expected "allow" or "deny"');
  const list = typeof paths === 'string' ? paths.split(',').map((p) => p.trim()).filter((p) => p !== '') : paths;
  if (!Array.isArray(list) || list.length === 0) throw new BadRequestError('missing required field "paths": give at least one mount or namespace path');
  const normalized = [...new Set(list.map((p, i) => normalizeFilterPath(p, i)))];
  const warnings = normalized
    .filter((p) => !mounts.some((m) => m.path === p) && !namespaces.includes(p))
    .map((p) => `"${p}" names no mount or namespace yet; the filter applies to it once it exists`);
  return { filter: { mode, paths: normalized }, warnings };
}

/** The mounts and namespaces a filter keeps from a secondary, given the mounts and namespaces there are. */
export function dynamicFilter(filter: PathsFilter | null, mounts: readonly FilterMount[], namespaces: readonly string[]): Record<string, string[]> {
  if (!filter) return { dynamic_filtered_mounts: [], dynamic_filtered_namespaces: [] };
  const excludedMounts = mounts.filter((m) => !filterAllowsMount(filter, m)).map((m) => m.path).sort();
  const excludedNamespaces = namespaces.filter((ns) => {
    if (ns === '') return false;
    const named = matches(filter.paths, ns);
    // Under `allow`, a namespace is kept when it is named or holds something named.
    return filter.mode === 'allow' ? !named && !filter.paths.some((p) => p.startsWith(ns)) : named;
  }).sort();
  return { dynamic_filtered_mounts: excludedMounts, dynamic_filtered_namespaces: excludedNamespaces };
}

/**
 * The secondaries whose filter differs between two readings of a primary's filters (set, changed
 * or removed). Against no earlier reading (the node's first, at start) none: a secondary syncs
 * again only for a change it may have missed, not each time the primary's node starts.
 */
export function changedFilters(before: Record<string, PathsFilter> | null, after: Record<string, PathsFilter>): string[] {
  if (before === null) return [];
  return [...new Set([...Object.keys(after), ...Object.keys(before)])]
    .filter((id) => JSON.stringify(after[id] ?? null) !== JSON.stringify(before[id] ?? null));
}
