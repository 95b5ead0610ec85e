import sodium = require('libsodium-wrappers');
import type { Destination } from '../destination';
import type { SyncSettings } from '../destination-types';
import { DestinationError, MISSING, statusOf, type DestinationClient } from './destination-client';

interface PublicKey {
  key_id: string;
  key: string;
}

interface Reply {
  status: number;
  json: unknown;
}

/**
 * A repository's Actions secrets (or one deployment environment's) over the host's REST API.
 * The host takes a value only sealed (libsodium's sealed box) to the repository's or the
 * environment's current public key. Plain `fetch` rather than the host's SDK: that SDK is
 * ES modules only, which a CommonJS server could load only through a worker thread, and the
 * calls are four plain requests.
 */
export function repohostClient(d: Destination, settings: SyncSettings): DestinationClient {
  const c = d.connection as { access_token: string; repository_owner: string; repository_name: string; environment_name?: string };
  const repo = `${settings.repohostApiUrl.replace(/\/+$/, '')}/repos/${encodeURIComponent(c.repository_owner)}/${encodeURIComponent(c.repository_name)}`;
  const base = c.environment_name ? `${repo}/environments/${encodeURIComponent(c.environment_name)}/secrets` : `${repo}/actions/secrets`;
  let key: PublicKey | null = null;

  async function call(method: string, url: string, body?: unknown): Promise<Reply> {
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${c.access_token}`,
          accept: 'application/vnd.github+json',
          'user-agent': 'strongroom-secret-sync',
          'x-github-api-version': '2022-11-28',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new DestinationError('EXTERNAL_SERVICE_ERROR', `repohost: ${(err as Error).name}: the API could not be reached`);
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

  function failure(what: string, r: Reply): DestinationError {
    const message = (r.json as { message?: unknown } | null)?.message;
    return new DestinationError(statusOf(r.status), `repohost: ${what} answered ${r.status}${typeof message === 'string' ? `: ${message}` : ''}`);
  }

  async function publicKey(fresh: boolean): Promise<PublicKey> {
    if (key && !fresh) return key;
    const r = await call('GET', `${base}/public-key`);
    if (r.status !== 200) throw failure('reading the public key', r);
    const k = r.json as Partial<PublicKey> | null;
    if (typeof k?.key_id !== 'string' || typeof k.key !== 'string') throw new DestinationError('EXTERNAL_SERVICE_ERROR', 'repohost: the public key answer has no key_id and key');
    key = { key_id: k.key_id, key: k.key };
    return key;
  }

  async function write(name: string, value: string, fresh: boolean): Promise<Reply> {
    await sodium.ready;
    const k = await publicKey(fresh);
    let sealed: string;
    try {
      sealed = sodium.to_base64(sodium.crypto_box_seal(value, sodium.from_base64(k.key, sodium.base64_variants.ORIGINAL)), sodium.base64_variants.ORIGINAL);
    } catch {
      throw new DestinationError('EXTERNAL_SERVICE_ERROR', 'repohost: the public key is not a base64 X25519 key');
    }
    return call('PUT', `${base}/${encodeURIComponent(name)}`, { encrypted_value: sealed, key_id: k.key_id });
  }

  return {
    async put(name, value) {
      let r = await write(name, value, false);
      // The key may have been rotated since it was read: read it again, once.
      if (r.status === 422) r = await write(name, value, true);
      if (r.status !== 201 && r.status !== 204) throw failure('writing a secret', r);
    },
    async read(name) {
      // The host never gives a value back: only a secret gone missing can be seen.
      const r = await call('GET', `${base}/${encodeURIComponent(name)}`);
      if (r.status === 404) return MISSING;
      if (r.status !== 200) throw failure('reading a secret', r);
      return { exists: true, value: null };
    },
    async remove(name) {
      const r = await call('DELETE', `${base}/${encodeURIComponent(name)}`);
      if (r.status !== 204 && r.status !== 404) throw failure('deleting a secret', r);
    },
  };
}
