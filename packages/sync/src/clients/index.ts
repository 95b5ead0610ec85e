import type { Destination } from '../destination';
import type { SyncSettings } from '../destination-types';
import { cloud1SmClient } from './cloud1-sm';
import { cloud2KvClient } from './cloud2-kv';
import { cloud3SmClient } from './cloud3-sm';
import { deployhostProjectClient } from './deployhost-project';
import type { DestinationClient, DestinationClientFactory } from './destination-client';
import { repohostClient } from './repohost';

/** The client of each destination type. */
export const defaultClients: DestinationClientFactory = (d: Destination, settings: SyncSettings): DestinationClient => {
  switch (d.type) {
    case 'cloud1-sm':
      return cloud1SmClient(d, settings);
    case 'cloud2-kv':
      return cloud2KvClient(d, settings);
    case 'cloud3-sm':
      return cloud3SmClient(d, settings);
    case 'repohost':
      return repohostClient(d, settings);
    case 'deployhost-project':
      return deployhostProjectClient(d, settings);
  }
};
