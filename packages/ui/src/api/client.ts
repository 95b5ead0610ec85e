import { getSession, signOut } from './session';

/** An answer other than 2xx, with the API's own words (`{"errors": [...]}`) as the message. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(readonly status: number, readonly errors: string[]) {
    super(errors.length > 0 ? errors.join('; ') : `the server answered ${status}`);
  }
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  /** Send no token, for the endpoints anonymous callers may read. */
  anonymous?: boolean;
  /** A token to try instead of the session's, for sign-in. */
  token?: string;
  namespace?: string;
}

/** A Vault-shaped response; `data` is the payload most endpoints answer with. */
export interface ApiResponse<T> {
  data: T;
  [key: string]: unknown;
}

const SESSION_LOST = 'Your token is no longer valid (expired or revoked); sign in again.';

async function errorsOf(res: Response): Promise<string[]> {
  try {
    const body = (await res.json()) as { errors?: unknown };
    if (Array.isArray(body.errors)) return body.errors.map(String);
  } catch { /* not JSON */ }
  return [];
}

async function send(method: string, path: string, options: RequestOptions): Promise<Response> {
  const session = getSession();
  const headers: Record<string, string> = {};
  const token = options.anonymous ? undefined : options.token ?? session?.token;
  if (token) headers['X-Vault-Token'] = token;
  const namespace = options.namespace ?? session?.namespace ?? '';
  if (namespace) headers['X-Vault-Namespace'] = namespace;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) params.set(k, String(v));
  const qs = params.toString();
  return fetch(`/v1/${path.replace(/^\/+/, '')}${qs ? `?${qs}` : ''}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    credentials: 'omit',
    cache: 'no-store',
  });
}

/**
 * A 403 means either "this token may not do that" or "this token is gone". Only the token's own
 * lookup tells them apart, and only the second one ends the session.
 */
async function tokenStillValid(): Promise<boolean> {
  const res = await send('GET', 'auth/token/lookup-self', {});
  return res.status !== 403 && res.status !== 401;
}

export async function request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T | null> {
  const res = await send(method, path, options);
  if (res.status === 204) return null;
  if (res.ok) {
    const text = await res.text();
    return text === '' ? null : (JSON.parse(text) as T);
  }
  const errors = await errorsOf(res);
  const usedSession = !options.anonymous && options.token === undefined && getSession() !== null;
  if (usedSession && (res.status === 403 || res.status === 401)) {
    const isLookupSelf = /^\/?auth\/token\/lookup-self$/.test(path);
    if (isLookupSelf || !(await tokenStillValid())) {
      signOut(SESSION_LOST);
    }
  }
  throw new ApiError(res.status, errors);
}

/** The usual verbs; `list` uses `?list=true` so no custom HTTP method is needed. */
export const api = {
  read: <T = Record<string, unknown>>(path: string, options?: RequestOptions) =>
    request<ApiResponse<T>>('GET', path, options),
  list: async (path: string, options?: RequestOptions): Promise<string[]> => {
    try {
      const res = await request<ApiResponse<{ keys?: string[] }>>('GET', path, { ...options, query: { ...options?.query, list: true } });
      return res?.data.keys ?? [];
    } catch (err) {
      // Vault answers an empty folder with 404.
      if (err instanceof ApiError && err.status === 404 && err.errors.length === 0) return [];
      throw err;
    }
  },
  listWithInfo: <T = Record<string, unknown>>(path: string, options?: RequestOptions) =>
    request<ApiResponse<{ keys?: string[]; key_info?: Record<string, T> }>>('GET', path, { ...options, query: { ...options?.query, list: true } }),
  write: <T = Record<string, unknown>>(path: string, body: unknown, options?: RequestOptions) =>
    request<ApiResponse<T>>('POST', path, { ...options, body }),
  remove: (path: string, options?: RequestOptions) => request('DELETE', path, options),
};

export function errorText(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return `The server could not be reached: ${err.message}`;
  return String(err);
}
