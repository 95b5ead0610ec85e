import { readFileSync, readdirSync, statSync } from 'node:fs';
import * as http from 'node:http';
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import * as https from 'node:https';
import { join } from 'node:path';
import { UsageError, type ParsedArgs } from './args';

/**
 * A small client for the HTTP API, configured like Vault's CLI: flags first, then the
 * environment (STRONGROOM_* before VAULT_*). It talks through node's http/https modules rather
 * than fetch, because only they take a CA, a client certificate and a server name per request
 * and report why a connection failed.
 */
export interface ApiClientOptions {
  address: string;
  token?: string;
  namespace?: string;
  caCert?: string;
  caPath?: string;
  clientCert?: string;
  clientKey?: string;
  skipVerify?: boolean;
  tlsServerName?: string;
  timeoutMs?: number;
}

/** Flags every command that talks to a server takes; the booleans among them. */
export const CLIENT_FLAGS_HELP = `HTTP options:
  -address=ADDR          The server's address (STRONGROOM_ADDR, VAULT_ADDR; default http://127.0.0.1:8200)
  -ca-cert=FILE          A PEM file of CAs to trust (VAULT_CACERT)
  -ca-path=DIR           A folder of PEM CA files to trust (VAULT_CAPATH)
  -client-cert=FILE      A PEM client certificate for TLS authentication (VAULT_CLIENT_CERT)
  -client-key=FILE       The client certificate's PEM key (VAULT_CLIENT_KEY)
  -tls-server-name=NAME  The name to expect on the server's certificate (VAULT_TLS_SERVER_NAME)
  -tls-skip-verify       Do not verify the server's certificate (VAULT_SKIP_VERIFY); insecure
  -namespace=NS          The namespace to send requests to (VAULT_NAMESPACE)
  The token comes from STRONGROOM_TOKEN or VAULT_TOKEN.`;
export const CLIENT_BOOLEAN_FLAGS = ['tls-skip-verify'];

export class ApiError extends Error {
  constructor(readonly status: number, readonly errors: string[], readonly method = '', readonly url = '') {
    super(url
      ? `Error making API request.\n\nURL: ${method} ${url}\nCode: ${status}. Errors:\n\n${errors.map((e) => `* ${e}`).join('\n')}`
      : errors.length > 0 ? `${status}: ${errors.join('; ')}` : `${status}`);
    this.name = 'ApiError';
  }
}

/** The server could not be reached or not trusted: names the address and the cause. */
export class ConnectionError extends Error {
  constructor(readonly address: string, readonly reason: string) {
    super(`error contacting ${address}: ${reason}`);
    this.name = 'ConnectionError';
  }
}

const truthy = (v: string | undefined) => v !== undefined && v !== '' && !/^(0|false|no)$/i.test(v);

export function clientFromEnv(env: NodeJS.ProcessEnv = process.env, args?: ParsedArgs): ApiClientOptions {
  const flag = (name: string): string | undefined => {
    const v = args?.flags.get(name);
    if (v === true) throw new UsageError(`-${name} needs a value`);
    return v;
  };
  const pick = (name: string, ...vars: string[]) => flag(name) ?? vars.map((v) => env[v]).find((v) => v !== undefined && v !== '');
  const address = pick('address', 'STRONGROOM_ADDR', 'VAULT_ADDR') ?? 'http://127.0.0.1:8200';
  const opts: ApiClientOptions = { address };
  const set = <K extends keyof ApiClientOptions>(key: K, value: ApiClientOptions[K] | undefined) => { if (value !== undefined) opts[key] = value; };
  set('token', env['STRONGROOM_TOKEN'] ?? env['VAULT_TOKEN']);
  set('namespace', pick('namespace', 'STRONGROOM_NAMESPACE', 'VAULT_NAMESPACE'));
  set('caCert', pick('ca-cert', 'VAULT_CACERT'));
  set('caPath', pick('ca-path', 'VAULT_CAPATH'));
  set('clientCert', pick('client-cert', 'VAULT_CLIENT_CERT'));
  set('clientKey', pick('client-key', 'VAULT_CLIENT_KEY'));
  set('tlsServerName', pick('tls-server-name', 'VAULT_TLS_SERVER_NAME'));
  const skip = args?.flags.get('tls-skip-verify');
  set('skipVerify', skip !== undefined ? skip === true || truthy(skip) : truthy(env['VAULT_SKIP_VERIFY']));
  const timeout = env['VAULT_CLIENT_TIMEOUT'];
  if (timeout && /^\d+s?$/.test(timeout)) opts.timeoutMs = Number.parseInt(timeout, 10) * 1000;
  return opts;
}

function readFile(what: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new UsageError(`cannot read the ${what} ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function trustedCas(opts: ApiClientOptions): Buffer[] | undefined {
  const cas: Buffer[] = [];
  if (opts.caCert) cas.push(readFile('CA certificate', opts.caCert));
  if (opts.caPath) {
    let names: string[];
    try {
      names = readdirSync(opts.caPath);
    } catch (err) {
      throw new UsageError(`cannot read the CA folder ${opts.caPath}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    for (const name of names.sort()) {
      const file = join(opts.caPath, name);
      if (statSync(file).isFile()) cas.push(readFile('CA certificate', file));
    }
  }
  return cas.length > 0 ? cas : undefined;
}

const UNTRUSTED = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_GET_ISSUER_CERT', 'CERT_UNTRUSTED', 'CERT_SIGNATURE_FAILURE',
]);

/** Says why a request never got an answer, in the words an operator searches for. */
export function describeNetworkError(err: NodeJS.ErrnoException, opts: ApiClientOptions): string {
  const code = err.code ?? '';
  if (code === 'ECONNREFUSED') return 'connection refused (is the server running and listening on this address?)';
  if (code === 'ETIMEDOUT' || code === 'STRONGROOM_TIMEOUT') return `timed out${opts.timeoutMs ? ` after ${opts.timeoutMs / 1000}s` : ''} (VAULT_CLIENT_TIMEOUT)`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `host not found (${code})`;
  if (code === 'ECONNRESET') return 'connection reset by the server (does it speak TLS while the address says http, or the other way round?)';
  if (UNTRUSTED.has(code)) {
    return `certificate not trusted (${err.message}); give the CA that signed it with -ca-cert or VAULT_CACERT`;
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `hostname mismatch: the server's certificate is not valid for this host (${err.message}); use an address that matches it or -tls-server-name`;
  }
  if (code === 'CERT_HAS_EXPIRED') return 'the server\'s certificate has expired';
  if (code === 'EPROTO' || /wrong version number|packet length too long/i.test(err.message)) {
    return `TLS handshake failed (${err.message}); does the server speak plain http?`;
  }
  return err.message || code || 'unknown network error';
}

export interface RawRequest {
  method: string;
  path: string;
  query?: Record<string, string>;
  headers?: OutgoingHttpHeaders;
  body?: Buffer | NodeJS.ReadableStream;
}

/** Sends one request and hands back the response unread (for snapshots, which are streams). */
export async function rawRequest(opts: ApiClientOptions, req: RawRequest): Promise<IncomingMessage> {
  let url: URL;
  try {
    url = new URL(`${opts.address.replace(/\/+$/, '')}/v1/${req.path.replace(/^\/+/, '')}`);
  } catch {
    throw new UsageError(`the address "${opts.address}" is not a URL (like https://127.0.0.1:8200)`);
  }
  for (const [k, v] of Object.entries(req.query ?? {})) url.searchParams.set(k, v);
  const secure = url.protocol === 'https:';
  if (!secure && url.protocol !== 'http:') throw new UsageError(`the address "${opts.address}" must start with http:// or https://`);
  const headers: OutgoingHttpHeaders = { 'X-Vault-Request': 'true', ...req.headers };
  if (opts.token) headers['X-Vault-Token'] = opts.token;
  if (opts.namespace) headers['X-Vault-Namespace'] = opts.namespace;
  const transport = secure ? https : http;
  const ca = secure ? trustedCas(opts) : undefined;
  const tls = secure ? {
    ...(ca ? { ca } : {}),
    ...(opts.clientCert ? { cert: readFile('client certificate', opts.clientCert) } : {}),
    ...(opts.clientKey ? { key: readFile('client key', opts.clientKey) } : {}),
    ...(opts.tlsServerName ? { servername: opts.tlsServerName } : {}),
    rejectUnauthorized: !opts.skipVerify,
  } : {};
  const address = url.origin;
  return new Promise((resolve, reject) => {
    const request = transport.request(url, { method: req.method, headers, ...tls, agent: false }, resolve);
    request.setTimeout(opts.timeoutMs ?? 60_000, () => {
      request.destroy(Object.assign(new Error('timed out'), { code: 'STRONGROOM_TIMEOUT' }));
    });
    request.on('error', (err: NodeJS.ErrnoException) => reject(new ConnectionError(address, describeNetworkError(err, opts))));
    const body = req.body;
    if (body === undefined) request.end();
    else if (Buffer.isBuffer(body)) request.end(body);
    else body.pipe(request);
  });
}

async function readAll(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Throws an ApiError for a 4xx/5xx response, with the errors the server listed. */
export async function failIfError(res: IncomingMessage, method: string, url: string): Promise<void> {
  const status = res.statusCode ?? 0;
  if (status < 400) return;
  const text = await readAll(res);
  let errors: string[];
  try {
    errors = (JSON.parse(text) as { errors?: string[] }).errors ?? [];
  } catch {
    errors = text === '' ? [] : [text];
  }
  throw new ApiError(status, errors, method, url);
}

export interface ApiResponse {
  status: number;
  body: unknown;
}

/**
 * One JSON request. `LIST` goes as GET with `?list=true` (the same operation, and safe through
 * proxies that know only the standard methods). A status the caller names in `accept` is
 * returned instead of thrown (seal-status answers while sealed, a read of nothing is a 404).
 */
export async function apiRequest(
  opts: ApiClientOptions, method: string, path: string, body?: unknown, accept: readonly number[] = [],
): Promise<ApiResponse> {
  const list = method === 'LIST';
  const sendMethod = list ? 'GET' : method;
  const payload = body !== undefined ? Buffer.from(JSON.stringify(body)) : undefined;
  const contentType = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
  let target = { opts, path };
  let res: IncomingMessage;
  // A standby asked not to forward answers 307 with the active node's URL; follow a few hops.
  for (let hop = 0; ; hop++) {
    res = await rawRequest(target.opts, {
      method: sendMethod, path: target.path, ...(list ? { query: { list: 'true' } } : {}),
      ...(payload ? { body: payload, headers: { 'Content-Type': contentType, 'Content-Length': payload.length } } : {}),
    });
    const location = res.headers.location;
    if (!(res.statusCode === 307 || res.statusCode === 308) || !location || hop >= 2) break;
    res.resume();
    const next = new URL(location, target.opts.address);
    next.searchParams.delete('list');
    const query = next.searchParams.toString();
    target = { opts: { ...target.opts, address: next.origin }, path: `${next.pathname.replace(/^\/v1\//, '')}${query ? `?${query}` : ''}` };
  }
  const status = res.statusCode ?? 0;
  const text = await readAll(res);
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = text;
  }
  const tolerated = accept.includes(status) || path.startsWith('sys/health') || path.startsWith('sys/seal-status');
  if (status >= 400 && !tolerated) {
    const errors = typeof parsed === 'string' ? [parsed] : (parsed as { errors?: string[] } | null)?.errors ?? [];
    const url = `${target.opts.address.replace(/\/+$/, '')}/v1/${target.path.replace(/^\/+/, '')}${list ? '?list=true' : ''}`;
    throw new ApiError(status, errors, sendMethod, url);
  }
  return { status, body: parsed };
}
