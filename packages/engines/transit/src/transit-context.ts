import type { Clock, Logger } from '@strongroom/core';
import type { KeyStore } from './key-store';

/** What every transit path handler shares: one instance per mounted backend. */
export interface TransitContext {
  clock: Clock;
  logger: Logger;
  keys: KeyStore;
}

/** Path segment of a key name, as Vault accepts them: word characters, `-` and `.` inside. */
export const KEY_NAME = '(?<name>\\w(?:[\\w.-]*\\w)?)';
