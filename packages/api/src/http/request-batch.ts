import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

/**
 * Runs requests in batches, once per turn of the event loop, rather than each as its socket is
 * read.
 *
 * Without this, node reads one socket, runs that request's handler to its first wait, writes
 * whatever answer is ready, then reads the next socket. The kernel's socket work between two
 * requests pushes the handler code out of the CPU's caches, so under concurrent load every
 * request pays for cold code. Here the poll phase only reads and parses what every ready socket
 * sent; the handlers then run one after another in the check phase (setImmediate) of the same
 * turn. A request alone waits for nothing extra: the check phase follows the poll phase at once.
 * Measured on a 2-core machine, 64 clients of transit encrypt: about twice the requests per
 * second and half the CPU per request.
 */
export function batchRequests(
  listener: RequestListener,
  // A listener that throws is a bug; by default it stays as uncaught as it was when the server called it.
  onError: (err: unknown) => void = (err) => process.nextTick(() => { throw err; }),
): RequestListener {
  let queue: Array<IncomingMessage | ServerResponse> = [];
  let scheduled = false;

  const run = (): void => {
    scheduled = false;
    const batch = queue;
    queue = [];
    for (let i = 0; i < batch.length; i += 2) {
      try {
        listener(batch[i] as IncomingMessage, batch[i + 1] as ServerResponse);
      } catch (err) {
        // The rest of the batch still runs.
        onError(err);
      }
    }
  };

  return (req, res) => {
    queue.push(req, res);
    if (!scheduled) {
      scheduled = true;
      setImmediate(run);
    }
  };
}
