import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import {
  BadRequestError, parseDurationSeconds, PayloadTooLargeError, UnsupportedMediaTypeError, UnsupportedOperationError,
  type Core, type Logger, type Operation,
} from '@strongroom/core';
import { FORWARDED_HEADER, forwardRequest, redirectToActive, type ForwardingAuth } from './cluster/forwarding';
import { errorReply } from './errors-to-http';
import { isListRequest } from './http/list-method';

/** How the dispatcher takes part in a cluster. */
export interface ClusterRouting {
  /** The active node's API address while this node is a standby, else null. */
  activeAddress(): string | null;
  /**
   * Waits a little (an election's worth) for an active node: another's address, or null once
   * this node itself is active (or the wait is over).
   */
  awaitActive(): Promise<string | null>;
  /** Signs and checks the client address standbys pass along. */
  auth: ForwardingAuth;
  /** Trust anchors for the other members' API certificates, when they come from a private CA. */
  apiCa(): string | undefined;
  /**
   * On the active node, before a request runs: resolves once this node may answer as the
   * cluster's current state (it still holds the leadership); null when it may at once.
   */
  gate(): Promise<void> | null;
}

export interface DispatcherOptions {
  maxRequestSize: number;
  logger: Logger;
  cluster?: ClusterRouting;
}

const JSON_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' };

/** Reads the body up to `limit` bytes; a larger body is refused before it is buffered whole. */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? -1);
  if (limit > 0 && declared > limit) return Promise.reject(new PayloadTooLargeError(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (limit > 0 && size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new PayloadTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

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

function parseBody(raw: Buffer, contentType: string | undefined): Record<string, unknown> {
  if (raw.length === 0) return {};
  const text = raw.toString('utf8');
  const trimmed = text.trimStart();
  // Vault takes form bodies too, but only when they do not look like JSON.
  if (contentType?.startsWith('application/x-www-form-urlencoded') && !trimmed.startsWith('{') && !trimmed.startsWith('[')) {
    return parseQuery(text);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new BadRequestError(`failed to parse JSON input: ${(err as Error).message}`);
  }
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

function tokenOf(req: IncomingMessage): string | undefined {
  const header = req.headers['x-vault-token'];
  if (typeof header === 'string' && header !== '') return header;
  const authz = req.headers.authorization;
  if (typeof authz === 'string' && authz.startsWith('Bearer ')) return authz.slice(7).trim();
  return undefined;
}

/** `X-Vault-Wrap-TTL`: seconds or a duration; absent or zero means no wrapping. */
function wrapTtlOf(req: IncomingMessage): number | undefined {
  const raw = req.headers['x-vault-wrap-ttl'];
  if (raw === undefined || raw === '') return undefined;
  const seconds = parseDurationSeconds(Array.isArray(raw) ? raw[0] : raw);
  if (seconds === null) throw new BadRequestError('invalid value for header "X-Vault-Wrap-TTL": expected a duration such as "5m" or a number of seconds');
  const format = req.headers['x-vault-wrap-format'];
  if (format !== undefined && format !== '' && format !== 'token') {
    throw new BadRequestError('invalid value for header "X-Vault-Wrap-Format": only "token" is supported');
  }
  return seconds === 0 ? undefined : seconds;
}

function send(res: ServerResponse, status: number, body: unknown, head: boolean): void {
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
  const payload = JSON.stringify(body);
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(payload) });
  res.end(head ? undefined : payload);
}

/**
 * The single entry for `/v1/*`: maps method, query and body onto a core request and the core's
 * reply (or error) onto the wire. Kept free of per-request allocations beyond what the request
 * itself needs, since every API call goes through it.
 */
export function createDispatcher(core: Core, options: DispatcherOptions) {
  const { logger, maxRequestSize, cluster } = options;
  return async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (cluster && !core.active && !core.sealed) {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const local = core.isLocalPath(q === -1 ? url.slice(4) : url.slice(4, q));
      // Just after a restart or an election a standby may not know the active node yet.
      const active = local ? null : cluster.activeAddress() ?? (await cluster.awaitActive());
      if (active !== null && !core.active) {
        if (req.headers['x-vault-no-request-forwarding'] !== undefined) redirectToActive(req, res, active);
        else {
          const ca = cluster.apiCa();
          await forwardRequest(req, res, { target: active, auth: cluster.auth, logger, ...(ca ? { ca } : {}) });
        }
        return;
      }
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const rawPath = q === -1 ? url.slice(4) : url.slice(4, q);
    const search = q === -1 ? '' : url.slice(q + 1);
    const method = req.method ?? 'GET';
    const head = method === 'HEAD';
    try {
      let path: string;
      try {
        path = decodeURIComponent(rawPath);
      } catch {
        throw new BadRequestError('the request path is not valid percent-encoding');
      }
      const query = method === 'GET' || method === 'HEAD' || method === 'DELETE' ? parseQuery(search) : {};
      let wantsList = isListRequest(req);
      if (!wantsList && query['list'] !== undefined) {
        const flag = String(query['list']);
        if (!/^(true|false|1|0|t|f)$/i.test(flag)) throw new BadRequestError('invalid value for "list": expected a boolean');
        wantsList = /^(true|1|t)$/i.test(flag);
      }
      delete query['list'];
      const contentType = req.headers['content-type'];
      const operation = operationOf(method, wantsList, contentType);
      let data = query;
      // Binary uploads (snapshots) stream through to their handler instead of being buffered.
      const binary = operation === 'update' && contentType === 'application/octet-stream';
      if (binary) data = {};
      else if (operation === 'update' || operation === 'patch' || (operation === 'delete' && req.headers['content-length'] && req.headers['content-length'] !== '0')) {
        const body = parseBody(await readBody(req, maxRequestSize), contentType);
        data = operation === 'delete' ? { ...query, ...body } : body;
      }
      if (operation === 'list' && path !== '' && !path.endsWith('/')) path += '/';
      const token = tokenOf(req);
      const wrapTtl = wrapTtlOf(req);
      let remoteAddress = req.socket.remoteAddress;
      if (cluster) {
        const forwarded = req.headers[FORWARDED_HEADER];
        if (typeof forwarded === 'string') remoteAddress = cluster.auth.verify(forwarded, isListRequest(req) ? 'LIST' : method, url) ?? remoteAddress;
        const gate = core.active ? cluster.gate() : null;
        if (gate) await gate;
      }
      const reply = await core.handle({
        operation, path, data,
        ...(token ? { token } : {}),
        ...(wrapTtl ? { wrapTtl } : {}),
        ...(remoteAddress ? { remoteAddress } : {}),
        ...(binary ? { body: req } : {}),
        headers: { 'x-vault-namespace': req.headers['x-vault-namespace'] as string | undefined },
      });
      send(res, reply.status, reply.body, head);
    } catch (err) {
      const reply = errorReply(err, logger, randomUUID());
      if (reply.status === 413) res.setHeader('connection', 'close');
      send(res, reply.status, reply.body, head);
    }
  };
}
