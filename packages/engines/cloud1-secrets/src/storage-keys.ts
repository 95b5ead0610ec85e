/**
 * The mount's storage layout, in one place. Every value is JSON.
 * - config/root, config/lease: singletons (config/root holds the secret key; no read shows it);
 * - role/<name>: roles as written (names keep their case);
 * - static-role/<name>: a static role, its current access key and its rotation schedule, so the
 *   schedule survives a restart or a new leader;
 * - wal/user/<id>: an IAM user being created; removed once the credentials are handed out, and
 *   rolled back by the periodic task when a creation died half-way.
 */
export const KEYS = {
  rootConfig: 'config/root',
  leaseConfig: 'config/lease',
  rolePrefix: 'role/',
  staticRolePrefix: 'static-role/',
  userWalPrefix: 'wal/user/',
} as const;

/** Role and static role names: word characters, with dots, dashes and @ inside. */
export const ROLE_NAME = '\\w(?:[\\w.@-]*\\w)?';
