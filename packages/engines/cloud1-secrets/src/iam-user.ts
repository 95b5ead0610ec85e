/**
 * iam_user credentials: a new IAM user per request, with an access key, under a renewable lease
 * whose end removes the user and everything made for it.
 *
 * Creation is several provider calls; a write-ahead entry in storage names the user before the
 * first one, is marked `userCreated` once CreateUser has succeeded, and is removed once the key
 * is handed out. A creation that fails after CreateUser is undone at once; one that dies with the
 * process (or whose undo fails) is undone by the periodic task once the entry is older than
 * `WAL_ROLLBACK_AFTER_MS`. A CreateUser that fails made nothing: no user is deleted then (a user
 * of that name already there is someone else's, or an earlier lease's), and an entry never marked
 * `userCreated` is only dropped.
 */
import { randomUUID } from 'node:crypto';
import {
  BadRequestError, collectKeys, getJson, putJson, type BackendRequest, type BackendResponse, type LogicalStorage, type SecretType,
} from '@strongroom/core';
import type { Cloud1SecretsContext } from './context';
import { readLeaseConfig } from './path-config-lease';
import { readRootConfig, type RootConfig } from './path-config-root';
import type { RoleEntry } from './role';
import { KEYS } from './storage-keys';
import { isEntityAlreadyExists, ProviderError } from './provider';
import { generateUsername } from './username-template';

export const ACCESS_KEYS_SECRET = 'access_keys';

/** A creation still in progress after this long died half-way and is rolled back. */
export const WAL_ROLLBACK_AFTER_MS = 10 * 60_000;

interface UserWal {
  userName: string;
  createdAt: number;
  /**
   * Set once CreateUser succeeded: only then is the user this engine's to remove. Absent while
   * CreateUser is in flight (and in entries of releases before this field).
   */
  userCreated?: boolean;
}

/** What an iam_user lease keeps to undo itself (never shown to clients). */
interface AccessKeysInternal {
  username: string;
  /** The role the user was made for. */
  policy: string;
  /** When the lease was issued (ms, the engine's clock), for config/lease's lease_max. */
  issuedAt: number;
}

export async function issueIamUser(
  ctx: Cloud1SecretsContext, req: BackendRequest, config: RootConfig, roleName: string, role: RoleEntry,
): Promise<BackendResponse> {
  const userName = generateUsername(config.usernameTemplate, 'IAM', req.caller?.displayName ?? '', roleName, ctx.clock);
  const now = ctx.clock.now();
  const walKey = KEYS.userWalPrefix + randomUUID();
  await putJson(req.storage, walKey, { userName, createdAt: now } satisfies UserWal);
  let userCreated = false;
  let credentials;
  try {
    credentials = await ctx.provider.createUser(config, {
      userName, path: role.userPath, permissionsBoundaryArn: role.permissionsBoundaryArn, tags: role.iamTags, groups: role.iamGroups,
      policyArns: role.policyArns, policyDocument: role.policyDocument, policyName: roleName,
    }, async () => {
      userCreated = true;
      await putJson(req.storage, walKey, { userName, createdAt: now, userCreated: true } satisfies UserWal);
    });
  } catch (err) {
    if (!userCreated) {
      // CreateUser itself failed: this request made nothing, so there is nothing to undo, and a
      // user of this name that exists is not ours to delete.
      try {
        await req.storage.delete(walKey);
      } catch (drop) {
        ctx.logger.warn('dropping the write-ahead entry of a failed IAM user creation failed', { user: userName, err: (drop as Error).message });
      }
      if (err instanceof ProviderError && isEntityAlreadyExists(err.cause)) {
        throw new BadRequestError(
          `cannot create IAM user ${userName}: a user of that name already exists and was left alone; `
          + 'the username_template must make a new name for every request', { cause: err },
        );
      }
      throw err;
    }
    // CreateUser succeeded: remove the user this request made, with whatever it got since.
    try {
      await ctx.provider.deleteUser(config, userName);
      await req.storage.delete(walKey);
    } catch (undo) {
      ctx.logger.warn('undoing a failed IAM user creation failed; the periodic task will retry', { user: userName, err: (undo as Error).message });
    }
    throw err;
  }
  await req.storage.delete(walKey);
  const lease = await readLeaseConfig(req.storage);
  const internal: AccessKeysInternal = { username: userName, policy: roleName, issuedAt: now };
  return {
    data: { access_key: credentials.accessKeyId, secret_key: credentials.secretAccessKey, security_token: null, session_token: null },
    // A lease of 0 takes the mount's default TTL.
    secret: { type: ACCESS_KEYS_SECRET, ttl: lease?.lease ?? 0, renewable: true, internal: { ...internal } },
  };
}

/** Undoes creations that died half-way (see the module comment). For the active node's periodic task. */
export async function rollbackStaleUsers(ctx: Cloud1SecretsContext, storage: LogicalStorage): Promise<void> {
  const keys = await collectKeys(storage, KEYS.userWalPrefix);
  if (keys.length === 0) return;
  const config = await readRootConfig(storage);
  for (const key of keys) {
    const wal = await getJson<UserWal>(storage, key);
    if (!wal || ctx.clock.now() - wal.createdAt < WAL_ROLLBACK_AFTER_MS) continue;
    if (wal.userCreated !== true) {
      // CreateUser never succeeded (or its success was never recorded): the user, if there is
      // one of that name, may not be this engine's, so it is left alone.
      ctx.logger.warn('dropping a stale IAM user creation whose CreateUser did not succeed; no user deleted', { user: wal.userName });
      await storage.delete(key);
      continue;
    }
    try {
      await ctx.provider.deleteUser(config, wal.userName);
      await storage.delete(key);
    } catch (err) {
      ctx.logger.warn('rolling back a half-made IAM user failed; will retry', { user: wal.userName, err: (err as Error).message });
    }
  }
}

function internalOf(internal: Record<string, unknown>): AccessKeysInternal {
  const username = internal['username'];
  if (typeof username !== 'string' || username === '') throw new Error('the lease names no IAM user');
  const issuedAt = typeof internal['issuedAt'] === 'number' ? internal['issuedAt'] : 0;
  return { username, policy: String(internal['policy'] ?? ''), issuedAt };
}

/**
 * The iam_user lease. Revoking deletes the user and what it holds; a provider failure throws,
 * and core retries with backoff until it succeeds. Renewing extends by the increment (else
 * config/lease's lease, else the mount's default) up to config/lease's lease_max from issue.
 */
export function accessKeysSecret(ctx: Cloud1SecretsContext): SecretType {
  return {
    async revoke(req, internal) {
      const { username } = internalOf(internal);
      await ctx.provider.deleteUser(await readRootConfig(req.storage), username);
    },
    async renew(req, internal, increment) {
      const { issuedAt } = internalOf(internal);
      const lease = await readLeaseConfig(req.storage);
      let ttl = increment > 0 ? increment : lease?.lease || req.mount.defaultLeaseTtl;
      if (lease && lease.leaseMax > 0) {
        const left = lease.leaseMax - Math.floor((ctx.clock.now() - issuedAt) / 1000);
        if (left <= 0) throw new BadRequestError(`the lease has reached config/lease's lease_max of ${lease.leaseMax}s and cannot be renewed`);
        ttl = Math.min(ttl, left);
      }
      return { ttl };
    },
  };
}
