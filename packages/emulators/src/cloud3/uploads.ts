/**
 * The framing of uploads: resumable sessions fed by `Content-Range` PUTs, and multipart/related
 * bodies. Bytes of a session are only an object once the session is finalized, so an abandoned
 * upload never shows up in its bucket.
 */
import { badRequest } from './errors';

export interface UploadSession {
  bucket: string;
  name: string;
  /** The object resource sent when the session was started. */
  resource: Record<string, unknown>;
  /** The start request's query, whose preconditions are checked again at finalization. */
  query: URLSearchParams;
  chunks: Buffer[];
  received: number;
  /** The object's size, once a request has declared it. */
  total?: number;
  /** The object resource, set at finalization; any later PUT to the session gets it back. */
  result?: Record<string, unknown>;
}

/**
 * A parsed `Content-Range`: `bytes 0-262143/*` (a chunk), `bytes 0-*\/*` (the rest of the
 * object, ending with this request), `bytes *\/*` or `bytes *\/TOTAL` (a status query: no `first`).
 */
export interface ContentRange {
  first?: number;
  last?: number | '*';
  total?: number;
}

export function parseContentRange(header: string | undefined): ContentRange {
  // Without the header, the request carries the whole object.
  if (header === undefined) return { first: 0, last: '*' };
  // `-1` is what the SDK declares as the last byte of an empty final chunk.
  const m = /^bytes (?:\*|(\d+)-(-1|\d+|\*))\/(\*|\d+)$/.exec(header.trim());
  if (!m) throw badRequest(`Invalid Content-Range: ${header}`);
  const range: ContentRange = {
    first: m[1] === undefined ? undefined : Number(m[1]),
    last: m[2] === undefined || m[2] === '*' ? (m[2] as '*' | undefined) : Number(m[2]),
    total: m[3] === '*' ? undefined : Number(m[3]),
  };
  const { first, last, total } = range;
  if (typeof last === 'number' && ((first !== undefined && last < first - 1) || (total !== undefined && last >= total))) {
    throw badRequest(`Invalid Content-Range: ${header}`);
  }
  return range;
}

/**
 * Appends a PUT body that starts at byte `range.first`. Bytes the session already holds (a chunk
 * resent after a lost response) are skipped, and nothing past the declared end is kept. A body
 * that starts beyond what the session holds is refused, as GCS does: the client must ask for
 * the offset and resend.
 */
export async function appendBody(session: UploadSession, body: AsyncIterable<Buffer>, range: ContentRange): Promise<void> {
  const first = range.first ?? 0;
  if (first > session.received) {
    for await (const _ of body); // drain, so the connection can carry the error
    throw badRequest(
      `Invalid request. According to the Content-Range header, the upload offset is ${first} byte(s), ` +
        `which exceeds already uploaded size of ${session.received} byte(s).`,
    );
  }
  const end = typeof range.last === 'number' ? range.last + 1 : (session.total ?? Infinity);
  let position = first;
  for await (const piece of body) {
    const from = Math.max(0, session.received - position);
    const to = Math.min(piece.length, end - position);
    position += piece.length;
    if (to > from) {
      session.chunks.push(piece.subarray(from, to));
      session.received += to - from;
    }
  }
}

/** Whether the session now holds the whole object. */
export function isComplete(session: UploadSession, range: ContentRange): boolean {
  if (session.total !== undefined) return session.received === session.total;
  return range.first !== undefined && range.last === '*';
}

export interface MultipartPart {
  headers: Map<string, string>;
  body: Buffer;
}

/** Splits a multipart/related body (RFC 2046 framing; header names lower-cased). */
export function parseMultipart(body: Buffer, contentType: string): MultipartPart[] {
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (!boundary) throw badRequest('Missing multipart boundary');
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  const open = body.indexOf(`--${boundary}`);
  if (open < 0) throw badRequest('Malformed multipart body');
  let at = open + boundary.length + 2;
  const parts: MultipartPart[] = [];
  while (body.toString('latin1', at, at + 2) !== '--') {
    const next = body.indexOf(delimiter, at);
    const headerEnd = body.indexOf('\r\n\r\n', at);
    if (next < 0 || headerEnd < 0 || headerEnd > next) throw badRequest('Malformed multipart body');
    const headers = new Map<string, string>();
    for (const line of body.toString('utf8', at, headerEnd).split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    parts.push({ headers, body: body.subarray(headerEnd + 4, next) });
    at = next + delimiter.length;
  }
  return parts;
}
