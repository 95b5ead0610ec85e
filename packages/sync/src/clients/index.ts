import type { Destination } from '../destination';
import type { SyncSettings } from '../destination-types';
import { cloud1SmClient } from './cloud1-sm';
import { deployhostProjectClient } from './deployhost-project';
import { DestinationError, type DestinationClient, type DestinationClientFactory } from './destination-client';

/** The client of each destination type that has one yet. */
export const defaultClients: DestinationClientFactory = (d: Destination, settings: SyncSettings): DestinationClient => {
  switch (d.type) {
    case 'cloud1-sm':
      return cloud1SmClient(d, settings);
    case 'deployhost-project':
      return deployhostProjectClient(d, settings);
    default:
      return {
        put: () => Promise.reject(new DestinationError('CLIENT_SIDE_ERROR', `syncing to destination type ${d.type} is not available yet`)),
        remove: () => Promise.reject(new DestinationError('CLIENT_SIDE_ERROR', `syncing to destination type ${d.type} is not available yet`)),
      };
  }
};
