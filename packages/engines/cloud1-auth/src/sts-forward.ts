/**
 * Replays a client's signed GetCallerIdentity request to STS. The server cannot check the
 * signature itself (it lacks the client's secret), so STS does, and answers who signed.
 *
 * node:http/https rather than fetch: fetch replaces a custom Host header, and the Host the
 * client signed (the provider's public STS name) must reach STS unchanged while the connection
 * goes to the configured endpoint.
 */
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BadRequestError } from '@strongroom/core';

export interface CallerIdentity {
  arn: string;
  userId: string;
  account: string;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

const TIMEOUT_MS = 15_000;
const MAX_ANSWER_BYTES = 64 * 1024;

function send(endpoint: URL, headers: OutgoingHttpHeaders, body: string): Promise<Answer> {
  const request = endpoint.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request({
      protocol: endpoint.protocol, hostname: endpoint.hostname.replace(/^\[(.*)\]$/, '$1'), port: endpoint.port || undefined,
      path: endpoint.pathname || '/', method: 'POST', headers, timeout: TIMEOUT_MS,
    }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) req.destroy(new Error('STS answered more than expected'));
        else chunks.push(chunk);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from STS within ${TIMEOUT_MS / 1000}s`)));
    req.on('error', reject);
    req.end(body);
  });
}

function element(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  return m?.[1]?.replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'");
}

/**
 * Sends the request (headers as the client signed them, Host included) to `endpoint`; retries
 * network failures and 5xx answers. A refusal by STS is the client's problem: a 400 naming it.
 */
export async function forwardGetCallerIdentity(
  endpoint: string, headers: Map<string, string[]>, body: string, attempts: number,
): Promise<CallerIdentity> {
  const url = new URL(endpoint);
  const outgoing: OutgoingHttpHeaders = {};
  for (const [name, values] of headers) {
    if (name === 'connection' || name === 'transfer-encoding') continue;
    outgoing[name] = values.length === 1 ? values[0] : values;
  }
  if (outgoing['content-length'] === undefined) outgoing['content-length'] = String(Buffer.byteLength(body));
  let answer: Answer | undefined;
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      answer = await send(url, outgoing, body);
      if (answer.status < 500) break;
    } catch (err) {
      lastError = err;
      answer = undefined;
    }
  }
  if (!answer) throw new BadRequestError(`error making upstream request to STS: ${(lastError as Error | undefined)?.message ?? 'no answer'}`);
  if (answer.status !== 200) {
    const code = element(answer.body, 'Code') ?? 'unknown';
    const message = element(answer.body, 'Message') ?? '';
    throw new BadRequestError(`error making upstream request: received error code ${answer.status} from STS: ${code}: ${message}`);
  }
  const arn = element(answer.body, 'Arn');
  const userId = element(answer.body, 'UserId');
  const account = element(answer.body, 'Account');
  if (!arn || !userId || !account) throw new BadRequestError('error making upstream request: STS answered without a caller identity');
  return { arn, userId, account };
}
