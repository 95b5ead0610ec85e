import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import {
  BadRequestError, parseDurationSeconds, PayloadTooLargeError, StandbyError, UnsupportedMediaTypeError, UnsupportedOperationError,
  type Core, type CoreRequest, type Logger, type Operation, type RequestRoute,
} from '@strongroom/core';
import { MemberCallError } from '@strongroom/raft';
import {
  decodeForwardedRequest, decodeForwardedResponse, encodeForwardedRequest, encodeForwardedResponse, FORWARDED_HEADER, NOT_ACTIVE,
  type ClusterRouting,
} from '@strongroom/cluster';
import { errorReply } from './errors-to-http';
import { forwardedHeaders, forwardRequest, redirectToActive } from './http/forward-to-active';
import { DEFAULT_JSON_LIMITS, parseJson, type JsonLimits } from './http/json-body';
import { jsonReply } from './http/json-reply';
import { lingerAfter } from './http/linger';
import { isListRequest } from './http/list-method';
import { readBody } from './http/read-body';
import { TextReply } from './http/text-reply';
import { NO_MOUNT } from './metrics/server-metrics';

export interface DispatcherOptions {
  maxRequestSize: number;
  /** Bounds on a JSON body's shape; Vault's defaults when not given. */
  jsonLimits?: JsonLimits;
  logger: Logger;
  cluster?: ClusterRouting;
  metrics?: DispatcherMetrics;
}

/** What the dispatcher reports to the server's metrics, and how this listener serves them. */
export interface DispatcherMetrics {
  /** Called once per request this node ran, when its answer is known. */
  observeRequest(mountType: string, operation: string, ms: number, failed: boolean): void;
  /** Set on a listener with `unauthenticated_metrics_access`: `sys/metrics` is answered here, without a token. */
  unauthenticated?: (format: string) => Promise<{ status: number; body: unknown }>;
}

const METRICS_PATH = 'sys/metrics';

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };
/** A DR operation token attempt lives in the memory of the secondary's leader, which runs it. */
const DR_ATTEMPT_PATH = 'sys/replication/dr/secondary/generate-operation-token/attempt';

function parseQuery(search: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (search === '') return out;
  for (const [k, v] of new URLSearchParams(search)) {
    const prev = out[k];
    if (prev === undefined) out[k] = v;
    else out[k] = Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

function parseBody(raw: Buffer, contentType: string | undefined, limits: JsonLimits): Record<string, unknown> {
  if (raw.length === 0) return {};
  // Vault takes form bodies too, but only when they do not look like JSON.
  if (contentType?.startsWith('application/x-www-form-urlencoded')) {
    const text = raw.toString('utf8');
    const trimmed = text.trimStart();
    if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return parseQuery(text);
  }
  const parsed = parseJson(raw, limits);
  if (parsed === null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new BadRequestError('request body must be a JSON object');
  return parsed as Record<string, unknown>;
}

function operationOf(method: string, wantsList: boolean, contentType: string | undefined): Operation {
  switch (method) {
    case 'GET':
    case 'HEAD':
      return wantsList ? 'list' : 'read';
    case 'POST':
    case 'PUT':
      return 'update';
    case 'DELETE':
      return 'delete';
    case 'PATCH':
      if (!contentType?.startsWith('application/merge-patch+json')) {
        throw new UnsupportedMediaTypeError('PATCH requires the Content-Type "application/merge-patch+json"');
      }
      return 'patch';
    default:
      throw new UnsupportedOperationError(`method ${method} is not supported`);
  }
}

function tokenOf(headers: IncomingHttpHeaders): string | undefined {
  const header = headers['x-vault-token'];
  if (typeof header === 'string' && header !== '') return header;
  const authz = headers.authorization;
  if (typeof authz === 'string' && authz.startsWith('Bearer ')) return authz.slice(7).trim();
  return undefined;
}

/** The longest duration Vault can parse (2^63 - 1 nanoseconds, about 292 years), in whole seconds. */
const MAX_DURATION_SECONDS = 9_223_372_036;

/**
 * `X-Vault-Wrap-TTL`: seconds or a duration; absent or zero means no wrapping. What Vault could
 * not parse either (negative, or longer than its durations reach) is refused; the core caps the
 * rest at the system's maximum TTL.
 */
function wrapTtlOf(headers: IncomingHttpHeaders): number | undefined {
  const raw = headers['x-vault-wrap-ttl'];
  if (raw === undefined || raw === '') return undefined;
  const seconds = parseDurationSeconds(Array.isArray(raw) ? raw[0] : raw);
  if (seconds === null) throw new BadRequestError('invalid value for header "X-Vault-Wrap-TTL": expected a duration such as "5m" or a number of seconds');
  if (!Number.isSafeInteger(seconds) || seconds > MAX_DURATION_SECONDS) {
    throw new BadRequestError(`invalid value for header "X-Vault-Wrap-TTL": a duration may be at most ${MAX_DURATION_SECONDS} seconds`);
  }
  const format = headers['x-vault-wrap-format'];
  if (format !== undefined && format !== '' && format !== 'token') {
    throw new BadRequestError('invalid value for header "X-Vault-Wrap-Format": only "token" is supported');
  }
  return seconds === 0 ? undefined : seconds;
}

function send(res: ServerResponse, status: number, body: unknown, head: boolean): void {
  if (body instanceof TextReply) {
    res.writeHead(status, { 'content-type': body.contentType, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(body.text) });
    res.end(head ? undefined : body.text);
    return;
  }
  if (body instanceof Readable) {
    res.writeHead(status, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
    if (head) {
      body.destroy();
      res.end();
      return;
    }
    // Headers are gone by the time a stream can fail: the client sees a truncated body.
    body.on('error', () => res.destroy());
    body.pipe(res);
    return;
  }
  if (body === null || body === undefined) {
    res.writeHead(status, { 'cache-control': 'no-store' });
    res.end();
    return;
  }
  const payload = jsonReply(body);
  if (typeof payload === 'string') {
    res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(payload) });
    res.end(head ? undefined : payload);
    return;
  }
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': payload.bytes });
  if (head) {
    res.end();
    return;
  }
  // One write to the socket for the pieces, as for a reply in one string.
  res.cork();
  for (const piece of payload.pieces) res.write(piece);
  res.end();
  res.uncork();
}

/** A request as the API sees it, whichever way it arrived (a client's HTTP, or a standby's call). */
interface ApiRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** Sent with the LIST method. */
  list: boolean;
  remoteAddress: string | undefined;
  /** The limits of the listener the client sent the request to. */
  jsonLimits: JsonLimits;
  /** The body, refused past the size limit; at once when it has all arrived. */
  readBody(): Buffer | Promise<Buffer>;
  /** The body as a stream, for binary uploads (snapshots) that are not buffered. */
  stream(): Readable;
}

interface ApiReply {
  status: number;
  body: unknown;
  head: boolean;
  /** The connection must close after this answer (the body was not read to its end). */
  close: boolean;
}

function headerMap(pairs: Array<[string, string]>): IncomingHttpHeaders {
  const out: Record<string, string> = {};
  for (const [name, value] of pairs) {
    const key = name.toLowerCase();
    out[key] = Object.hasOwn(out, key) ? `${out[key]}, ${value}` : value;
  }
  return out;
}

/**
 * Requests a standby hands the active node over the cluster connection rather than over HTTP:
 * everything but binary uploads and the snapshot download, whose bodies stream.
 */
function carriedOverCluster(req: IncomingMessage, path: string): boolean {
  return req.headers['content-type'] !== 'application/octet-stream' && path !== 'sys/storage/raft/snapshot';
}

/**
 * The single entry for `/v1/*`: maps method, query and body onto a core request and the core's
 * reply (or error) onto the wire. Kept free of per-request allocations beyond what the request
 * itself needs, since every API call goes through it.
 */
export function createDispatcher(core: Core, options: DispatcherOptions) {
  const { logger, maxRequestSize, cluster, metrics } = options;
  const jsonLimits = options.jsonLimits ?? DEFAULT_JSON_LIMITS;

  /** Why this listener refuses the body of a request it read to forward, if it does. */
  function bodyRefusal(req: IncomingMessage, body: Buffer): BadRequestError | null {
    const method = req.method ?? 'GET';
    if (body.length === 0 || !(method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE')) return null;
    try {
      parseBody(body, req.headers['content-type'], jsonLimits);
      return null;
    } catch (err) {
      if (err instanceof BadRequestError) return err;
      throw err;
    }
  }

  async function execute(input: ApiRequest): Promise<ApiReply> {
    const { url, method } = input;
    const q = url.indexOf('?');
    const rawPath = q === -1 ? url.slice(4) : url.slice(4, q);
    const search = q === -1 ? '' : url.slice(q + 1);
    const head = method === 'HEAD';
    const startedAt = metrics ? performance.now() : 0;
    // Filled in by the core as it routes the request; one small object per request, no strings.
    const route: RequestRoute = { mountType: NO_MOUNT, operation: '' };
    let mapped: Operation | 'unknown' = 'unknown';
    try {
      let path = rawPath;
      if (rawPath.includes('%')) {
        try {
          path = decodeURIComponent(rawPath);
        } catch {
          throw new BadRequestError('the request path is not valid percent-encoding');
        }
      }
      const query = method === 'GET' || method === 'HEAD' || method === 'DELETE' ? parseQuery(search) : {};
      let wantsList = input.list;
      if (!wantsList && query['list'] !== undefined) {
        const flag = String(query['list']);
        if (!/^(true|false|1|0|t|f)$/i.test(flag)) throw new BadRequestError('invalid value for "list": expected a boolean');
        wantsList = /^(true|1|t)$/i.test(flag);
      }
      delete query['list'];
      const { headers } = input;
      const contentType = headers['content-type'];
      const operation = operationOf(method, wantsList, contentType);
      mapped = operation;
      let data = query;
      // Binary uploads (snapshots) stream through to their handler instead of being buffered.
      const binary = operation === 'update' && contentType === 'application/octet-stream';
      if (binary) data = {};
      else if (operation === 'update' || operation === 'patch' || (operation === 'delete' && headers['content-length'] && headers['content-length'] !== '0')) {
        const raw = input.readBody();
        const body = parseBody(raw instanceof Promise ? await raw : raw, contentType, input.jsonLimits);
        data = operation === 'delete' ? { ...query, ...body } : body;
      }
      if (operation === 'list' && path !== '' && !path.endsWith('/')) path += '/';
      const token = tokenOf(headers);
      const wrapTtl = wrapTtlOf(headers);
      const { remoteAddress } = input;
      // Optional fields are set one by one: a spread of a fresh object per field costs each request.
      const request: CoreRequest = {
        operation, path, data, headers: { 'x-vault-namespace': headers['x-vault-namespace'] as string | undefined }, route,
      };
      if (token) request.token = token;
      if (wrapTtl) request.wrapTtl = wrapTtl;
      if (remoteAddress) request.remoteAddress = remoteAddress;
      if (binary) request.body = input.stream();
      const reply = await core.handle(request);
      metrics?.observeRequest(route.mountType, route.operation || operation, performance.now() - startedAt, reply.status >= 400);
      return { status: reply.status, body: reply.body, head, close: false };
    } catch (err) {
      const reply = errorReply(err, logger, randomUUID());
      metrics?.observeRequest(route.mountType, route.operation || mapped, performance.now() - startedAt, true);
      return { status: reply.status, body: reply.body, head, close: reply.status === 413 };
    }
  }

  /** A standby's call on the active node: the request runs here, never forwarded again. */
  async function serveCall(payload: Buffer): Promise<Buffer> {
    const call = decodeForwardedRequest(payload);
    const list = call.method === 'LIST';
    const input: ApiRequest = {
      method: list ? 'GET' : call.method,
      url: call.url,
      headers: headerMap(call.headers),
      list,
      remoteAddress: call.remoteAddress,
      // A standby that predates the limits in the head sends none: this node's own apply.
      jsonLimits: call.jsonLimits ?? jsonLimits,
      readBody: () => {
        if (maxRequestSize > 0 && call.body.length > maxRequestSize) throw new PayloadTooLargeError(maxRequestSize);
        return call.body;
      },
      stream: () => Readable.from([call.body]),
    };
    // Never forwarded a second time: the standby that sent it finds the new active node itself.
    if (!core.active && !core.drSecondary) throw new Error(NOT_ACTIVE);
    const reply = await execute(input);
    let { status, body } = reply;
    if (body instanceof Readable) {
      // Standbys send the requests whose answers stream over HTTP instead; this is a safeguard.
      body.destroy();
      const refused = errorReply(new BadRequestError('this request cannot be forwarded over the cluster connection; send it to the active node'), logger, randomUUID());
      ({ status, body } = refused);
    }
    const headers: Array<[string, string]> = [['cache-control', 'no-store']];
    if (reply.close) headers.push(['connection', 'close']);
    if (body === null || body === undefined) return encodeForwardedResponse({ status, headers, body: Buffer.alloc(0) });
    if (body instanceof TextReply) {
      headers.push(['content-type', body.contentType]);
      return encodeForwardedResponse({ status, headers, body: Buffer.from(body.text) });
    }
    headers.push(['content-type', 'application/json']);
    return encodeForwardedResponse({ status, headers, body: Buffer.from(JSON.stringify(body)) });
  }

  /**
   * Hands a client's request to the active node over the cluster connection. Resolves true once
   * the client has an answer, or with the body already read when that connection cannot be used
   * (the request then goes over HTTP, with that body).
   */
  async function forwardOverCluster(req: IncomingMessage, res: ServerResponse): Promise<true | Buffer> {
    let body: Buffer;
    try {
      body = await readBody(req, maxRequestSize);
    } catch (err) {
      const reply = errorReply(err, logger, randomUUID());
      if (reply.status === 413) {
        res.setHeader('connection', 'close');
        lingerAfter(req, res);
      }
      send(res, reply.status, reply.body, req.method === 'HEAD');
      return true;
    }
    const payload = encodeForwardedRequest({
      method: isListRequest(req) ? 'LIST' : req.method ?? 'GET',
      url: req.url ?? '/',
      headers: forwardedHeaders(req.headers),
      ...(req.socket.remoteAddress ? { remoteAddress: req.socket.remoteAddress } : {}),
      jsonLimits,
      body,
    });
    const answering = cluster?.call(payload);
    if (!answering) {
      // Over HTTP the active node could only judge the body by its own listener's limits.
      const refused = bodyRefusal(req, body);
      if (refused) {
        const reply = errorReply(refused, logger, randomUUID());
        send(res, reply.status, reply.body, req.method === 'HEAD');
        return true;
      }
      return body;
    }
    let answer;
    try {
      answer = decodeForwardedResponse(await answering.catch(async (err: unknown) => {
        // The node it went to had just lost the lead and did not run it: once more, to the new one.
        if (!(err instanceof MemberCallError) || err.message !== NOT_ACTIVE || !cluster) throw err;
        await cluster.awaitActive();
        const again = cluster.call(payload);
        if (!again) throw new StandbyError();
        return again;
      }));
    } catch (err) {
      logger.warn('forwarding to the active node failed', { err: (err as Error).message });
      send(res, 503, { errors: ['this node is a standby and could not reach the active node; retry shortly'] }, req.method === 'HEAD');
      return true;
    }
    const out: Record<string, string | string[] | number> = {};
    for (const [name, value] of answer.headers) {
      const prev = out[name];
      out[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [String(prev), value];
    }
    out['content-length'] = answer.body.length;
    res.writeHead(answer.status, out);
    res.end(req.method === 'HEAD' ? undefined : answer.body);
    return true;
  }

  cluster?.serveCalls(serveCall);

  /**
   * A listener open to scrapers answers `sys/metrics` itself, with this node's own metrics, as
   * Vault's does: no token, and no forwarding to the active node. A namespace is refused as in
   * the core (the path is restricted to the root namespace).
   */
  async function serveMetricsUnauthenticated(
    req: IncomingMessage, res: ServerResponse, search: string, render: (format: string) => Promise<{ status: number; body: unknown }>,
  ): Promise<void> {
    const head = req.method === 'HEAD';
    try {
      const namespace = req.headers['x-vault-namespace'];
      if (typeof namespace === 'string' && namespace.replace(/^\/+|\/+$/g, '') !== '') {
        throw new BadRequestError(`operation only available in the root namespace: ${METRICS_PATH}`);
      }
      const format = new URLSearchParams(search).get('format') ?? '';
      const reply = await render(format);
      send(res, reply.status, reply.body, head);
    } catch (err) {
      const reply = errorReply(err, logger, randomUUID());
      send(res, reply.status, reply.body, head);
    }
  }

  return async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A DR secondary has no active node: each node answers status itself, and the DR operations
    // (writes) go to the node that leads its Raft cluster, which runs its replication. So does
    // the read of the operation token attempt's progress, which only that node holds.
    const drSecondary = core.drSecondary;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url.slice(4) : url.slice(4, q);
    const drRead = req.method === 'GET' || req.method === 'HEAD';
    if (path === METRICS_PATH && metrics?.unauthenticated && drRead) {
      await serveMetricsUnauthenticated(req, res, q === -1 ? '' : url.slice(q + 1), metrics.unauthenticated);
      return;
    }
    if (cluster && !core.active && !core.sealed && (!drSecondary || !drRead || path === DR_ATTEMPT_PATH)) {
      const local = drSecondary ? !path.startsWith('sys/replication/') : core.isLocalPath(path);
      // Just after a restart or an election a standby may not know the active node yet.
      const active = local ? null : drSecondary ? cluster.activeAddress() : cluster.activeAddress() ?? (await cluster.awaitActive());
      if (active !== null && !core.active) {
        if (req.headers['x-vault-no-request-forwarding'] !== undefined) redirectToActive(req, res, active);
        else {
          const carried = carriedOverCluster(req, path) ? await forwardOverCluster(req, res) : null;
          if (carried !== true) {
            const ca = cluster.apiCa();
            await forwardRequest(req, res, { target: active, auth: cluster.auth, logger, ...(ca ? { ca } : {}), ...(carried ? { body: carried } : {}) });
          }
        }
        return;
      }
    }
    const method = req.method ?? 'GET';
    const list = isListRequest(req);
    let remoteAddress = req.socket.remoteAddress;
    if (cluster) {
      const forwarded = req.headers[FORWARDED_HEADER];
      if (typeof forwarded === 'string') remoteAddress = cluster.auth.verify(forwarded, list ? 'LIST' : method, url) ?? remoteAddress;
    }
    const reply = await execute({
      method, url, headers: req.headers, list, remoteAddress, jsonLimits,
      readBody: () => readBody(req, maxRequestSize),
      stream: () => req,
    });
    if (reply.close) {
      res.setHeader('connection', 'close');
      lingerAfter(req, res);
    }
    send(res, reply.status, reply.body, reply.head);
  };
}
