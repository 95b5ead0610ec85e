import { ApiError, api } from './client';

export interface SecretMount {
  /** With its trailing slash, as the API names it: `secret/`. */
  path: string;
  type: string;
  version: string;
  description: string;
}

interface MountEntry {
  type?: string;
  description?: string;
  options?: { version?: string } | null;
}

function toMounts(table: Record<string, unknown>): SecretMount[] {
  return Object.entries(table)
    .filter(([path, v]) => path.endsWith('/') && typeof v === 'object' && v !== null && 'type' in v)
    .map(([path, v]) => {
      const m = v as MountEntry;
      return { path, type: m.type ?? '', version: m.options?.version ?? '1', description: m.description ?? '' };
    })
    .sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * The token's secret mounts: `sys/mounts` when it may read it, otherwise the UI's own listing,
 * which shows only the mounts the token has a grant under.
 */
export async function secretMounts(): Promise<SecretMount[]> {
  try {
    const res = await api.read<Record<string, unknown>>('sys/mounts');
    return toMounts(res?.data ?? {});
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) throw err;
    const res = await api.read<{ secret?: Record<string, unknown> }>('sys/internal/ui/mounts');
    return toMounts(res?.data.secret ?? {});
  }
}

export const isKv2 = (m: SecretMount) => (m.type === 'kv' && m.version === '2') || m.type === 'kv-v2';
export const isTransit = (m: SecretMount) => m.type === 'transit';

/** A mount's name in one URL segment (a mount may have slashes inside). */
export function mountSegment(mountPath: string): string {
  return encodeURIComponent(mountPath.replace(/\/+$/, ''));
}

/** A secret's path for the API: each segment encoded, slashes kept. */
export function apiPath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}
