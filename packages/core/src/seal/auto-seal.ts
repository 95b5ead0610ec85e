import { StrongroomError } from '../errors';

/**
 * A seal that keeps the root key wrapped by a key held elsewhere (another server's transit
 * key), so a node can unseal itself. The seal's holder never sees the root key, and the
 * wrapped form is all storage holds; the root key leaves its cluster only in the activation
 * of a replication secondary, whose own seal wraps it there.
 */
export interface AutoSeal {
  /** The seal type as seal-status and the stored configuration name it (`transit`). */
  readonly type: string;
  wrap(plaintext: Buffer): Promise<string>;
  unwrap(wrapped: string): Promise<Buffer>;
  /** Stops background work (token renewal). */
  close(): void;
}

/**
 * The unsealer could not be reached or refused: a 502, since the fault is upstream of this
 * server. The message names the address and the cause, never a secret.
 */
export class AutoSealError extends StrongroomError {
  constructor(message: string) {
    super('auto_seal_unavailable', 502, message);
  }
}
