import { api } from './client';

export type Capability = 'create' | 'read' | 'update' | 'patch' | 'delete' | 'list' | 'sudo' | 'root' | 'deny';

/** A route or control is allowed when the token has at least one of `any` on `path`. */
export interface Need {
  path: string;
  any: Capability[];
}

export type CapabilityMap = Record<string, string[]>;

/** One `sys/capabilities-self` call for many paths (relative to the session's namespace). */
export async function fetchCapabilities(paths: string[]): Promise<CapabilityMap> {
  const unique = [...new Set(paths)];
  if (unique.length === 0) return {};
  const res = await api.write<Record<string, unknown>>('sys/capabilities-self', { paths: unique });
  const map: CapabilityMap = {};
  const data = (res?.data ?? res ?? {}) as Record<string, unknown>;
  for (const path of unique) {
    const caps = data[path];
    map[path] = Array.isArray(caps) ? caps.map(String) : [];
  }
  return map;
}

export function allows(map: CapabilityMap, needs: Need[] | undefined): boolean {
  return (needs ?? []).every((need) => {
    const caps = map[need.path] ?? [];
    if (caps.includes('deny')) return false;
    return caps.includes('root') || need.any.some((c) => caps.includes(c));
  });
}
