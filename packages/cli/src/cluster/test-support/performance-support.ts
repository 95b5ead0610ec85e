import { api, until } from './cluster-fixture';

/** Helpers shared by the performance replication tests that run real server processes. */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export async function replicationStatus(addr: string, kind: 'dr' | 'performance'): Promise<Json> {
  const r = await api(addr, 'GET', `sys/replication/${kind}/status`);
  if (r.status !== 200) throw new Error(`${kind} status answered ${r.status}: ${r.text}`);
  return r.json.data;
}

/** A root token made on `addr` from the primary's key shares (sys/generate-root with an OTP). */
export async function generateRoot(addr: string, keys: string[]): Promise<string> {
  await api(addr, 'DELETE', 'sys/generate-root/attempt');
  const attempt = await api(addr, 'POST', 'sys/generate-root/attempt', { body: {} });
  if (attempt.status !== 200) throw new Error(`generate-root attempt answered ${attempt.status}: ${attempt.text}`);
  const { nonce, otp } = attempt.json;
  let last = attempt;
  for (const key of keys) {
    last = await api(addr, 'POST', 'sys/generate-root/update', { body: { key, nonce } });
    if (last.status !== 200) throw new Error(`generate-root update answered ${last.status}: ${last.text}`);
    if (last.json.complete) break;
  }
  const encoded = Buffer.from(last.json.encoded_token, 'base64');
  const pad = Buffer.from(otp, 'utf8');
  return Buffer.from(encoded.map((b, i) => b ^ (pad[i] as number))).toString('utf8');
}

/**
 * Waits for a performance secondary to stream, unseals it with the primary's keys once it holds
 * the primary's keyring, and answers a root token made there from those keys.
 */
export async function followAndServe(addr: string, primaryKeys: string[]): Promise<string> {
  await until('the performance secondary to stream', 120_000, async () => {
    const st = await replicationStatus(addr, 'performance').catch(() => null);
    return st?.state === 'stream-wals' ? true : undefined;
  }, 250);
  await until('the performance secondary to serve with the primary\'s keys', 60_000, async () => {
    const seal = await api(addr, 'GET', 'sys/seal-status');
    if (seal.json.sealed) {
      for (const key of primaryKeys) await api(addr, 'POST', 'sys/unseal', { body: { key } });
    }
    const health = await api(addr, 'GET', 'sys/health');
    return health.status === 200 ? true : undefined;
  }, 500);
  return generateRoot(addr, primaryKeys);
}
