/** A small client for the HTTP API, configured like Vault's CLI from the environment. */
export interface ApiClientOptions {
  address: string;
  token?: string;
}

export class ApiError extends Error {
  constructor(readonly status: number, readonly errors: string[]) {
    super(errors.length > 0 ? `${status}: ${errors.join('; ')}` : `${status}`);
    this.name = 'ApiError';
  }
}

export function clientFromEnv(env: NodeJS.ProcessEnv = process.env): ApiClientOptions {
  const address = env['STRONGROOM_ADDR'] ?? env['VAULT_ADDR'] ?? 'http://127.0.0.1:8200';
  const token = env['STRONGROOM_TOKEN'] ?? env['VAULT_TOKEN'];
  return token ? { address, token } : { address };
}

export async function apiRequest(opts: ApiClientOptions, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = {};
  if (opts.token) headers['X-Vault-Token'] = opts.token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  // fetch cannot send the LIST method through every proxy; `?list=true` is the same operation.
  const url = `${opts.address.replace(/\/+$/, '')}/v1/${path.replace(/^\/+/, '')}${method === 'LIST' ? '?list=true' : ''}`;
  const res = await fetch(url, {
    method: method === 'LIST' ? 'GET' : method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  const parsed: unknown = text === '' ? null : JSON.parse(text);
  if (res.status >= 400 && !(path.startsWith('sys/health') || path.startsWith('sys/seal-status'))) {
    const errors = (parsed as { errors?: string[] } | null)?.errors ?? [];
    throw new ApiError(res.status, errors);
  }
  return { status: res.status, body: parsed };
}
