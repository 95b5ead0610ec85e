import type { IncomingMessage, ServerResponse } from 'node:http';

/** How much of a refused body is read and dropped after the answer, at most. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** How long the connection stays open after the answer, at most. */
export const LINGER_MAX_MS = 10_000;
/** How often the bytes dropped are counted: the byte bound holds to within what arrives meanwhile. */
const COUNT_EVERY_MS = 10;

/**
 * Closes the connection after `res` the way a lingering close does, for answers sent before the
 * request's body was read (413). node's http.Server would close it as soon as the answer is
 * written; the client's kernel then meets the bytes it is still sending with a reset, and a
 * client that writes its whole body before reading (most HTTP libraries) sees EPIPE or
 * ECONNRESET instead of the answer. Here the answer is followed by a FIN, what the client still
 * sends is read and dropped, and the connection closes once the client closes its side, or after
 * about `maxBytes` more bytes or `maxMs`, whichever comes first.
 *
 * Works by taking over the socket's destroySoon(), which is what the http.Server calls after a
 * `Connection: close` answer (list-server.ts gives the LIST-rewriting socket the same method).
 */
export function lingerAfter(req: IncomingMessage, res: ServerResponse, maxBytes = LINGER_MAX_BYTES, maxMs = LINGER_MAX_MS): void {
  const socket = res.socket;
  if (!socket || socket.destroyed) return;
  // An own property shadows the class's method for this one connection.
  const own = socket as unknown as { destroySoon?: () => void };
  own.destroySoon = () => {
    delete own.destroySoon;
    if (socket.destroyed) return;
    // Counted on the socket: the http.Server drops the rest of a body it was not asked to read
    // without ever handing it to the request as data.
    const start = socket.bytesRead;
    const stop = (): void => {
      clearTimeout(timer);
      clearInterval(counter);
    };
    const close = (): void => {
      stop();
      socket.destroy();
    };
    const timer = setTimeout(close, maxMs);
    const counter = setInterval(() => {
      if (socket.bytesRead - start > maxBytes) close();
    }, COUNT_EVERY_MS);
    timer.unref();
    counter.unref();
    req.resume();
    socket.once('end', close);
    socket.once('close', stop);
    if (socket.writable) socket.end();
  };
}
