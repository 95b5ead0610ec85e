import { PassThrough } from 'node:stream';
import { status, type sendUnaryData, type ServerReadableStream } from '@grpc/grpc-js';
import type { Message } from '../core/types';
import { decodeMessage, type WireSnapshotChunk } from './codec';

/** Chunks buffered between the call and the handler before the call is paused. */
const BUFFERED_CHUNKS = 4;

export interface SnapshotReceiverContext {
  readonly selfId: string;
  /** The node's handler; see TransportHandlers.snapshot. */
  handle(m: Message, data: AsyncIterable<Buffer>): Promise<void>;
  misaddressed(): void;
}

/**
 * Serves one InstallSnapshot call: checks the first chunk (the leader's `snapshot` message,
 * addressed to this node), hands the data chunks to the handler in order, ends the handler's
 * iteration at the `done` chunk (and fails it if the stream ends without one), and answers when
 * the handler settles: OK once it resolved, ABORTED with its message when it rejected.
 *
 * Backpressure: the call is paused while the handler has BUFFERED_CHUNKS unread, which stops
 * HTTP/2 flow control and, in turn, the sender. If the sender goes away, the handler's
 * iteration throws.
 */
export function receiveSnapshot(
  call: ServerReadableStream<WireSnapshotChunk, object>,
  callback: sendUnaryData<object>,
  ctx: SnapshotReceiverContext,
): void {
  const data = new PassThrough({ objectMode: true, highWaterMark: BUFFERED_CHUNKS });
  // Errors reach the handler through its iteration; without a listener they would crash the process.
  data.on('error', () => {});
  let started = false;
  /** The `done` chunk came: everything was received. */
  let complete = false;
  let answered = false;

  const answer = (code: status, details: string): void => {
    if (answered) return;
    answered = true;
    if (code === status.OK) callback(null, {});
    else callback({ code, details });
    data.destroy();
  };

  call.on('data', (chunk: WireSnapshotChunk) => {
    if (answered) return;
    if (!started) {
      started = true;
      const m = chunk.message === undefined ? undefined : decodeMessage(chunk.message);
      if (m === undefined || m.type !== 'snapshot') {
        answer(status.INVALID_ARGUMENT, 'the first chunk must carry the snapshot message');
        return;
      }
      if (m.to !== ctx.selfId) {
        ctx.misaddressed();
        answer(status.FAILED_PRECONDITION, `this is node ${ctx.selfId}, not ${m.to}`);
        return;
      }
      // A handler that throws instead of rejecting is answered the same way.
      new Promise<void>((resolve) => resolve(ctx.handle(m, data))).then(
        () => answer(status.OK, ''),
        (err: unknown) => answer(status.ABORTED, `${ctx.selfId} refused the snapshot: ${err instanceof Error ? err.message : String(err)}`),
      );
      return;
    }
    if (complete || chunk.message !== undefined) {
      data.destroy(new Error('the sender broke the snapshot stream'));
      answer(status.INVALID_ARGUMENT, 'a message chunk after the first, or a chunk after done');
      return;
    }
    if (chunk.done === true) {
      complete = true;
      data.end();
    } else if (chunk.data !== undefined && !data.write(chunk.data)) {
      call.pause();
      data.once('drain', () => call.resume());
    }
  });
  call.on('end', () => {
    if (!started) answer(status.INVALID_ARGUMENT, 'empty snapshot stream');
    else if (!complete) data.destroy(new Error('the snapshot stream ended before its last chunk'));
  });
  const abandoned = (): void => {
    data.destroy(new Error('the sender abandoned the snapshot stream'));
  };
  call.on('cancelled', abandoned);
  call.on('error', abandoned);
}
