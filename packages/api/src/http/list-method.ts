// Vault clients use the non-standard HTTP method LIST, which node's HTTP parser (llhttp) rejects
// with HPE_INVALID_METHOD before any JavaScript sees the request. The parser cannot be taught new
// methods, so on a connection that sends LIST (see list-server.ts) we sit between the socket and
// the http.Server: requests whose method is exactly `LIST` are rewritten on the wire to `GET` plus
// a marker header, and everything else is handed over byte for byte.

import type * as http from 'node:http';

/** Header inserted into rewritten LIST requests; see {@link isListRequest}. */
export const LIST_MARKER_HEADER = 'x-strongroom-list';

/**
 * True when the request arrived as `LIST`. A client can forge the marker header on any request;
 * that is harmless because it can only ever mean "list", which any client may already ask for
 * with `GET ...?list=true`, so the dispatcher must treat both spellings identically.
 */
export function isListRequest(req: http.IncomingMessage): boolean {
  return req.headers[LIST_MARKER_HEADER] === 'true';
}

export interface ListMethodRewriter {
  /**
   * Feeds the next bytes read from the client and returns the bytes to hand to the HTTP parser.
   * The result may be `chunk` itself (the common case), a view into it, a new buffer, or empty
   * (while the start of a possible `LIST` is held back). Never retains `chunk` beyond the call.
   */
  push(chunk: Buffer): Buffer;
  /** At end of input: bytes still held back, so the parser sees exactly what the client sent. */
  end(): Buffer;
  /** True once framing was not understood (or the connection was upgraded): bytes pass untouched. */
  readonly passthrough: boolean;
}

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HTAB = 0x09;
const COLON = 0x3a;
const SEMICOLON = 0x3b;

const LIST_SP = Buffer.from('LIST ', 'latin1');
const GET_SP = Buffer.from('GET ', 'latin1');
const CONNECT_SP = Buffer.from('CONNECT ', 'latin1');
const MARKER_LINE = Buffer.from(`${LIST_MARKER_HEADER}: true\r\n`, 'latin1');
const EMPTY = Buffer.alloc(0);

// Well above node's own 16 KiB default header limit, so node rejects oversized heads first; this
// only bounds what we keep in memory while a line is split across reads.
const MAX_BLOCK_BYTES = 64 * 1024;
// 12 hex digits is 2^48 bytes per chunk: more than any real client sends, and exact in a double.
const MAX_CHUNK_SIZE_DIGITS = 12;

const HEAD = 0;
const FIXED_BODY = 1;
const CHUNK_SIZE = 2;
const CHUNK_DATA = 3;
const CHUNK_DATA_CRLF = 4;
const TRAILERS = 5;
const PASSTHROUGH = 6;

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x57;
  return -1;
}

/**
 * Framing follows node's strict parser: whenever we could disagree with it about where a request
 * ends (bare LF, obs-fold, duplicate or malformed Content-Length, CL with TE, odd chunk syntax),
 * we stop rewriting instead of guessing, so node rejects the input exactly as it would unaided and
 * a body can never be mistaken for a request. Output is produced as views of the input where
 * possible; only a chunk that actually contains a rewrite is copied.
 */
class Rewriter implements ListMethodRewriter {
  private mode = HEAD;
  /** FIXED_BODY/CHUNK_DATA: body bytes left; CHUNK_DATA_CRLF: bytes of the CRLF already seen. */
  private remaining = 0;
  /** HEAD: how many bytes of "LIST " the request line has matched so far; -1 once decided. */
  private methodMatched = 0;
  /** Start of a line split across reads. Its bytes were already emitted; this copy is for parsing. */
  private carry: Buffer | null = null;
  /** Bytes of the current header block, chunk-size line or trailer block. */
  private blockBytes = 0;
  private inRequestLine = true;
  private isList = false;
  private contentLength = -1;
  private transferEncoding = false;
  private chunked = false;
  private upgrade = false;

  // Output assembly for the push() in progress: emitted pieces so far, and where the current run
  // of unmodified input bytes began. `pieces` stays null while the output is the input.
  private pieces: Buffer[] | null = null;
  private runStart = 0;

  get passthrough(): boolean {
    return this.mode === PASSTHROUGH;
  }

  push(chunk: Buffer): Buffer {
    const len = chunk.length;
    const mode = this.mode;
    if (mode === PASSTHROUGH || len === 0) return chunk;
    if ((mode === FIXED_BODY || mode === CHUNK_DATA) && len < this.remaining) {
      this.remaining -= len;
      return chunk;
    }

    this.pieces = null;
    this.runStart = 0;
    let pos = 0;
    while (pos < len) {
      switch (this.mode) {
        case HEAD:
          pos = this.head(chunk, pos);
          break;
        case FIXED_BODY:
        case CHUNK_DATA: {
          const available = len - pos;
          if (available < this.remaining) {
            this.remaining -= available;
            pos = len;
          } else {
            pos += this.remaining;
            this.remaining = 0;
            if (this.mode === FIXED_BODY) this.startRequest();
            else this.mode = CHUNK_DATA_CRLF;
          }
          break;
        }
        case CHUNK_DATA_CRLF:
          if (chunk[pos] !== (this.remaining === 0 ? CR : LF)) {
            this.bail();
          } else {
            pos++;
            if (++this.remaining === 2) this.enterLineMode(CHUNK_SIZE);
          }
          break;
        case CHUNK_SIZE:
        case TRAILERS:
          pos = this.line(chunk, pos);
          break;
        default:
          pos = len;
      }
    }
    return this.collect(chunk);
  }

  end(): Buffer {
    if (this.mode === HEAD && this.methodMatched > 0) {
      const held = Buffer.from(LIST_SP.subarray(0, this.methodMatched));
      this.methodMatched = 0;
      return held;
    }
    return EMPTY;
  }

  private collect(chunk: Buffer): Buffer {
    const pieces = this.pieces;
    const start = this.runStart;
    if (pieces === null) return start === 0 ? chunk : chunk.subarray(start);
    this.pieces = null;
    if (start < chunk.length) pieces.push(chunk.subarray(start));
    if (pieces.length === 1) return pieces[0]!;
    return Buffer.concat(pieces);
  }

  /** Ends the current run of input bytes at `upTo`, so replacement bytes can follow it. */
  private cut(chunk: Buffer, upTo: number): Buffer[] {
    const pieces = (this.pieces ??= []);
    if (upTo > this.runStart) pieces.push(chunk.subarray(this.runStart, upTo));
    return pieces;
  }

  private head(chunk: Buffer, pos: number): number {
    if (this.methodMatched >= 0) {
      const len = chunk.length;
      const held = this.methodMatched;
      if (held === 0) {
        // Like llhttp, tolerate empty lines between requests (some clients add CRLF after a body).
        while (pos < len && (chunk[pos] === CR || chunk[pos] === LF)) pos++;
        if (pos === len) return pos;
      }
      let matched = held;
      let p = pos;
      while (matched < 5 && p < len && chunk[p] === LIST_SP[matched]) {
        matched++;
        p++;
      }
      if (matched === 5) {
        // Any held bytes belong to the replaced "LIST " and are dropped.
        this.cut(chunk, pos).push(GET_SP);
        this.runStart = p;
        this.methodMatched = -1;
        this.isList = true;
        this.blockBytes = 5;
        pos = p;
      } else if (p === len) {
        // Undecided until more bytes arrive; hold the prefix back rather than emit a stray "LIS".
        this.cut(chunk, pos);
        this.runStart = len;
        this.methodMatched = matched;
        return len;
      } else {
        this.methodMatched = -1;
        if (held > 0) {
          // pos is 0 here: bytes are only ever held at the end of the previous read.
          this.cut(chunk, pos).push(LIST_SP.subarray(0, held));
          this.carry = LIST_SP.subarray(0, held);
          this.blockBytes = held;
        }
      }
    }
    return this.line(chunk, pos);
  }

  private line(chunk: Buffer, pos: number): number {
    const len = chunk.length;
    const lf = chunk.indexOf(LF, pos);
    const end = lf === -1 ? len : lf + 1;
    this.blockBytes += end - pos;
    if (this.blockBytes > MAX_BLOCK_BYTES) {
      this.bail();
      return len;
    }
    if (lf === -1) {
      const rest = chunk.subarray(pos);
      this.carry = this.carry === null ? Buffer.from(rest) : Buffer.concat([this.carry, rest]);
      return len;
    }

    let buf = chunk;
    let start = pos;
    let stop = lf;
    if (this.carry !== null) {
      buf = Buffer.concat([this.carry, chunk.subarray(pos, lf)]);
      start = 0;
      stop = buf.length;
      this.carry = null;
    }
    // node's parser insists on CRLF; a bare LF is where we and it could disagree, so give up.
    if (stop === start || buf[stop - 1] !== CR) {
      this.bail();
      return len;
    }
    stop--;

    if (this.mode === HEAD) this.headLine(buf, start, stop, chunk, end);
    else if (this.mode === CHUNK_SIZE) this.chunkSizeLine(buf, start, stop);
    else if (stop === start) this.startRequest(); // blank line ends the trailers
    return end;
  }

  /** One line of a request head, CRLF excluded; `next` is where the following line starts in `chunk`. */
  private headLine(buf: Buffer, start: number, stop: number, chunk: Buffer, next: number): void {
    if (this.inRequestLine) {
      this.inRequestLine = false;
      if (this.isList) {
        this.cut(chunk, next).push(MARKER_LINE);
        this.runStart = next;
      } else if (stop - start >= CONNECT_SP.length && buf.compare(CONNECT_SP, 0, CONNECT_SP.length, start, start + CONNECT_SP.length) === 0) {
        // What follows a CONNECT is a tunnel, not HTTP.
        this.bail();
      }
      return;
    }
    if (stop === start) {
      this.endOfHead();
      return;
    }
    const first = buf[start];
    if (first === SP || first === HTAB) {
      // obs-fold continuation line: node rejects it.
      this.bail();
      return;
    }
    const colon = buf.indexOf(COLON, start);
    if (colon === -1 || colon >= stop) {
      this.bail();
      return;
    }
    const nameLength = colon - start;
    // Only three header names matter for framing; skip the string conversion for all others.
    if (nameLength !== 14 && nameLength !== 17 && nameLength !== 7) return;
    const name = buf.toString('latin1', start, colon).toLowerCase();
    if (name === 'content-length') {
      const value = buf.toString('latin1', colon + 1, stop).trim();
      // node rejects duplicates, signs, lists and other oddities; we just stop rewriting.
      if (this.contentLength !== -1 || value.length === 0 || value.length > 15 || !/^[0-9]+$/.test(value)) {
        this.bail();
        return;
      }
      this.contentLength = Number(value);
    } else if (name === 'transfer-encoding') {
      // As in node, only a final "chunked" coding frames the body, and the last header wins.
      const value = buf.toString('latin1', colon + 1, stop);
      this.transferEncoding = true;
      this.chunked = value.slice(value.lastIndexOf(',') + 1).trim().toLowerCase() === 'chunked';
    } else if (name === 'upgrade') {
      this.upgrade = true;
    }
  }

  private endOfHead(): void {
    if (this.upgrade) {
      // After a switch of protocols the bytes are no longer HTTP/1.1 requests.
      this.bail();
    } else if (this.transferEncoding) {
      if (!this.chunked || this.contentLength !== -1) this.bail();
      else this.enterLineMode(CHUNK_SIZE);
    } else if (this.contentLength > 0) {
      this.mode = FIXED_BODY;
      this.remaining = this.contentLength;
    } else {
      this.startRequest();
    }
  }

  private chunkSizeLine(buf: Buffer, start: number, stop: number): void {
    let size = 0;
    let i = start;
    for (; i < stop; i++) {
      const digit = hexValue(buf[i]!);
      if (digit < 0) break;
      size = size * 16 + digit;
    }
    // Digits, then nothing or ";extensions" (node refuses whitespace before the semicolon).
    if (i === start || i - start > MAX_CHUNK_SIZE_DIGITS || (i < stop && buf[i] !== SEMICOLON)) {
      this.bail();
    } else if (size === 0) {
      this.enterLineMode(TRAILERS);
    } else {
      this.mode = CHUNK_DATA;
      this.remaining = size;
    }
  }

  private enterLineMode(mode: typeof CHUNK_SIZE | typeof TRAILERS): void {
    this.mode = mode;
    this.blockBytes = 0;
  }

  private startRequest(): void {
    this.mode = HEAD;
    this.methodMatched = 0;
    this.blockBytes = 0;
    this.inRequestLine = true;
    this.isList = false;
    this.contentLength = -1;
    this.transferEncoding = false;
    this.chunked = false;
    this.upgrade = false;
  }

  private bail(): void {
    this.mode = PASSTHROUGH;
    this.carry = null;
  }
}

export function createListMethodRewriter(): ListMethodRewriter {
  return new Rewriter();
}
