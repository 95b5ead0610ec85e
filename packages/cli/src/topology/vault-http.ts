/** The few HTTP calls the topology tools make; a network error or timeout rejects. */

export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export async function call(
  addr: string, method: string, path: string, options: { token?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (options.token) headers['x-vault-token'] = options.token;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${addr}/v1/${path}`, {
    method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text === '' ? null : JSON.parse(text);
  } catch {
    json = null;
  }
  return { status: res.status, json };
}

/** The errors of a reply, for messages: the server's own words, which never echo a secret sent to it. */
export function describe(r: Reply): string {
  const errors: unknown = r.json?.errors;
  return Array.isArray(errors) && errors.length > 0 ? `${r.status}: ${errors.join('; ')}` : `status ${r.status}`;
}

/** Expects a 2xx; otherwise throws naming `what` (never the request's body). */
export async function must(what: string, reply: Promise<Reply>): Promise<Reply> {
  const r = await reply;
  if (r.status < 200 || r.status >= 300) throw new Error(`${what} failed (${describe(r)})`);
  return r;
}
