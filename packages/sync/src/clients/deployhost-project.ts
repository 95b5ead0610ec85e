import type { Destination } from '../destination';
import type { SyncSettings } from '../destination-types';
import { DestinationError, MISSING, statusOf, type DestinationClient } from './destination-client';

interface EnvVar {
  id: string;
  key: string;
  value?: string;
  type?: string;
  target?: string[];
  decrypted?: boolean;
}

/**
 * The deployment host's project environment variables over its REST API: one variable per
 * external name, on every environment the destination lists. The API's address is an operator
 * setting.
 */
export function deployhostProjectClient(d: Destination, settings: SyncSettings): DestinationClient {
  const c = d.connection as { access_token: string; project_id: string; team_id?: string; deployment_environments: string[] };
  const base = settings.deployhostApiUrl.replace(/\/+$/, '');
  const query = c.team_id ? `?teamId=${encodeURIComponent(c.team_id)}` : '';
  const project = encodeURIComponent(c.project_id);

  async function call(method: string, path: string, body?: unknown, params = ''): Promise<{ status: number; json: unknown }> {
    const sep = query ? '&' : '?';
    let res: Response;
    try {
      res = await fetch(`${base}${path}${query}${params ? sep + params : ''}`, {
        method,
        headers: { authorization: `Bearer ${c.access_token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new DestinationError('EXTERNAL_SERVICE_ERROR', `deployhost-project: ${(err as Error).name}: the API could not be reached`);
    }
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // Not JSON: only the status says anything.
    }
    return { status: res.status, json };
  }

  function failure(what: string, r: { status: number; json: unknown }): DestinationError {
    const error = (r.json as { error?: { code?: string; message?: string } } | null)?.error;
    return new DestinationError(statusOf(r.status), `deployhost-project: ${what} answered ${r.status}${error ? `: ${error.code ?? ''} ${error.message ?? ''}`.trimEnd() : ''}`);
  }

  return {
    async put(name, value) {
      const r = await call('POST', `/v10/projects/${project}/env`, { key: name, value, type: 'encrypted', target: c.deployment_environments }, 'upsert=true');
      if (r.status >= 300) throw failure('writing a variable', r);
    },
    async read(name) {
      const list = await call('GET', `/v10/projects/${project}/env`, undefined, 'decrypt=true');
      if (list.status === 404) return MISSING;
      if (list.status >= 300) throw failure('listing variables', list);
      const envs = ((list.json as { envs?: EnvVar[] } | null)?.envs ?? []).filter((e) => e.key === name);
      const covered = new Set(envs.flatMap((e) => e.target ?? []));
      // A sensitive value never comes back, an encrypted one only decrypted.
      const values = new Set(envs.map((e) => (e.type === 'sensitive' || (e.type === 'encrypted' && !e.decrypted) || typeof e.value !== 'string' ? null : e.value)));
      // An environment left out, or environments that disagree, is as good as missing: a put writes every one again.
      if (envs.length === 0 || !c.deployment_environments.every((t) => covered.has(t)) || values.size !== 1) return MISSING;
      return { exists: true, value: [...values][0] ?? null };
    },
    async remove(name) {
      const list = await call('GET', `/v10/projects/${project}/env`);
      if (list.status === 404) return;
      if (list.status >= 300) throw failure('listing variables', list);
      const envs = ((list.json as { envs?: EnvVar[] } | null)?.envs ?? []).filter((e) => e.key === name);
      for (const env of envs) {
        const r = await call('DELETE', `/v9/projects/${project}/env/${encodeURIComponent(env.id)}`);
        if (r.status >= 300 && r.status !== 404) throw failure('deleting a variable', r);
      }
    },
  };
}
