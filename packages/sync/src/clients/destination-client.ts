import type { Destination } from '../destination';
import type { SyncSettings } from '../destination-types';

/** How a destination told us no: its own fault or ours decides the association's status. */
export class DestinationError extends Error {
  constructor(readonly status: 'CLIENT_SIDE_ERROR' | 'EXTERNAL_SERVICE_ERROR', message: string) {
    super(message);
    this.name = 'DestinationError';
  }
}

/**
 * What a destination holds under one name: nothing, or a secret with its value. `value` is null
 * where the store never shows a value back (a repository host's secrets are write-only), so only
 * a secret gone missing can be told there.
 */
export type ExternalSecret = { exists: false } | { exists: true; value: string | null };

export const MISSING: ExternalSecret = { exists: false };

/** What the queue asks of a destination, one external secret at a time. */
export interface DestinationClient {
  /**
   * Writes `value` as the external secret `name`, creating it if needed. `token` is the same for
   * every attempt at writing one KV version, so a destination that keeps versions makes one.
   */
  put(name: string, value: string, token: string): Promise<void>;
  /** What the destination holds now under `name`: the periodic reconciliation compares it with what it should hold. */
  read(name: string): Promise<ExternalSecret>;
  /** Deletes the external secret; one that is already gone is a success. */
  remove(name: string): Promise<void>;
  /** Lets go of what the client holds open (a channel); called once the operation is done. */
  close?(): Promise<void>;
}

export type DestinationClientFactory = (destination: Destination, settings: SyncSettings) => DestinationClient;

/** A status from HTTP: 4xx is the request's (credentials, names), the rest the service's; 429 is the service's load. */
export function statusOf(httpStatus: number | undefined): DestinationError['status'] {
  return httpStatus !== undefined && httpStatus >= 400 && httpStatus < 500 && httpStatus !== 429 ? 'CLIENT_SIDE_ERROR' : 'EXTERNAL_SERVICE_ERROR';
}
