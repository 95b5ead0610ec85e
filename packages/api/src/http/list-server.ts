// How the API's http.Server gets its connections. A connection starts as the plain socket, which
// node's HTTP parser reads natively: no JavaScript runs between the kernel and the parser, and
// that is a large share of what a small request costs. The first LIST a client sends makes that
// parser fail (list-method.ts); the connection is then taken back from the http.Server and handed
// to it again behind a ListRewritingSocket, which rewrites LIST for the rest of the connection.
//
// Taking a connection back uses what node's http.Server attaches to a socket it adopts (its
// listeners, its parser, its overridden `on`), the same steps it takes itself when a request
// upgrades the connection. Tests in list-server.test.ts pin that behaviour on the Node versions
// we run on.

import type * as http from 'node:http';
import type * as net from 'node:net';
import { Duplex } from 'node:stream';
import type * as tls from 'node:tls';
import { createListMethodRewriter } from './list-method';

/**
 * A Duplex that node's http.Server can adopt as if it were the socket: reads are the socket's
 * bytes after LIST rewriting, everything else goes straight to the socket.
 *
 * It deliberately has no `_handle`: given one, the http.Server would read the native handle
 * directly (parser.consume) and bypass the rewriter.
 */
class ListRewritingSocket extends Duplex {
  private readonly rewriter = createListMethodRewriter();
  private pendingWrite: ((error?: Error | null) => void) | null = null;

  /** `head`: bytes already read from the socket that belong before anything it reads next. */
  constructor(private readonly socket: net.Socket, head: Buffer) {
    super({
      allowHalfOpen: true,
      // Strings (response heads) go to the socket as they are; it encodes them more cheaply.
      decodeStrings: false,
      writableHighWaterMark: socket.writableHighWaterMark,
      readableHighWaterMark: socket.readableHighWaterMark,
    });
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('drain', this.onDrain);
    socket.on('timeout', this.onTimeout);
    socket.on('error', this.onError);
    socket.on('close', this.onClose);
    const out = this.rewriter.push(head);
    if (out.length !== 0) this.push(out);
  }

  private readonly onData = (chunk: Buffer): void => {
    const out = this.rewriter.push(chunk);
    if (out.length !== 0 && !this.push(out)) this.socket.pause();
  };

  private readonly onEnd = (): void => {
    const rest = this.rewriter.end();
    if (rest.length !== 0) this.push(rest);
    this.push(null);
  };

  private readonly onDrain = (): void => {
    const callback = this.pendingWrite;
    if (callback !== null) {
      this.pendingWrite = null;
      callback();
    }
  };

  private readonly onTimeout = (): void => {
    this.emit('timeout');
  };

  private readonly onError = (error: Error): void => {
    this.destroy(error);
  };

  private readonly onClose = (): void => {
    if (!this.destroyed) this.destroy();
  };

  override _read(): void {
    if (this.socket.isPaused()) this.socket.resume();
  }

  override _write(chunk: Buffer | string, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    // Completing as soon as the socket accepts the bytes (rather than on its write callback) keeps
    // writes synchronous; a full socket buffer holds the callback until 'drain', which is what
    // propagates backpressure to the response.
    if (this.socket.write(chunk, encoding)) callback();
    else this.pendingWrite = callback;
  }

  override _writev(chunks: Array<{ chunk: Buffer | string; encoding: BufferEncoding }>, callback: (error?: Error | null) => void): void {
    // Keep node's corking (status line + headers + body in one syscall) intact on the socket.
    const socket = this.socket;
    let ok = true;
    socket.cork();
    for (const { chunk, encoding } of chunks) ok = socket.write(chunk, encoding);
    socket.uncork();
    if (ok) callback();
    else this.pendingWrite = callback;
  }

  override _final(callback: (error?: Error | null) => void): void {
    const socket = this.socket;
    if (socket.destroyed) {
      callback();
      return;
    }
    socket.end();
    // Report 'finish' only once the socket has flushed, or an auto-destroy would cut off the tail.
    if (socket.writableFinished) callback();
    else socket.once('finish', () => callback());
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.socket.destroyed) this.socket.destroy();
    callback(error);
  }

  /** node's http.Server calls this after a `Connection: close` response, as net.Socket has it. */
  destroySoon(): void {
    if (this.writable) this.end();
    if (this.writableFinished) this.destroy();
    else this.once('finish', () => this.destroy());
  }

  setTimeout(timeout: number, callback?: () => void): this {
    this.socket.setTimeout(timeout);
    if (callback !== undefined) {
      if (timeout === 0) this.removeListener('timeout', callback);
      else this.once('timeout', callback);
    }
    return this;
  }

  setNoDelay(noDelay?: boolean): this {
    this.socket.setNoDelay(noDelay);
    return this;
  }

  setKeepAlive(enable?: boolean, initialDelay?: number): this {
    this.socket.setKeepAlive(enable, initialDelay);
    return this;
  }

  ref(): this {
    this.socket.ref();
    return this;
  }

  unref(): this {
    this.socket.unref();
    return this;
  }

  address(): ReturnType<net.Socket['address']> {
    return this.socket.address();
  }

  get remoteAddress(): string | undefined {
    return this.socket.remoteAddress;
  }

  get remoteFamily(): string | undefined {
    return this.socket.remoteFamily;
  }

  get remotePort(): number | undefined {
    return this.socket.remotePort;
  }

  get localAddress(): string | undefined {
    return this.socket.localAddress;
  }

  get localPort(): number | undefined {
    return this.socket.localPort;
  }

  get bytesRead(): number {
    return this.socket.bytesRead;
  }

  get bytesWritten(): number {
    return this.socket.bytesWritten;
  }

  // TLS details, for req.socket consumers such as express's req.secure and certificate auth.

  get encrypted(): true | undefined {
    return (this.socket as Partial<tls.TLSSocket>).encrypted === true ? true : undefined;
  }

  get authorized(): boolean | undefined {
    return (this.socket as Partial<tls.TLSSocket>).authorized;
  }

  get alpnProtocol(): string | false | null | undefined {
    return (this.socket as Partial<tls.TLSSocket>).alpnProtocol;
  }

  getPeerCertificate(detailed?: boolean): tls.PeerCertificate | tls.DetailedPeerCertificate | undefined {
    const socket = this.socket as Partial<tls.TLSSocket>;
    return socket.getPeerCertificate?.(detailed === true);
  }
}

// net.Server keeps these options as instance fields; the http.Server never sees the accept, so we
// apply them ourselves to honour `http.createServer({ noDelay, keepAlive })`.
interface NetServerSocketOptions {
  noDelay?: boolean;
  keepAlive?: boolean;
  keepAliveInitialDelay?: number;
}

/** The parts of node's HTTP parser binding that taking a connection back needs. */
interface NodeHttpParser {
  _consumed?: boolean;
  unconsume?(): void;
  remove?(): void;
  close?(): void;
}

/** What node's http.Server keeps on a socket it serves. */
interface AdoptedSocket extends net.Socket {
  parser?: NodeHttpParser | null;
  _httpMessage?: http.ServerResponse | null;
}

type ClientError = Error & { code?: string; bytesParsed?: number; rawPacket?: Buffer };

const WATCHED_EVENTS = ['data', 'end', 'close', 'drain', 'error', 'timeout', 'pause', 'resume'] as const;
const OVERRIDDEN_METHODS = ['on', 'addListener', 'prependListener', 'setEncoding'] as const;

/** Per adopted socket: its listeners from before the http.Server adopted it. */
const adoptions = new WeakMap<net.Socket, Map<string, Set<unknown>>>();
const takingBack = new WeakSet<net.Socket>();

const LI = Buffer.from('LI', 'latin1');
const UPPER_L = 0x4c;
const UPPER_I = 0x49;
const UPPER_S = 0x53;

/** A reply to a request node's parser refused, with the `{"errors": [...]}` body every API error has. */
function refusal(status: string, message: string, extraHeaders: string[] = []): Buffer {
  const body = JSON.stringify({ errors: [message] });
  return Buffer.from([
    `HTTP/1.1 ${status}`, ...extraHeaders, 'Content-Type: application/json', 'Cache-Control: no-store',
    `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close', '', body,
  ].join('\r\n'), 'latin1');
}

// What node itself would send when nobody listens for 'clientError' (an empty reply), with a body.
const REFUSALS: Record<string, Buffer> = {
  HPE_HEADER_OVERFLOW: refusal('431 Request Header Fields Too Large', 'the request line and headers are larger than this server accepts (16 KiB)'),
  HPE_CHUNK_EXTENSIONS_OVERFLOW: refusal('413 Payload Too Large', 'the chunk extensions of the request body are too large'),
  ERR_HTTP_REQUEST_TIMEOUT: refusal('408 Request Timeout', 'the request was not received in time'),
};
const BAD_REQUEST = refusal('400 Bad Request', 'malformed HTTP request');
const METHOD_NOT_ALLOWED = refusal(
  '405 Method Not Allowed', 'unsupported HTTP method; the API takes GET, HEAD, LIST, POST, PUT, PATCH and DELETE',
  ['Allow: GET, HEAD, LIST, POST, PUT, PATCH, DELETE'],
);

const SPACE = 0x20;
const NEWLINE = 0x0a;
/** The bytes HTTP allows in a method (RFC 9110 token characters). */
const TOKEN = new Uint8Array(256);
for (const c of "!#$%&'*+-.^_`|~") TOKEN[c.charCodeAt(0)] = 1;
for (let b = 0x30; b <= 0x39; b++) TOKEN[b] = 1;
for (let b = 0x41; b <= 0x5a; b++) TOKEN[b] = 1;
for (let b = 0x61; b <= 0x7a; b++) TOKEN[b] = 1;

/**
 * The bytes of a LIST request that node's parser refused, from its method on: `rawPacket` is the
 * read the parser was working through and `bytesParsed` the offset of the byte it refused. llhttp
 * refuses "LIST" at the S, having taken "LI" as the start of LINK; those two bytes may sit in an
 * earlier read, and bytes before them in this one belong to requests already parsed. Null when
 * the refusal was of something else.
 *
 * A method that merely ends in "LI" before the S ("UNLIST") is read as LIST too: harmless, as a
 * LIST may only do what `GET ...?list=true` already does.
 */
export function refusedListRequest(err: ClientError): Buffer | null {
  const raw = err.rawPacket;
  const at = err.bytesParsed;
  if (err.code !== 'HPE_INVALID_METHOD' || !Buffer.isBuffer(raw) || typeof at !== 'number') return null;
  if (at < 0 || at >= raw.length || raw[at] !== UPPER_S) return null;
  if (at >= 1 && raw[at - 1] !== UPPER_I) return null;
  if (at >= 2 && raw[at - 2] !== UPPER_L) return null;
  return Buffer.concat([LI, raw.subarray(at)]);
}

/**
 * Whether node refused a well-formed request line for its method alone, one it does not know
 * (`PATCHY`, `list`): that is a 405, as Vault answers any method it does not serve, where
 * bytes that are no request line at all stay a 400.
 */
export function unknownMethod(err: ClientError): boolean {
  const raw = err.rawPacket;
  const at = err.bytesParsed;
  if (err.code !== 'HPE_INVALID_METHOD' || !Buffer.isBuffer(raw) || typeof at !== 'number' || at < 0 || at >= raw.length) return false;
  let start = at;
  while (start > 0 && TOKEN[raw[start - 1] as number] === 1) start--;
  // Bytes before the method belong to requests already parsed, ending with their line's end.
  if (start > 0 && raw[start - 1] !== NEWLINE) return false;
  let end = at;
  while (end < raw.length && TOKEN[raw[end] as number] === 1) end++;
  return end > start && raw[end] === SPACE;
}

function refuse(err: ClientError, socket: net.Socket | Duplex): void {
  const response = (socket as AdoptedSocket)._httpMessage;
  if (socket.writable && !response?.headersSent) {
    socket.write(REFUSALS[err.code ?? ''] ?? (unknownMethod(err) ? METHOD_NOT_ALLOWED : BAD_REQUEST));
  }
  socket.destroy(err);
}

/** Runs `then` once every response the http.Server has started on `socket` has been written. */
function whenIdle(socket: AdoptedSocket, then: () => void): void {
  const response = socket._httpMessage;
  if (!response) {
    then();
    return;
  }
  const finished = (): void => {
    socket.off('close', closed);
    // The http.Server hands the socket to the next queued response in its own 'finish' listener.
    process.nextTick(() => whenIdle(socket, then));
  };
  const closed = (): void => {
    response.off('finish', finished);
  };
  response.once('finish', finished);
  socket.once('close', closed);
}

/** Undoes what the http.Server attached to `socket` when it adopted it, as it does on an upgrade. */
function release(socket: AdoptedSocket, before: Map<string, Set<unknown>>): void {
  const self = socket as unknown as Record<string, unknown>;
  for (const method of OVERRIDDEN_METHODS) if (Object.hasOwn(self, method)) delete self[method];
  const parser = socket.parser;
  if (parser) {
    if (parser._consumed === true) parser.unconsume?.();
    parser._consumed = false;
    // Out of the server's connection list, or its request timeouts would still apply to it.
    parser.remove?.();
    socket.parser = null;
    setImmediate(() => parser.close?.());
  }
  for (const event of WATCHED_EVENTS) {
    const kept = before.get(event);
    for (const listener of socket.rawListeners(event)) {
      if (!kept?.has(listener)) socket.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
  // A keep-alive timer the server armed after its last response is no longer anyone's.
  socket.setTimeout(0);
  // While the parser read the handle, the stream's own bookkeeping never saw a read complete, so
  // resuming it would not start one: start reading as the http.Server's resume listener did. The
  // socket stays paused, so what arrives waits in its buffer for the rewriting socket.
  const handle = (socket as unknown as { _handle?: { reading?: boolean; readStart?(): number } | null })._handle;
  if (handle && handle.reading !== true && handle.readStart) {
    handle.reading = true;
    handle.readStart();
  }
}

function takeBack(httpServer: http.Server, socket: AdoptedSocket, head: Buffer): void {
  const before = adoptions.get(socket);
  if (!before) return;
  takingBack.add(socket);
  // Nothing more for the failed parser; the rewriting socket resumes reading when it is read.
  socket.pause();
  // Responses to requests pipelined ahead of the LIST go out first, in order.
  whenIdle(socket, () => {
    if (socket.destroyed) return;
    release(socket, before);
    adoptions.delete(socket);
    httpServer.emit('connection', new ListRewritingSocket(socket, head));
  });
}

/**
 * Serves `httpServer` on the connections accepted by `listener` (a net.Server, or a tls.Server
 * with `{ tls: true }`). Do not call `httpServer.listen()`.
 *
 * Lifecycle: the listener's 'listening' is re-emitted on `httpServer`, because that event is what
 * starts its connection tracking (without it closeIdleConnections/closeAllConnections are no-ops
 * and headersTimeout/requestTimeout are never enforced). The listener's 'close' closes
 * `httpServer` too. To shut down, call `listener.close()` then `httpServer.closeIdleConnections()`
 * (or closeAllConnections()); `httpServer.close(callback)` would report ERR_SERVER_NOT_RUNNING.
 */
export function attachHttpServer(listener: net.Server, httpServer: http.Server, opts?: { tls?: boolean }): void {
  const isTls = opts?.tls === true;
  const options = httpServer as http.Server & NetServerSocketOptions;
  listener.on(isTls ? 'secureConnection' : 'connection', (socket: net.Socket) => {
    if (!isTls) {
      // http.Server listens with allowHalfOpen so that it, not net, decides what a client's FIN
      // means (httpAllowHalfOpen); keep that when the listener was created without it.
      socket.allowHalfOpen = true;
    }
    if (options.noDelay === true) socket.setNoDelay(true);
    if (options.keepAlive === true) socket.setKeepAlive(true, (options.keepAliveInitialDelay ?? 0) * 1000);
    adoptions.set(socket, new Map(WATCHED_EVENTS.map((event) => [event, new Set<unknown>(socket.rawListeners(event))])));
    httpServer.emit('connection', socket);
  });
  httpServer.on('clientError', (err: ClientError, socket: net.Socket | Duplex) => {
    const adopted = socket as AdoptedSocket;
    if (takingBack.has(adopted)) return;
    const head = adoptions.has(adopted) ? refusedListRequest(err) : null;
    if (head) takeBack(httpServer, adopted, head);
    else refuse(err, socket);
  });
  // node hands a CONNECT to 'connect' listeners only, and with none drops the connection unanswered.
  if (httpServer.listenerCount('connect') === 0) {
    httpServer.on('connect', (_req: http.IncomingMessage, socket: Duplex) => {
      socket.on('error', () => {});
      socket.end(METHOD_NOT_ALLOWED, () => socket.destroy());
    });
  }
  const onListening = (): void => {
    httpServer.emit('listening');
  };
  listener.on('listening', onListening);
  if (listener.listening) onListening();
  listener.on('close', () => {
    httpServer.close();
  });
}
