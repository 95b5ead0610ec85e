import type { Clock, KeyedMutex, Logger } from '@strongroom/core';
import type { Provider } from './provider';

/** Knobs for a deployment or a test; production uses the defaults. */
export interface Cloud1SecretsOptions {
  /** The environment credentials and region are read from (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

/** What every path of one cloud1 secrets mount shares. */
export interface Cloud1SecretsContext {
  clock: Clock;
  logger: Logger;
  options: Cloud1SecretsOptions;
  provider: Provider;
  /**
   * Serializes read-modify-write sections of one mount (a static role's rotation against its
   * update; config/root against rotate-root). Only the active node writes, so in-process is enough.
   */
  locks: KeyedMutex;
}
