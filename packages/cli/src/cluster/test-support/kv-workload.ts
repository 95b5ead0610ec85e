import type { HistoryRecorder, RegisterValue } from '../../../../raft/src/test-support/linearizability';
import type { Random } from '../../../../raft/src/test-support/seeded-random';

/**
 * Clients that put, get and delete plain values in a KV v1 mount through the HTTP API, each
 * request to a node chosen at random, recording every operation for the linearizability
 * checker. Written values are unique (client name and sequence number), which the checker
 * needs to be exact.
 *
 * How an answer is recorded:
 *  - 2xx (and a read's 404): completed, with the value read.
 *  - 4xx: definitely failed (the server refused it before it took effect).
 *  - 5xx that the server uses only before touching storage (sealed, no active node known, the
 *    pre-request leadership gate), or a connection refused before anything was sent: failed.
 *  - any other 5xx (a proposal whose leader stepped down, a forward whose connection broke),
 *    a reset connection, a timeout: unknown — it may have taken effect, now or later.
 */

export interface WorkloadOptions {
  recorder: HistoryRecorder;
  /** The nodes' API addresses; a request goes to one of them at random. */
  addresses: () => string[];
  token: string;
  mount: string;
  keys: readonly string[];
  clients: number;
  /** Clients start no new operation after this (Date.now() milliseconds). */
  until: number;
  random: Random;
  requestTimeoutMs?: number;
}

export interface WorkloadStats {
  ok: number;
  failed: number;
  unknown: number;
  /** Counts by what was seen: status code, or the network error's code. */
  outcomes: Record<string, number>;
}

/** 5xx answers given only before a request touched storage (see the header). */
const DEFINITE_REFUSALS = [
  'Vault is sealed',
  'no active node is known yet',
  'this node no longer leads the cluster; retry',
];

type Outcome = { kind: 'ok'; value?: RegisterValue } | { kind: 'failed' } | { kind: 'unknown' };

export async function runKvWorkload(options: WorkloadOptions): Promise<WorkloadStats> {
  const stats: WorkloadStats = { ok: 0, failed: 0, unknown: 0, outcomes: {} };
  const note = (what: string) => (stats.outcomes[what] = (stats.outcomes[what] ?? 0) + 1);
  const timeoutMs = options.requestTimeoutMs ?? 6_000;

  async function request(addr: string, method: string, key: string, body?: unknown): Promise<{ status: number; text: string } | { error: string }> {
    try {
      const res = await fetch(`${addr}/v1/${options.mount}/${key}`, {
        method,
        headers: { 'x-vault-token': options.token, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
      return { status: res.status, text: await res.text() };
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      return { error: e.cause?.code ?? e.name };
    }
  }

  function classify(r: { status: number; text: string } | { error: string }, read: boolean): Outcome {
    if ('error' in r) {
      note(r.error);
      // Refused at connect: nothing was sent.
      return r.error === 'ECONNREFUSED' ? { kind: 'failed' } : { kind: 'unknown' };
    }
    note(String(r.status));
    if (read && r.status === 200) return { kind: 'ok', value: (JSON.parse(r.text) as { data: { value: string } }).data.value };
    if (read && r.status === 404) return { kind: 'ok', value: null };
    if (!read && r.status === 204) return { kind: 'ok' };
    if (r.status >= 400 && r.status < 500) return { kind: 'failed' };
    if (r.status >= 500 && DEFINITE_REFUSALS.some((m) => r.text.includes(m))) return { kind: 'failed' };
    return { kind: 'unknown' };
  }

  async function client(name: string): Promise<void> {
    let seq = 0;
    while (Date.now() < options.until) {
      const addr = options.random.pick(options.addresses());
      // The client's name carries the node it asked, so that an explanation says who answered.
      const who = `${name}@${new URL(addr).port}`;
      const key = options.random.pick(options.keys);
      const dice = options.random.next();
      let id: number;
      let outcome: Outcome;
      if (dice < 0.45) {
        const value = `${name}-${seq++}`;
        id = options.recorder.invoke(who, { kind: 'write', key, value });
        outcome = classify(await request(addr, 'PUT', key, { value }), false);
      } else if (dice < 0.9) {
        id = options.recorder.invoke(who, { kind: 'read', key });
        outcome = classify(await request(addr, 'GET', key), true);
      } else {
        id = options.recorder.invoke(who, { kind: 'delete', key });
        outcome = classify(await request(addr, 'DELETE', key), false);
      }
      if (outcome.kind === 'ok') {
        stats.ok++;
        options.recorder.ok(id, outcome.value);
      } else if (outcome.kind === 'failed') {
        stats.failed++;
        options.recorder.fail(id);
      } else {
        stats.unknown++;
        options.recorder.unknown(id);
      }
      // A refused request comes back at once; don't spin on a node that is down.
      if (outcome.kind !== 'ok') await new Promise((r) => setTimeout(r, 20 + options.random.int(80)));
    }
  }

  await Promise.all(Array.from({ length: options.clients }, (_, i) => client(`c${i}`)));
  return stats;
}
