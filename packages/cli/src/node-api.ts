/**
 * Calls to a node's HTTP API for the operator tools (topology, bootstrap, the drill). A network
 * error or timeout rejects; any HTTP status resolves.
 */
import { until } from './cluster-launcher';

export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  text: string;
}

export async function call(
  addr: string, method: string, path: string,
  options: { token?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (options.token) headers['x-vault-token'] = options.token;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${addr}/v1/${path}`, {
    method, headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text === '' ? null : JSON.parse(text);
  } catch {
    // Not JSON: the caller has `text`.
  }
  return { status: res.status, json, text };
}

/** The reply's `errors` joined, for a failure message; never the body of a successful reply, which may hold a token. */
export function errorsOf(r: Reply): string {
  const errors: unknown = r.json?.errors;
  return Array.isArray(errors) && errors.length > 0 ? errors.join('; ') : `HTTP ${r.status}`;
}

/** Expects a 2xx; otherwise throws naming `what` and the server's errors (never the request's body). */
export async function expectOk(what: string, reply: Promise<Reply>): Promise<Reply> {
  const r = await reply;
  if (r.status < 200 || r.status > 299) throw new Error(`${what} answered ${errorsOf(r)}`);
  return r;
}

/** Calls and expects a 2xx, naming what was attempted and where. */
export function must(what: string, addr: string, method: string, path: string, options: { token?: string; body?: unknown; timeoutMs?: number } = {}): Promise<Reply> {
  return expectOk(`${what} (${method} ${path} on ${addr})`, call(addr, method, path, options));
}

/** Polls `probe` until it returns something other than undefined; errors count as "not yet". */
export function poll<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, intervalMs = 200): Promise<T> {
  return until(what, timeoutMs, probe, intervalMs);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
