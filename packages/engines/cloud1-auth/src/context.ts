import type { Clock, Logger } from '@strongroom/core';
import type { Provider } from './provider';

/** Knobs for a deployment or a test; production uses the defaults. */
export interface Cloud1AuthOptions {
  /**
   * The STS endpoint of a region, used when use_sts_region_from_client is on. Default: the
   * provider's regional endpoint. Tests map it to the emulator so nothing leaves the machine.
   */
  stsEndpointForRegion?: (region: string) => string;
  /** The environment credentials and region are read from (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

/** What every path of one cloud1 auth mount shares. */
export interface Cloud1Context {
  clock: Clock;
  logger: Logger;
  options: Cloud1AuthOptions;
  provider: Provider;
}
