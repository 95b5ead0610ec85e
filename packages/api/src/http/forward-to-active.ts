import * as http from 'node:http';
import * as https from 'node:https';
import { FORWARDED_HEADER, type ForwardingAuth } from '@strongroom/cluster';
import type { Logger } from '@strongroom/core';
import { LIST_MARKER_HEADER, isListRequest } from './list-method';

/*
 * The HTTP way a standby hands a request to the active node, kept for the requests whose bodies
 * stream (snapshot uploads and downloads); the others go over the cluster connection. The
 * client's address travels in a header signed with the cluster's forwarding key.
 */

/** Headers that describe one hop and must not be passed along. */
const HOP_HEADERS = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'host', FORWARDED_HEADER,
  LIST_MARKER_HEADER,
]);

const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 256 }), https: new https.Agent({ keepAlive: true, maxSockets: 256 }) };

/** A request's end-to-end headers, one [name, value] pair per value, for a forwarded copy of it. */
export function forwardedHeaders(headers: http.IncomingHttpHeaders): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(headers)) {
    if (HOP_HEADERS.has(name) || value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) out.push([name, v]);
    else out.push([name, value]);
  }
  return out;
}

export interface ForwardOptions {
  /** The active node's API address, e.g. `http://127.0.0.1:8200`. */
  target: string;
  auth: ForwardingAuth;
  logger: Logger;
  /** Trust anchors (PEM) for an active node served over TLS with a private CA. */
  ca?: string;
  /** The request's body, when it was read already; otherwise it streams from `req`. */
  body?: Buffer;
}

/** The last target parsed: a standby forwards every request to the same active node. */
let lastTarget: { text: string; url: URL } | null = null;

function targetUrl(text: string): URL {
  if (lastTarget?.text !== text) lastTarget = { text, url: new URL(text) };
  return lastTarget.url;
}

/**
 * Streams `req` to the active node and its answer back, body and status unchanged. The method
 * is sent as the client sent it (LIST included), so the active node sees the same request.
 */
export function forwardRequest(req: http.IncomingMessage, res: http.ServerResponse, options: ForwardOptions): Promise<void> {
  const target = targetUrl(options.target);
  const secure = target.protocol === 'https:';
  const url = req.url ?? '/';
  // The LIST method was rewritten to GET on the way in; the active node gets it as sent.
  const method = isListRequest(req) ? 'LIST' : req.method ?? 'GET';
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP_HEADERS.has(name) && value !== undefined) headers[name] = value;
  headers[FORWARDED_HEADER] = options.auth.sign(req.socket.remoteAddress ?? '', method, url);
  return new Promise((resolve) => {
    const outgoing = (secure ? https : http).request({
      protocol: target.protocol, hostname: target.hostname, port: target.port, method, path: url, headers,
      agent: secure ? agents.https : agents.http, ...(options.ca ? { ca: options.ca } : {}),
    }, (answer) => {
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers)) if (!HOP_HEADERS.has(name) && value !== undefined) out[name] = value;
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
      answer.on('end', resolve);
      answer.on('error', () => {
        res.destroy();
        resolve();
      });
    });
    outgoing.on('error', (err) => {
      options.logger.warn('forwarding to the active node failed', { target: options.target, err: err.message });
      if (!res.headersSent) {
        const body = JSON.stringify({ errors: ['this node is a standby and could not reach the active node; retry shortly'] });
        res.writeHead(503, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      } else {
        res.destroy();
      }
      resolve();
    });
    if (options.body) outgoing.end(options.body);
    else req.pipe(outgoing);
  });
}

/** The answer to a client that asked not to be forwarded: where the active node is. */
export function redirectToActive(req: http.IncomingMessage, res: http.ServerResponse, target: string): void {
  res.writeHead(307, { location: new URL(req.url ?? '/', target).toString(), 'cache-control': 'no-store', 'content-length': 0 });
  res.end();
}
