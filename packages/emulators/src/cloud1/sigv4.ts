/**
 * Server-side Signature Version 4 verification. The algorithm is not re-implemented here: the
 * request is rebuilt from exactly what the client said it signed (the SignedHeaders, the path,
 * the query and the body) and signed again with @smithy/signature-v4 under the secret of the
 * access key named in the credential scope; the two signatures must then be equal.
 *
 * Because only the received bytes are used (the Host header as sent, not the address we listen
 * on), a request signed elsewhere and forwarded verbatim, as the auth method's `iam` login does
 * with a client's GetCallerIdentity request, verifies just like one sent directly.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import {
  Cloud1Error,
  expiredToken,
  incompleteSignature,
  invalidClientTokenId,
  missingAuthenticationToken,
  signatureDoesNotMatch,
} from './errors';
import type { KeyRecord } from './state';

type SmithyRequest = Parameters<SignatureV4['presign']>[0];

/** The provider's allowance between the signer's clock and its own. */
export const MAX_CLOCK_SKEW_MS = 15 * 60 * 1000;

const ALGORITHM = 'AWS4-HMAC-SHA256';
const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

class Sha256 extends Hash {
  constructor(secret?: ConstructorParameters<typeof Hash>[1]) {
    super('sha256', secret);
  }
}

export interface ReceivedRequest {
  method: string;
  /** The request target as received: path plus `?query`, still percent-encoded. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface VerifiedCaller {
  accessKeyId: string;
  /** Service and region from the credential scope: how one endpoint tells IAM, STS and EC2 apart. */
  service: string;
  region: string;
  record: KeyRecord;
}

interface ParsedSignature {
  accessKeyId: string;
  shortDate: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
  amzDate: string;
  sessionToken: string | undefined;
  /** Seconds, for pre-signed (query string) requests only. */
  expires: number | undefined;
}

/** The signing service named by a request, without checking anything; undefined when unsigned. */
export function signedService(request: ReceivedRequest): string | undefined {
  try {
    return parseSignature(request)?.service;
  } catch {
    return undefined;
  }
}

export async function verifySignature(
  request: ReceivedRequest,
  lookup: (accessKeyId: string) => KeyRecord | undefined,
  now: number,
): Promise<VerifiedCaller> {
  const parsed = parseSignature(request);
  if (!parsed) throw missingAuthenticationToken();

  const record = lookup(parsed.accessKeyId);
  if (!record) throw invalidClientTokenId();
  let secretAccessKey: string;
  if (record.kind === 'long-term') {
    if (record.key.status !== 'Active') throw invalidClientTokenId();
    secretAccessKey = record.key.secretAccessKey;
  } else {
    // Temporary keys are useless without the session token they were issued with.
    if (parsed.sessionToken !== record.credentials.sessionToken) throw invalidClientTokenId();
    secretAccessKey = record.credentials.secretAccessKey;
  }

  const expected = await recompute(request, parsed, secretAccessKey);
  if (!equalHex(expected, parsed.signature)) throw signatureDoesNotMatch();
  checkPayloadHash(request);

  const signedAt = parseAmzDate(parsed.amzDate);
  if (parsed.expires !== undefined) {
    if (now > signedAt + parsed.expires * 1000) {
      throw signatureDoesNotMatch(`Signature expired: ${parsed.amzDate} is now earlier than ${amzDate(now - parsed.expires * 1000)}`);
    }
  } else if (Math.abs(now - signedAt) > MAX_CLOCK_SKEW_MS) {
    throw signatureDoesNotMatch(
      now > signedAt
        ? `Signature expired: ${parsed.amzDate} is now earlier than ${amzDate(now - MAX_CLOCK_SKEW_MS)} (${amzDate(now)} - 15 min.)`
        : `Signature not yet current: ${parsed.amzDate} is still later than ${amzDate(now + MAX_CLOCK_SKEW_MS)} (${amzDate(now)} + 15 min.)`,
    );
  }
  if (record.kind === 'temporary' && record.credentials.expiration <= now) throw expiredToken();

  return { accessKeyId: parsed.accessKeyId, service: parsed.service, region: parsed.region, record };
}

function parseSignature(request: ReceivedRequest): ParsedSignature | undefined {
  const header = headerValue(request.headers, 'authorization');
  const query = parseRawQuery(request.url);
  if (header !== undefined) {
    if (!header.startsWith(ALGORITHM + ' ')) {
      throw incompleteSignature(`Unsupported AWS 'algorithm': '${header.split(' ')[0] ?? ''}'`);
    }
    const fields = new Map<string, string>();
    for (const part of header.slice(ALGORITHM.length + 1).split(',')) {
      const eq = part.indexOf('=');
      if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
    }
    const credential = fields.get('Credential');
    const signedHeaders = fields.get('SignedHeaders');
    const signature = fields.get('Signature');
    if (!credential || !signedHeaders || !signature) {
      throw incompleteSignature(
        `Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters. Authorization=${header}`,
      );
    }
    const amzDateHeader = headerValue(request.headers, 'x-amz-date');
    if (amzDateHeader === undefined) {
      throw incompleteSignature("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.");
    }
    return {
      ...parseCredential(credential, amzDateHeader),
      signedHeaders: signedHeaders.split(';'),
      signature,
      amzDate: amzDateHeader,
      sessionToken: headerValue(request.headers, 'x-amz-security-token'),
      expires: undefined,
    };
  }
  const algorithm = first(query.get('X-Amz-Algorithm'));
  if (algorithm === undefined) return undefined;
  if (algorithm !== ALGORITHM) throw incompleteSignature(`Unsupported AWS 'algorithm': '${algorithm}'`);
  const credential = first(query.get('X-Amz-Credential'));
  const date = first(query.get('X-Amz-Date'));
  const signedHeaders = first(query.get('X-Amz-SignedHeaders'));
  const signature = first(query.get('X-Amz-Signature'));
  const expires = Number(first(query.get('X-Amz-Expires')) ?? '');
  if (!credential || !date || !signedHeaders || !signature || !Number.isInteger(expires)) {
    throw incompleteSignature(
      "AWS query-string parameters must include 'X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Signature', " +
        "'X-Amz-Date', 'X-Amz-SignedHeaders' and 'X-Amz-Expires'.",
    );
  }
  return {
    ...parseCredential(credential, date),
    signedHeaders: signedHeaders.split(';'),
    signature,
    amzDate: date,
    sessionToken: first(query.get('X-Amz-Security-Token')),
    expires,
  };
}

function parseCredential(credential: string, amzDateValue: string) {
  const parts = credential.split('/');
  const [accessKeyId, shortDate, region, service, terminator] = parts;
  if (parts.length !== 5 || !accessKeyId || !shortDate || !region || !service || terminator !== 'aws4_request') {
    throw incompleteSignature(`Credential should be scoped to a valid region. Credential=${credential}`);
  }
  if (!/^\d{8}T\d{6}Z$/.test(amzDateValue)) throw incompleteSignature(`Invalid date format: ${amzDateValue}`);
  if (!amzDateValue.startsWith(shortDate)) {
    throw signatureDoesNotMatch(`Credential should be scoped to a valid date: ${shortDate} is not ${amzDateValue.slice(0, 8)}`);
  }
  return { accessKeyId, shortDate, region, service };
}

async function recompute(request: ReceivedRequest, parsed: ParsedSignature, secretAccessKey: string): Promise<string> {
  const signed = new Set(parsed.signedHeaders);
  if (!signed.has('host')) throw signatureDoesNotMatch("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.");
  // Only the headers the client signed take part, so headers added in transit do not matter.
  const headers: Record<string, string> = {};
  for (const name of signed) {
    const value = headerValue(request.headers, name);
    if (value !== undefined) headers[name] = value;
  }
  const queryIndex = request.url.indexOf('?');
  const rawPath = queryIndex < 0 ? request.url : request.url.slice(0, queryIndex);
  const query: Record<string, string | string[]> = {};
  for (const [key, values] of parseRawQuery(request.url)) {
    if (key === 'X-Amz-Signature') continue;
    query[key] = values.length === 1 ? (values[0] ?? '') : values;
  }
  const host = headers.host ?? '';
  const toSign: SmithyRequest = {
    method: request.method,
    protocol: 'https:',
    hostname: host,
    path: safeDecode(rawPath),
    query,
    headers,
    body: request.body.length > 0 ? request.body : undefined,
  };
  // The session token is verified separately above; signing without one keeps the signer from
  // adding a token header the client may not have signed.
  const signer = new SignatureV4({
    credentials: { accessKeyId: parsed.accessKeyId, secretAccessKey },
    region: parsed.region,
    service: parsed.service,
    sha256: Sha256,
    applyChecksum: false,
  });
  const signingDate = new Date(parseAmzDate(parsed.amzDate));
  if (parsed.expires !== undefined) {
    const presigned = await signer.presign(toSign, {
      signingDate,
      expiresIn: parsed.expires,
      signableHeaders: signed,
      unsignableHeaders: new Set(),
    });
    return first(presigned.query?.['X-Amz-Signature']) ?? '';
  }
  const result = await signer.sign(toSign, { signingDate, signableHeaders: signed, unsignableHeaders: new Set() });
  const authorization = result.headers.authorization ?? '';
  return /Signature=([0-9a-f]+)/.exec(authorization)?.[1] ?? '';
}

/** A signed `x-amz-content-sha256` that does not describe the body would let the body be swapped. */
function checkPayloadHash(request: ReceivedRequest): void {
  const declared = headerValue(request.headers, 'x-amz-content-sha256');
  if (declared === undefined) return;
  const actual = request.body.length === 0 ? EMPTY_SHA256 : createHash('sha256').update(request.body).digest('hex');
  if (declared !== actual) {
    throw new Cloud1Error('XAmzContentSHA256Mismatch', 400, "The provided 'x-amz-content-sha256' header does not match what was computed.");
  }
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(',') : value;
}

/** Query parameters decoded for the canonical query; `+` stays literal, as the signer encoded it. */
function parseRawQuery(url: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const queryIndex = url.indexOf('?');
  if (queryIndex < 0) return out;
  for (const pair of url.slice(queryIndex + 1).split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = safeDecode(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? '' : safeDecode(pair.slice(eq + 1));
    const list = out.get(key);
    if (list) list.push(value);
    else out.set(key, [value]);
  }
  return out;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function first(value: string | string[] | undefined | null): string | undefined {
  if (value === undefined || value === null) return undefined;
  return Array.isArray(value) ? value[0] : value;
}

function parseAmzDate(value: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) throw incompleteSignature(`Invalid date format: ${value}`);
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

export function amzDate(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}Z$/, 'Z');
}

function equalHex(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}
