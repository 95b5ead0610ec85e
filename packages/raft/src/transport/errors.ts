import type { NodeId } from '../core/types';

/**
 * Why a snapshot did not reach its receiver:
 *  - unknownPeer: no address is known for the receiver;
 *  - refused: the receiver's snapshot handler rejected it (or it refused the stream);
 *  - timeout: nothing moved for the idle timeout;
 *  - failed: the connection failed, or reading the snapshot data threw;
 *  - closed: this transport was closed meanwhile.
 */
export type SnapshotSendFailure = 'unknownPeer' | 'refused' | 'timeout' | 'failed' | 'closed';

/** The rejection of GrpcTransport.sendSnapshot. */
export class SnapshotSendError extends Error {
  override readonly name = 'SnapshotSendError';

  constructor(
    readonly to: NodeId,
    readonly reason: SnapshotSendFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`snapshot to ${to}: ${message}`, options);
  }
}
