import { api, until } from './cluster-fixture';

/** Helpers shared by the DR replication tests that run real server processes. */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export const DR = 'sys/replication/dr';

/** The DR status of one node; a status read must answer without waiting on the other cluster. */
export async function drStatus(addr: string, timeoutMs = 15_000): Promise<Json> {
  const r = await api(addr, 'GET', `${DR}/status`, { timeoutMs });
  if (r.status !== 200) throw new Error(`DR status on ${addr} answered ${r.status}: ${r.text}`);
  return r.json.data;
}

/** Waits until the secondary streams and holds everything the primary holds (same last WAL, same Merkle root). */
export async function inSync(primaryAddr: () => Promise<string>, secondaryAddr: () => Promise<string>, what: string, timeoutMs = 120_000): Promise<{ p: Json; s: Json }> {
  let seen: { p: Json; s: Json } = { p: null, s: null };
  try {
    return await until(what, timeoutMs, async () => {
      const p = await drStatus(await primaryAddr()).catch(() => null);
      const s = await drStatus(await secondaryAddr()).catch(() => null);
      seen = { p, s };
      if (!p || !s) return undefined;
      const same = s.state === 'stream-wals' && s.last_remote_wal === p.last_wal && s.merkle_root === p.merkle_root && p.merkle_root !== '';
      return same ? { p, s } : undefined;
    }, 200);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nlast primary status: ${JSON.stringify(seen.p)}\nlast secondary status: ${JSON.stringify(seen.s)}`, { cause: err });
  }
}

export async function writeSecret(addr: string, token: string, path: string, data: Record<string, unknown>): Promise<void> {
  const r = await api(addr, 'POST', `secret/data/${path}`, { token, body: { data } });
  if (r.status !== 200) throw new Error(`write ${path} answered ${r.status}: ${r.text}`);
}

/** A DR operation token made on `addr` from the key shares, decoded with the attempt's OTP. */
export async function operationToken(addr: string, keys: string[]): Promise<string> {
  const base = `${DR}/secondary/generate-operation-token`;
  await api(addr, 'DELETE', `${base}/attempt`);
  const attempt = await api(addr, 'POST', `${base}/attempt`, { body: {} });
  if (attempt.status !== 200) throw new Error(`generate-operation-token/attempt answered ${attempt.status}: ${attempt.text}`);
  const { nonce, otp } = attempt.json.data ?? attempt.json;
  let last: Json;
  for (const key of keys) {
    const r = await api(addr, 'POST', `${base}/update`, { body: { key, nonce } });
    if (r.status !== 200) throw new Error(`generate-operation-token/update answered ${r.status}: ${r.text}`);
    last = r.json.data ?? r.json;
    if (last.complete) break;
  }
  const encoded = Buffer.from(last.encoded_token as string, 'base64');
  const pad = Buffer.from(otp as string, 'utf8');
  return Buffer.from(encoded.map((b, i) => b ^ (pad[i] as number))).toString('utf8');
}

/** Writes `count` secrets under `load/` in parallel batches; returns those the primary acknowledged. */
export async function writeLoad(addr: () => Promise<string>, token: string, prefix: string, count: number): Promise<string[]> {
  const acknowledged: string[] = [];
  for (let i = 0; i < count; i += 10) {
    const batch = Array.from({ length: Math.min(10, count - i) }, (_, j) => i + j);
    await Promise.all(batch.map(async (n) => {
      try {
        await writeSecret(await addr(), token, `${prefix}/k${n}`, { n });
        acknowledged.push(`${prefix}/k${n}`);
      } catch {
        // Not acknowledged (a node died under it): not counted.
      }
    }));
  }
  return acknowledged;
}

/** Expects a 400 in the `{"errors": [...]}` shape whose message names `what` (a field or the rule). */
export function expect400(r: { status: number; json: Json; text: string }, what: RegExp): void {
  const errors: unknown = r.json?.errors;
  const message = Array.isArray(errors) ? errors.join('; ') : '';
  if (r.status !== 400 || message === '' || !what.test(message)) throw new Error(`expected a 400 matching ${what}, got ${r.status}: ${r.text}`);
}

/**
 * `it` for steps that build on each other: once one fails, the later ones fail at once instead
 * of each waiting out its own limits on a state that never comes.
 */
export function stepsInOrder(): (name: string, run: () => Promise<void>) => void {
  let failed: string | null = null;
  return (name, run) => {
    it(name, async () => {
      if (failed) throw new Error(`not run: the step "${failed}" failed`);
      failed = name;
      await run();
      failed = null;
    });
  };
}
