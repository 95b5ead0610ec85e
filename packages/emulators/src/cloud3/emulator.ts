/**
 * The cloud3 storage emulator: an in-memory stand-in for the Cloud Storage JSON API, enough for
 * the official `@google-cloud/storage` SDK pointed at it with `apiEndpoint` (the SDK then sends
 * no credentials, and none are checked).
 *
 * Routes: `/storage/v1/b/...` for metadata, listing and deletes (and `alt=media` reads),
 * `/download/storage/v1/b/...` for media reads, `/upload/storage/v1/b/{b}/o` for multipart
 * and resumable uploads. Buckets spring into existence on first write.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { badRequest, Cloud3Error, noSuchBucket, notFound } from './errors';
import { bucketResource, Cloud3Store, objectResource, type StoredObject } from './store';
import { appendBody, isComplete, parseContentRange, parseMultipart, type UploadSession } from './uploads';

export interface Cloud3StartOptions {
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
}

const ROUTE = /^\/(?:(upload|download)\/)?storage\/v1\/b(?:\/([^/]+)(?:\/(o)(?:\/(.+))?)?)?\/?$/;

export class Cloud3StorageEmulator {
  private readonly store = new Cloud3Store();
  private readonly uploads = new Map<string, UploadSession>();
  private faults = { remaining: 0, status: 503 };
  private server!: Server;
  private baseUrl = '';

  private constructor() {}

  static async start(options: Cloud3StartOptions = {}): Promise<Cloud3StorageEmulator> {
    const emulator = new Cloud3StorageEmulator();
    const host = options.host ?? '127.0.0.1';
    emulator.server = createServer((req, res) => {
      emulator.handle(req, res).catch((error: unknown) => {
        const failure =
          error instanceof Cloud3Error ? error
          : error instanceof URIError ? badRequest('Malformed percent-encoding in the URL')
          : new Cloud3Error(500, 'backendError', String(error));
        if (!res.headersSent) send(res, failure.status, failure.body());
        else res.destroy();
      });
    });
    await new Promise<void>((resolve, reject) => {
      emulator.server.once('error', reject);
      emulator.server.listen(options.port ?? 0, host, () => {
        emulator.server.off('error', reject);
        resolve();
      });
    });
    const { port } = emulator.server.address() as AddressInfo;
    emulator.baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    return emulator;
  }

  /** Base URL to give the SDK as `apiEndpoint`, e.g. `http://127.0.0.1:40123`. */
  get url(): string {
    return this.baseUrl;
  }

  /** Stops listening and closes every connection, idle keep-alive ones included. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  createBucket(name: string): void {
    this.store.bucket(name, true);
  }

  objectNames(bucket: string): string[] {
    return this.store.names(bucket);
  }

  /** The stored bytes themselves, not a copy: a test may corrupt them to play bit rot. */
  objectData(bucket: string, name: string): Buffer | undefined {
    return this.store.bucket(bucket)?.objects.get(name)?.data;
  }

  /** Resumable sessions started and not (yet) finalized. */
  openUploads(): number {
    return [...this.uploads.values()].filter((s) => !s.result).length;
  }

  /**
   * Fault injection: the next `count` requests under `/upload/` (session starts, chunk PUTs and
   * status queries alike) are answered with `status` after their body is read and discarded.
   */
  failNextUploads(count: number, status = 503): void {
    this.faults = { remaining: count, status };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = ROUTE.exec(url.pathname);
    if (!route) throw notFound();
    const [, api, rawBucket, objects, rawName] = route;
    const bucket = rawBucket === undefined ? undefined : decodeURIComponent(rawBucket);
    const name = rawName === undefined ? undefined : decodeURIComponent(rawName);
    const query = url.searchParams;

    if (api === 'upload') {
      if (bucket === undefined || !objects || name !== undefined) throw notFound();
      if (this.faults.remaining > 0) {
        this.faults.remaining--;
        await readAll(req);
        throw new Cloud3Error(this.faults.status, 'backendError', `Injected fault (${this.faults.status})`);
      }
      const session = this.uploads.get(query.get('upload_id') ?? '');
      if (req.method === 'PUT' && session) return this.continueUpload(req, res, session);
      if (req.method === 'PUT') throw new Cloud3Error(404, 'notFound', 'No such upload session.');
      if (req.method !== 'POST') throw notFound();
      if (query.get('uploadType') === 'multipart') return this.multipartUpload(req, res, bucket, query);
      if (query.get('uploadType') === 'resumable') return this.startSession(req, res, bucket, url);
      throw badRequest(`Unsupported uploadType: ${query.get('uploadType')}`);
    }

    if (bucket === undefined) {
      if (req.method !== 'POST' || api) throw notFound();
      return this.insertBucket(req, res);
    }
    if (!objects) {
      const found = this.store.bucket(bucket);
      if (req.method !== 'GET') throw notFound();
      if (!found) throw noSuchBucket();
      return sendJson(res, 200, bucketResource(bucket, found));
    }
    if (name === undefined) {
      if (req.method !== 'GET') throw notFound();
      const page = this.store.list(bucket, query);
      // Like GCS, empty `items` and `prefixes` are left out rather than sent as [].
      return sendJson(res, 200, {
        kind: 'storage#objects',
        ...(page.nextPageToken === undefined ? {} : { nextPageToken: page.nextPageToken }),
        ...(page.prefixes.length ? { prefixes: page.prefixes } : {}),
        ...(page.items.length ? { items: page.items.map(objectResource) } : {}),
      });
    }
    if (req.method === 'GET') {
      const object = this.store.get(bucket, name, query);
      if (api === 'download' || query.get('alt') === 'media') return sendMedia(req, res, object);
      return sendJson(res, 200, objectResource(object));
    }
    if (req.method === 'DELETE') {
      this.store.delete(bucket, name, query);
      return send(res, 204, '');
    }
    throw notFound();
  }

  private async insertBucket(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const name = parseResource(await readAll(req)).name;
    if (typeof name !== 'string' || !name) throw badRequest('Required parameter: name');
    if (this.store.bucket(name)) {
      throw new Cloud3Error(409, 'conflict', 'Your previous request to create the named bucket succeeded and you already own it.');
    }
    return sendJson(res, 200, bucketResource(name, this.store.bucket(name, true)!));
  }

  /** `uploadType=multipart`: a JSON object resource, then the media, in one request. */
  private async multipartUpload(req: IncomingMessage, res: ServerResponse, bucket: string, query: URLSearchParams): Promise<void> {
    const [metadata, media] = parseMultipart(await readAll(req), req.headers['content-type'] ?? '');
    if (!metadata || !media) throw badRequest('A multipart upload needs a metadata part and a media part');
    const resource = parseResource(metadata.body);
    resource.contentType ??= media.headers.get('content-type');
    const object = this.store.put(bucket, objectName(query, resource), media.body, { ...resource, ...googHash(req) }, query);
    return sendJson(res, 200, objectResource(object));
  }

  /** `uploadType=resumable`: opens a session, whose URL goes back in `Location`. */
  private async startSession(req: IncomingMessage, res: ServerResponse, bucket: string, url: URL): Promise<void> {
    const query = url.searchParams;
    const resource = parseResource(await readAll(req));
    resource.contentType ??= req.headers['x-upload-content-type'];
    const name = objectName(query, resource);
    this.store.checkConditions(bucket, name, query);
    const id = randomUUID();
    const declared = String(req.headers['x-upload-content-length']);
    const total = /^\d+$/.test(declared) ? Number(declared) : undefined;
    this.uploads.set(id, { bucket, name, resource, query, chunks: [], received: 0, total });
    // The SDK PUTs to exactly this URL, so it must reach this server the way the client did.
    const origin = req.headers.host ? `http://${req.headers.host}` : this.url;
    res.setHeader('location', `${origin}${url.pathname}?${new URLSearchParams({ uploadType: 'resumable', name, upload_id: id })}`);
    return send(res, 200, '');
  }

  /**
   * A PUT to a session: a chunk (answered 308 with the `Range` held so far), the last chunk or
   * whole body (answered with the object), or a status query with no body.
   */
  private async continueUpload(req: IncomingMessage, res: ServerResponse, session: UploadSession): Promise<void> {
    if (session.result) {
      await readAll(req);
      return sendJson(res, 200, session.result);
    }
    const range = parseContentRange(req.headers['content-range']);
    if (range.total !== undefined) session.total = range.total;
    if (range.first !== undefined) await appendBody(session, req, range);
    else await readAll(req);
    if (!isComplete(session, range)) {
      if (session.received > 0) res.setHeader('range', `bytes=0-${session.received - 1}`);
      return send(res, 308, '');
    }
    const data = Buffer.concat(session.chunks);
    const object = this.store.put(session.bucket, session.name, data, { ...session.resource, ...googHash(req) }, session.query);
    session.result = objectResource(object);
    session.chunks = [];
    return sendJson(res, 200, session.result);
  }
}

/** Media with the headers the SDK validates downloads against; single `Range`s are honoured. */
function sendMedia(req: IncomingMessage, res: ServerResponse, object: StoredObject): void {
  const size = object.data.length;
  let body = object.data;
  const m = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
  if (m && (m[1] || m[2])) {
    const start = m[1] === '' ? Math.max(0, size - Number(m[2])) : Number(m[1]);
    const end = m[1] === '' || m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (start > end) {
      res.setHeader('content-range', `bytes */${size}`);
      throw new Cloud3Error(416, 'requestedRangeNotSatisfiable', 'The requested range cannot be satisfied.');
    }
    res.setHeader('content-range', `bytes ${start}-${end}/${size}`);
    body = body.subarray(start, end + 1);
  }
  res.setHeader('content-type', String(object.fields.contentType ?? 'application/octet-stream'));
  res.setHeader('x-goog-hash', `crc32c=${object.crc32c},md5=${object.md5Hash}`);
  res.setHeader('x-goog-generation', String(object.generation));
  res.setHeader('x-goog-metageneration', String(object.metageneration));
  // The SDK only validates hashes when told the stored bytes are not gzip-encoded.
  res.setHeader('x-goog-stored-content-encoding', 'identity');
  res.setHeader('x-goog-stored-content-length', String(size));
  res.setHeader('accept-ranges', 'bytes');
  send(res, body === object.data ? 200 : 206, body);
}

/** Hashes from an `x-goog-hash: crc32c=...,md5=...` request header, as resource fields. */
function googHash(req: IncomingMessage): Record<string, string> {
  const hashes: Record<string, string> = {};
  for (const pair of String(req.headers['x-goog-hash'] ?? '').split(',')) {
    const eq = pair.indexOf('=');
    const [key, value] = [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()];
    if (key === 'md5') hashes.md5Hash = value;
    else if (key === 'crc32c') hashes.crc32c = value;
  }
  return hashes;
}

/** The object name: the `name` parameter, or else the resource's. */
function objectName(query: URLSearchParams, resource: Record<string, unknown>): string {
  const name = query.get('name') ?? resource.name;
  if (typeof name !== 'string' || !name) throw badRequest('Required parameter: name');
  return name;
}

function parseResource(body: Buffer): Record<string, unknown> {
  if (body.length === 0) return {};
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // reported below, as for a body that is JSON but not an object
  }
  throw badRequest('Parse Error: the request body must be a JSON object');
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, JSON.stringify(body));
}

/** Always with Content-Length, so bodiless answers (204, 308) keep the connection reusable. */
function send(res: ServerResponse, status: number, body: Buffer | string): void {
  if (typeof body === 'string' && body && !res.hasHeader('content-type')) {
    res.setHeader('content-type', 'application/json; charset=UTF-8');
  }
  res.writeHead(status, { 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
