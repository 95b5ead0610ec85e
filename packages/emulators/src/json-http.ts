/**
 * The plumbing the JSON-over-HTTP(S) emulators share: a loopback listener whose handler may
 * throw an `HttpError` (sent in the emulator's own error shape), body reading with a size cap,
 * and "fail the next N requests" fault injection.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/** A refusal with its status and the exact body the emulated service would send. */
export class HttpError extends Error {
  override readonly name = 'HttpError';

  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`);
  }
}

export interface ListenOptions {
  host?: string;
  port?: number;
  /** Serve HTTPS with this certificate and key instead of plain HTTP. */
  tls?: { cert: string; key: string };
}

export interface Listening {
  url: string;
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;

/**
 * Listens on `host` (default 127.0.0.1) and routes every request to `handler`; `internal` turns
 * an unexpected exception into the service's 500 body, so a handler bug never hangs a client.
 */
export async function listen(options: ListenOptions, handler: Handler, internal: (error: unknown) => HttpError): Promise<Listening> {
  const host = options.host ?? '127.0.0.1';
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      url = new URL('http://localhost/');
    }
    handler(req, res, url).catch((error: unknown) => {
      const failure = error instanceof HttpError ? error : internal(error);
      req.resume();
      if (!res.headersSent) sendJson(res, failure.status, failure.body, failure.headers);
      else res.destroy();
    });
  };
  const server: Server = options.tls ? createHttpsServer(options.tls, onRequest) : createHttpServer(onRequest);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The whole body; past `limit` bytes the rest is drained and `tooLarge` is thrown. */
export async function readBody(req: IncomingMessage, limit: number, tooLarge: () => HttpError): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size <= limit) chunks.push(chunk as Buffer);
  }
  if (size > limit) throw tooLarge();
  return Buffer.concat(chunks);
}

/** A JSON body (empty means undefined); anything unparsable is `invalid`. */
export async function readJson(req: IncomingMessage, limit: number, invalid: (why: string) => HttpError): Promise<unknown> {
  const body = await readBody(req, limit, () => invalid(`the request body is larger than ${limit} bytes`));
  if (body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    throw invalid('the request body is not valid JSON');
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, {
    ...(text ? { 'content-type': 'application/json; charset=utf-8' } : {}),
    ...headers,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** "Answer `status` to the next `count` requests", for testing a client's retries. */
export class Faults {
  private remaining = 0;
  private status = 503;

  failNext(count: number, status = 503): void {
    if (!Number.isInteger(count) || count < 0) throw new RangeError('count must be a non-negative integer');
    this.remaining = count;
    this.status = status;
  }

  /** The status to fail this request with, or undefined to serve it. */
  take(): number | undefined {
    if (this.remaining <= 0) return undefined;
    this.remaining--;
    return this.status;
  }

  get pending(): number {
    return this.remaining;
  }
}
