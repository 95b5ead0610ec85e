import type * as Sodium from 'libsodium-wrappers';
import type { Destination } from '../destination';
import type { SyncSettings } from '../destination-types';
import { DestinationError, MISSING, statusOf, type DestinationClient } from './destination-client';
import { OctokitCallError, octokitWorker } from './octokit-worker';

interface PublicKey {
  key_id: string;
  key: string;
}

/**
 * A repository's Actions secrets (or one deployment environment's) through the host's SDK
 * (@octokit/rest, in a worker thread: see octokit-worker.ts). The host takes a value only
 * sealed (libsodium's sealed box) to the repository's or the environment's current public key.
 */
export function repohostClient(d: Destination, settings: SyncSettings): DestinationClient {
  const c = d.connection as { access_token: string; repository_owner: string; repository_name: string; environment_name?: string };
  const baseUrl = settings.repohostApiUrl.replace(/\/+$/, '');
  const env = c.environment_name ? c.environment_name : undefined;
  const where = { owner: c.repository_owner, repo: c.repository_name, ...(env ? { environment_name: env } : {}) };
  let key: PublicKey | null = null;

  async function call(method: string, params: Record<string, unknown>): Promise<{ status: number; data: unknown }> {
    try {
      return await octokitWorker().call(c.access_token, baseUrl, method, { ...where, ...params });
    } catch (err) {
      if (err instanceof OctokitCallError && err.status !== undefined) return { status: err.status, data: { message: err.message } };
      throw new DestinationError('EXTERNAL_SERVICE_ERROR', `repohost: ${(err as Error).name}: the API could not be reached`);
    }
  }

  function failure(what: string, r: { status: number; data: unknown }): DestinationError {
    const message = (r.data as { message?: unknown } | null)?.message;
    return new DestinationError(statusOf(r.status), `repohost: ${what} answered ${r.status}${typeof message === 'string' ? `: ${message}` : ''}`);
  }

  async function publicKey(fresh: boolean): Promise<PublicKey> {
    if (key && !fresh) return key;
    const r = await call(env ? 'actions.getEnvironmentPublicKey' : 'actions.getRepoPublicKey', {});
    if (r.status !== 200) throw failure('reading the public key', r);
    const k = r.data as Partial<PublicKey> | null;
    if (typeof k?.key_id !== 'string' || typeof k.key !== 'string') throw new DestinationError('EXTERNAL_SERVICE_ERROR', 'repohost: the public key answer has no key_id and key');
    key = { key_id: k.key_id, key: k.key };
    return key;
  }

  async function write(name: string, value: string, fresh: boolean): Promise<{ status: number; data: unknown }> {
    // Loaded for the first secret written, not when a server starts.
    const sodium = require('libsodium-wrappers') as typeof Sodium;
    await sodium.ready;
    const k = await publicKey(fresh);
    let sealed: string;
    try {
      sealed = sodium.to_base64(sodium.crypto_box_seal(value, sodium.from_base64(k.key, sodium.base64_variants.ORIGINAL)), sodium.base64_variants.ORIGINAL);
    } catch {
      throw new DestinationError('EXTERNAL_SERVICE_ERROR', 'repohost: the public key is not a base64 X25519 key');
    }
    return call(env ? 'actions.createOrUpdateEnvironmentSecret' : 'actions.createOrUpdateRepoSecret', { secret_name: name, encrypted_value: sealed, key_id: k.key_id });
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
      const r = await call(env ? 'actions.getEnvironmentSecret' : 'actions.getRepoSecret', { secret_name: name });
      if (r.status === 404) return MISSING;
      if (r.status !== 200) throw failure('reading a secret', r);
      return { exists: true, value: null };
    },
    async remove(name) {
      const r = await call(env ? 'actions.deleteEnvironmentSecret' : 'actions.deleteRepoSecret', { secret_name: name });
      if (r.status !== 204 && r.status !== 404) throw failure('deleting a secret', r);
    },
  };
}
