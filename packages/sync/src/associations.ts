import type { LogicalStorage } from '@strongroom/core';
import type { DestinationType } from './destination-types';

/** One destination, as associations refer to it. */
export interface DestinationRef {
  namespaceId: string;
  type: DestinationType;
  name: string;
}

/** What the destinations API needs to know of associations: whether a destination still has any. */
export interface DestinationAssociations {
  /** How many secrets are associated with the destination; 0 when none. */
  countFor(ref: DestinationRef): Promise<number>;
}

/**
 * Where the association store keeps a destination's associations, one key per associated
 * secret: the contract between the two, so that the refusal to delete a destination reads
 * what the association store writes.
 */
export function associationsPrefix(ref: DestinationRef): string {
  return `sys/sync/associations/${ref.namespaceId}/${ref.type}/${ref.name}/`;
}

/** Associations as stored under `associationsPrefix`. */
export function storedAssociations(storage: LogicalStorage): DestinationAssociations {
  return {
    async countFor(ref) {
      return (await storage.list(associationsPrefix(ref))).length;
    },
  };
}
