import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import type { Cloud1SecretsContext } from './context';
import { readRootConfig } from './path-config-root';
import {
  MIN_ROTATION_PERIOD, newAccessKey, readStaticRole, staticRoleKey, writeStaticRole, type StaticRole,
} from './static-rotation';
import { KEYS, ROLE_NAME } from './storage-keys';

function refuse(field: string, rule: string): never {
  throw new BadRequestError(`invalid value for "${field}": ${rule}`);
}

function checkPeriod(seconds: number): number {
  if (seconds < MIN_ROTATION_PERIOD) {
    refuse('rotation_period', `must be at least 1 minute (${MIN_ROTATION_PERIOD} seconds), as a duration such as "24h" or seconds such as 86400`);
  }
  return seconds;
}

function view(name: string, role: StaticRole): Record<string, unknown> {
  return { name, username: role.username, rotation_period: role.rotationPeriod };
}

/**
 * `static-roles/:name`: adopts an existing IAM user. Creating the role makes the user's first
 * managed key (making room by deleting the oldest key when the user has two); changing
 * rotation_period moves the next rotation to now plus the new period. Deleting forgets the role
 * and leaves the user and its keys to be cleaned up by hand.
 */
export function staticRolesPaths(ctx: Cloud1SecretsContext): PathDefinition[] {
  return [
    definePath({
      pattern: `static-roles/(?<name>${ROLE_NAME})`,
      fields: {
        name: { type: 'string', required: true },
        username: { type: 'string', description: 'the existing IAM user to manage' },
        rotation_period: { type: 'duration', description: 'at least 1 minute: a duration such as "24h" or seconds such as 86400' },
      },
      existenceCheck: async (req, f) => (await req.storage.get(staticRoleKey(f.string('name')))) !== null,
      operations: {
        read: async (req, f) => {
          const role = await readStaticRole(req.storage, f.string('name'));
          return role ? { data: view(f.string('name'), role) } : null;
        },
        create: (req, f) => ctx.locks.run(staticRoleKey(f.string('name')), async () => {
          const name = f.string('name');
          const existing = await readStaticRole(req.storage, name);
          const now = ctx.clock.now();
          if (existing) {
            if (f.has('username') && f.string('username').trim() !== existing.username) {
              refuse('username', `a static role keeps its user (${existing.username}); delete the role and create it again to manage another`);
            }
            const next = { ...existing };
            if (f.has('rotation_period')) {
              next.rotationPeriod = checkPeriod(f.int('rotation_period'));
              next.nextRotation = now + next.rotationPeriod * 1000;
            }
            await writeStaticRole(req.storage, name, next);
            return { data: view(name, next) };
          }
          const username = f.string('username').trim();
          if (username === '') throw new BadRequestError('missing required field "username"');
          if (!f.has('rotation_period')) throw new BadRequestError('missing required field "rotation_period"');
          const rotationPeriod = checkPeriod(f.int('rotation_period'));
          const config = await readRootConfig(req.storage);
          if (!(await ctx.provider.userExists(config, username))) refuse('username', `the IAM user "${username}" does not exist`);
          const key = await newAccessKey(ctx, config, username);
          const role: StaticRole = {
            username, rotationPeriod, accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey,
            lastRotated: now, nextRotation: now + rotationPeriod * 1000,
          };
          await writeStaticRole(req.storage, name, role);
          return { data: view(name, role) };
        }),
        delete: (req, f) => ctx.locks.run(staticRoleKey(f.string('name')), async () => {
          await req.storage.delete(staticRoleKey(f.string('name')));
          return null;
        }),
      },
      help: 'Static roles: an existing IAM user whose access key the engine rotates every rotation_period.',
    }),
    definePath({
      pattern: 'static-roles/?',
      operations: {
        list: async (req) => ({ data: { keys: await req.storage.list(KEYS.staticRolePrefix) } }),
      },
      help: 'Lists the static role names.',
    }),
  ];
}
