import { call, errorsOf, must, poll } from '../node-api';
import type { DrillCluster, DrillNode } from './target';

/** Reads and operations on a cluster's replication roles, as any operator would make them over the API. */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export const DR = 'sys/replication/dr';
export const PERF = 'sys/replication/performance';

export async function replicationStatus(addr: string, kind: 'dr' | 'performance'): Promise<Json> {
  const r = await call(addr, 'GET', `sys/replication/${kind}/status`, { timeoutMs: 5_000 });
  if (r.status !== 200) throw new Error(`${kind} status on ${addr} answered ${errorsOf(r)}`);
  return r.json.data;
}

/**
 * The first node of the cluster whose API answers. Operations on a DR secondary are sent there
 * once (any node hands them to its leader): retrying one elsewhere after the server refused it
 * would only repeat the refusal, or spend a one-time token.
 */
export async function answeringNode(cluster: DrillCluster): Promise<DrillNode> {
  for (const n of cluster.nodes) {
    const r = await call(n.apiAddr, 'GET', 'sys/seal-status', { timeoutMs: 3_000 }).catch(() => null);
    if (r?.status === 200) return n;
  }
  throw new Error(`no node of the ${cluster.name} cluster answers`);
}

export async function drMode(cluster: DrillCluster): Promise<string> {
  return (await replicationStatus((await answeringNode(cluster)).apiAddr, 'dr')).mode as string;
}

/** The cluster's active node, once one serves (sys/health 200). */
export async function activeNode(cluster: DrillCluster, timeoutMs: number): Promise<DrillNode> {
  return poll(`an active node in the ${cluster.name} cluster`, timeoutMs, async () => {
    for (const n of cluster.nodes) {
      const h = await call(n.apiAddr, 'GET', 'sys/health', { timeoutMs: 3_000 }).catch(() => null);
      if (h?.status === 200) return n;
    }
    return undefined;
  }, 250);
}

/** The node of a DR secondary that streams from its primary (its Raft leader), with its status. */
export async function streamingSecondary(cluster: DrillCluster, timeoutMs: number, secondaryId?: string): Promise<{ node: DrillNode; status: Json }> {
  return poll(`the ${cluster.name} cluster to stream from its primary`, timeoutMs, async () => {
    for (const n of cluster.nodes) {
      const s = await replicationStatus(n.apiAddr, 'dr').catch(() => null);
      if (s?.mode === 'secondary' && s.state === 'stream-wals' && s.connection_state === 'ready' && (secondaryId === undefined || s.secondary_id === secondaryId)) {
        return { node: n, status: s };
      }
    }
    return undefined;
  }, 250);
}

/**
 * Waits until the secondary streams and holds the primary's WALs up to the primary's last_wal
 * as read first: every write acknowledged before the call is then on the secondary. Later
 * writes (lease expiry, a forwarded write) need not be waited for, so a busy primary does not
 * keep this from ending. With `secondaryId`, only a stream under that ID counts (not a status
 * left from before an update-primary).
 */
export async function caughtUp(primary: DrillCluster, secondary: DrillCluster, timeoutMs: number, secondaryId?: string): Promise<{ lastWal: number; lastRemoteWal: number }> {
  const active = await activeNode(primary, timeoutMs);
  const lastWal = (await replicationStatus(active.apiAddr, 'dr')).last_wal as number;
  let seen = -1;
  try {
    return await poll(`the ${secondary.name} cluster to hold the ${primary.name} cluster's WALs up to ${lastWal}`, timeoutMs, async () => {
      const { status: s } = await streamingSecondary(secondary, 5_000, secondaryId);
      seen = s.last_remote_wal as number;
      return seen >= lastWal ? { lastWal, lastRemoteWal: seen } : undefined;
    }, 200);
  } catch (err) {
    throw new Error(`${(err as Error).message}${seen >= 0 ? `; last_remote_wal was ${seen}` : ''}`, { cause: err });
  }
}

/** XORs the encoded token with the attempt's one-time pad, as `operator generate-root -decode` does. */
function decode(encoded: string, otp: string): string {
  const bytes = Buffer.from(encoded, 'base64');
  const pad = Buffer.from(otp, 'utf8');
  return Buffer.from(bytes.map((b, i) => b ^ (pad[i] ?? 0))).toString('utf8');
}

/**
 * Runs a generate-root style attempt at `base` (`sys/generate-root` or a DR secondary's
 * generate-operation-token) with the key shares and returns the decoded token. An attempt
 * left over from an earlier run is cancelled first.
 */
async function generate(addr: string, base: string, keyShares: string[], what: string): Promise<string> {
  await call(addr, 'DELETE', `${base}/attempt`);
  const attempt = await must(`starting the ${what} attempt`, addr, 'POST', `${base}/attempt`, { body: {} });
  const { nonce, otp } = attempt.json.data ?? attempt.json;
  for (const key of keyShares) {
    const r = await must(`giving a key share to the ${what} attempt`, addr, 'POST', `${base}/update`, { body: { key, nonce } });
    const progress = r.json.data ?? r.json;
    if (progress.complete) return decode(progress.encoded_token as string, otp as string);
  }
  throw new Error(`the ${what} attempt on ${addr} was not complete after ${keyShares.length} key shares: are they the primary's?`);
}

/** A DR operation token made on a DR secondary from the key shares (forwarded to its leader by any node). */
export function drOperationToken(addr: string, keyShares: string[]): Promise<string> {
  return generate(addr, `${DR}/secondary/generate-operation-token`, keyShares, 'DR operation token');
}

/** A root token made on a cluster from the key shares (a performance secondary keeps its own tokens). */
export function generateRoot(addr: string, keyShares: string[]): Promise<string> {
  return generate(addr, 'sys/generate-root', keyShares, 'root token');
}

/**
 * Unseals a restarted node that needs the shares by hand (a Shamir seal); a node with an
 * auto-unseal unseals itself, so it is only waited for.
 */
export async function unsealed(node: DrillNode, keyShares: string[], timeoutMs: number): Promise<void> {
  await poll(`${node.name} to answer and be unsealed`, timeoutMs, async () => {
    const seal = await call(node.apiAddr, 'GET', 'sys/seal-status', { timeoutMs: 3_000 });
    if (seal.status !== 200) return undefined;
    if (!seal.json.sealed) return true;
    if (seal.json.type === 'shamir' && seal.json.initialized) {
      for (const key of keyShares) {
        const r = await call(node.apiAddr, 'POST', 'sys/unseal', { body: { key } });
        if (r.status === 200 && !r.json.sealed) return true;
      }
    }
    return undefined;
  }, 500);
}
