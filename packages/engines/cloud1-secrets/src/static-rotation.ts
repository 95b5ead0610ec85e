/**
 * Static roles adopt an existing IAM user and keep one current access key for it, replaced every
 * rotation_period. The schedule (`nextRotation`) is stored with the role, so the active node's
 * periodic task picks it up after a restart or a change of leader.
 *
 * A rotation keeps at most the provider's two keys by rotating the oldest: if the user already
 * has two keys, the oldest is deleted first (after the first rotation, the previous-but-one
 * managed key; before it, possibly a key the user had of its own); then a new key is made and
 * stored. The previous managed key is left alive until the next rotation, so a client that just
 * read static-creds keeps working for one more period. Each rotation runs under the role's lock
 * and re-reads the role, so a periodic pass and a write never rotate twice.
 */
import { getJson, putJson, type LogicalStorage } from '@strongroom/core';
import type { Cloud1SecretsContext } from './context';
import { readRootConfig, type RootConfig } from './path-config-root';
import type { Credentials } from './provider';
import { KEYS } from './storage-keys';

/** The provider's limit of access keys per IAM user. */
export const MAX_ACCESS_KEYS = 2;

export const MIN_ROTATION_PERIOD = 60;

export interface StaticRole {
  username: string;
  /** Seconds. */
  rotationPeriod: number;
  accessKeyId: string;
  secretAccessKey: string;
  /** Milliseconds since the epoch, by the engine's clock. */
  lastRotated: number;
  nextRotation: number;
}

export function staticRoleKey(name: string): string {
  return KEYS.staticRolePrefix + name;
}

export function readStaticRole(storage: LogicalStorage, name: string): Promise<StaticRole | null> {
  return getJson<StaticRole>(storage, staticRoleKey(name));
}

export function writeStaticRole(storage: LogicalStorage, name: string, role: StaticRole): Promise<void> {
  return putJson(storage, staticRoleKey(name), role);
}

/**
 * A new key for `username`, making room first when the user has the maximum number of keys by
 * deleting the oldest.
 */
export async function newAccessKey(ctx: Cloud1SecretsContext, config: RootConfig, username: string): Promise<Credentials> {
  const keys = await ctx.provider.accessKeys(config, username);
  for (const key of keys.slice(0, Math.max(0, keys.length - MAX_ACCESS_KEYS + 1))) {
    await ctx.provider.deleteAccessKey(config, username, key.accessKeyId);
  }
  return ctx.provider.createAccessKey(config, username);
}

/** Rotates one static role now (the caller holds its lock). Answers the stored role. */
export async function rotateStaticRole(ctx: Cloud1SecretsContext, storage: LogicalStorage, name: string, role: StaticRole): Promise<StaticRole> {
  const config = await readRootConfig(storage);
  const created = await newAccessKey(ctx, config, role.username);
  const now = ctx.clock.now();
  const next: StaticRole = {
    ...role, accessKeyId: created.accessKeyId, secretAccessKey: created.secretAccessKey, lastRotated: now,
    nextRotation: now + role.rotationPeriod * 1000,
  };
  // The previous managed key stays until the next rotation deletes it as the oldest.
  await writeStaticRole(storage, name, next);
  return next;
}

/**
 * Rotates every static role whose time has come. For the active node's periodic task; a role
 * that fails is logged and tried again at the next pass, and the others still rotate.
 */
export async function rotateDueStaticRoles(ctx: Cloud1SecretsContext, storage: LogicalStorage): Promise<string[]> {
  const rotated: string[] = [];
  for (const name of await storage.list(KEYS.staticRolePrefix)) {
    try {
      const done = await ctx.locks.run(staticRoleKey(name), async () => {
        const role = await readStaticRole(storage, name);
        if (!role || role.nextRotation > ctx.clock.now()) return false;
        await rotateStaticRole(ctx, storage, name, role);
        return true;
      });
      if (done) rotated.push(name);
    } catch (err) {
      ctx.logger.warn('static role rotation failed; will retry', { role: name, err: (err as Error).message });
    }
  }
  return rotated;
}
