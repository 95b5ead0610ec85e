/**
 * The mount's storage layout, in one place. Every value is JSON.
 * - config/client, config/identity: singletons;
 * - config/certificate/<name>, config/sts/<account id>: registered certificates and STS roles;
 * - config/tidy/identity-accesslist, config/tidy/roletag-denylist: tidy settings;
 * - role/<name>: roles (names lower-cased);
 * - accesslist/identity/<instance id>: the identity access list;
 * - denylist/roletag/<base64url of the tag>: the role tag deny list (url-safe, so no '/' splits the key);
 * - tidy/last-periodic: when the periodic tidy last ran, so a new leader keeps the schedule.
 */
export const KEYS = {
  clientConfig: 'config/client',
  identityConfig: 'config/identity',
  certificatePrefix: 'config/certificate/',
  stsPrefix: 'config/sts/',
  tidyConfig: (kind: TidyKind) => `config/tidy/${kind}`,
  rolePrefix: 'role/',
  accessListPrefix: 'accesslist/identity/',
  denyListPrefix: 'denylist/roletag/',
  lastPeriodicTidy: 'tidy/last-periodic',
} as const;

export type TidyKind = 'identity-accesslist' | 'roletag-denylist';
