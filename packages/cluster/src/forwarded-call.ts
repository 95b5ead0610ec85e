import type { JsonLimits } from '@strongroom/base';

/**
 * A client's request as a standby hands it to the active node over the cluster connection,
 * and the answer that comes back: a JSON head (method, URL, headers, client address; or status
 * and headers) and the body as raw bytes, framed as `u32 head length ‖ head ‖ body`. The
 * connection is mutual TLS between members, so the client address in it is taken as given.
 */
/**
 * Why an active node that has just lost the lead refuses a call: the request did not run, so
 * the standby may send it once more to whichever node leads now.
 */
export const NOT_ACTIVE = 'this node is no longer the active node';

export interface ForwardedRequest {
  method: string;
  url: string;
  headers: Array<[string, string]>;
  remoteAddress?: string;
  /**
   * The limits of the listener that received the request: a body is judged by the node the
   * client sent it to, not by the node that happens to be active.
   */
  jsonLimits?: JsonLimits;
  body: Buffer;
}

export interface ForwardedResponse {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
}

function frame(head: object, body: Buffer): Buffer {
  const json = Buffer.from(JSON.stringify(head));
  const out = Buffer.allocUnsafe(4 + json.length + body.length);
  out.writeUInt32BE(json.length, 0);
  json.copy(out, 4);
  body.copy(out, 4 + json.length);
  return out;
}

function unframe(payload: Buffer): { head: Record<string, unknown>; body: Buffer } {
  if (payload.length < 4) throw new Error('forwarded payload too short');
  const length = payload.readUInt32BE(0);
  if (4 + length > payload.length) throw new Error('forwarded payload truncated');
  const head = JSON.parse(payload.subarray(4, 4 + length).toString('utf8')) as unknown;
  if (head === null || typeof head !== 'object' || Array.isArray(head)) throw new Error('forwarded payload head is not an object');
  return { head: head as Record<string, unknown>, body: payload.subarray(4 + length) };
}

function headerList(value: unknown): Array<[string, string]> {
  if (!Array.isArray(value)) throw new Error('forwarded headers are not a list');
  return value.map((pair) => {
    if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') {
      throw new Error('a forwarded header is not a [name, value] pair of strings');
    }
    return [pair[0], pair[1]];
  });
}

const JSON_LIMIT_KEYS = ['maxDepth', 'maxStringLength', 'maxObjectEntries', 'maxArrayElements'] as const;

function jsonLimitsOf(value: unknown): JsonLimits | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object') throw new Error('forwarded JSON limits are not an object');
  const given = value as Record<string, unknown>;
  const out = {} as JsonLimits;
  for (const key of JSON_LIMIT_KEYS) {
    const n = given[key];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) throw new Error(`forwarded JSON limit ${key} is not a positive integer`);
    out[key] = n;
  }
  return out;
}

export function encodeForwardedRequest(r: ForwardedRequest): Buffer {
  return frame({
    method: r.method, url: r.url, headers: r.headers,
    ...(r.remoteAddress ? { remoteAddress: r.remoteAddress } : {}),
    ...(r.jsonLimits ? { jsonLimits: r.jsonLimits } : {}),
  }, r.body);
}

export function decodeForwardedRequest(payload: Buffer): ForwardedRequest {
  const { head, body } = unframe(payload);
  const { method, url, remoteAddress } = head;
  if (typeof method !== 'string' || typeof url !== 'string') throw new Error('a forwarded request needs a method and a URL');
  if (remoteAddress !== undefined && typeof remoteAddress !== 'string') throw new Error('a forwarded client address is not a string');
  const jsonLimits = jsonLimitsOf(head['jsonLimits']);
  return { method, url, headers: headerList(head['headers']), ...(remoteAddress ? { remoteAddress } : {}), ...(jsonLimits ? { jsonLimits } : {}), body };
}

export function encodeForwardedResponse(r: ForwardedResponse): Buffer {
  return frame({ status: r.status, headers: r.headers }, r.body);
}

export function decodeForwardedResponse(payload: Buffer): ForwardedResponse {
  const { head, body } = unframe(payload);
  const { status } = head;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 599) throw new Error('a forwarded answer has no valid status');
  return { status, headers: headerList(head['headers']), body };
}
