import type { IncomingMessage } from 'node:http';
import { PayloadTooLargeError } from '@strongroom/core';

const EMPTY = Buffer.alloc(0);

/**
 * Reads a request's body up to `limit` bytes (0: no limit); a larger body is refused before it
 * is buffered whole.
 *
 * A request the server batches (request-batch.ts) has usually been read to its end before its
 * handler runs: node's parser has pushed every chunk into the request's buffer and marked it
 * complete. That body is taken at once, without a Promise: waiting for it the streaming way
 * costs a round of stream events (resume, data, end, each a tick) and a microtask hop, about
 * the price of the JSON parse of a small body.
 */
export function readBody(req: IncomingMessage, limit: number): Buffer | Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? -1);
  if (limit > 0 && declared > limit) return Promise.reject(new PayloadTooLargeError(limit));
  if (req.complete && !req.readableDidRead && !req.destroyed) {
    // With the stream ended, read() hands over everything buffered, as one Buffer.
    const body = (req.read() as Buffer | null) ?? EMPTY;
    if (limit > 0 && body.length > limit) return Promise.reject(new PayloadTooLargeError(limit));
    return body;
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (limit > 0 && size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new PayloadTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
