import { status, type Client, type MethodDefinition, type ServiceError } from '@grpc/grpc-js';
import type { Clock, TimerHandle } from '@strongroom/base';
import type { Message } from '../core/types';
import { encodeMessage, type WireSnapshotChunk } from './codec';
import { SnapshotSendError } from './errors';

export interface SnapshotSendOptions {
  client: Client;
  method: MethodDefinition<WireSnapshotChunk, object>;
  /** Largest data chunk; larger pieces of `data` are cut (as views, not copies). */
  chunkBytes: number;
  /** Fails the send when no chunk left and no answer came for this long. */
  idleTimeoutMs: number;
  clock: Clock;
  /** Aborting cancels the call and rejects with reason `closed`. */
  signal: AbortSignal;
}

/**
 * One InstallSnapshot call: `m` first, then `data` in order, then the `done` marker, then waits
 * for the receiver's answer, which comes once its handler stored the snapshot.
 *
 * Backpressure: a chunk is written only when gRPC took the previous ones ('drain'), so at most
 * a few chunks are in memory whatever the snapshot's size, and a slow receiver slows the reader.
 * Whatever ends the call (answer, error, timeout, abort), the read of `data` stops at its next
 * step and its iterator is returned, so a file it reads is closed.
 */
export function streamSnapshot(m: Message, data: AsyncIterable<Buffer>, options: SnapshotSendOptions): Promise<void> {
  const { client, method, chunkBytes, idleTimeoutMs, clock, signal } = options;
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    let timer: TimerHandle | null = null;
    let wake: (() => void) | null = null;

    const settle = (error?: SnapshotSendError): void => {
      if (settled) return;
      settled = true;
      timer?.cancel();
      signal.removeEventListener('abort', onAbort);
      wake?.();
      if (error === undefined) {
        resolve();
      } else {
        call.cancel();
        reject(error);
      }
    };
    const onAbort = (): void => settle(new SnapshotSendError(m.to, 'closed', 'the transport was closed'));
    const progressed = (): void => {
      timer?.cancel();
      timer = clock.setTimer(idleTimeoutMs, () => settle(new SnapshotSendError(m.to, 'timeout', `no progress for ${idleTimeoutMs} ms`)));
    };

    const call = client.makeClientStreamRequest<WireSnapshotChunk, object>(
      method.path,
      method.requestSerialize,
      method.responseDeserialize,
      {},
      (err: ServiceError | null) => {
        if (err === null) settle();
        else settle(new SnapshotSendError(m.to, err.code === status.ABORTED || err.code === status.FAILED_PRECONDITION ? 'refused' : 'failed', err.details, { cause: err }));
      },
    );
    const drained = (): Promise<void> =>
      new Promise<void>((resume) => {
        wake = resume;
        call.once('drain', resume);
      });
    const write = async (chunk: WireSnapshotChunk): Promise<void> => {
      if (!call.write(chunk)) await drained();
      progressed();
    };

    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort);
    progressed();

    void (async () => {
      try {
        await write({ message: encodeMessage(m) });
        for await (const piece of data) {
          for (let offset = 0; offset < piece.length && !settled; offset += chunkBytes) {
            await write({ data: piece.subarray(offset, offset + chunkBytes) });
          }
          if (settled) return;
        }
        await write({ done: true });
        call.end();
      } catch (err) {
        settle(new SnapshotSendError(m.to, 'failed', 'reading the snapshot data failed', { cause: err }));
      }
    })();
  });
}
