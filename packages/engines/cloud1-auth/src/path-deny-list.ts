import { BadRequestError, definePath, putJson, type PathDefinition } from '@strongroom/core';
import { denyListKey, readDenyListEntry, tagValueOfKey, type DenyListEntry } from './access-list';
import type { Cloud1Context } from './context';
import { readRole } from './role';
import { parseRoleTagValue, roleTagMacValid, tagValueFromInput } from './role-tag';
import { KEYS } from './storage-keys';

/** The role tag deny list, under its current name and the deprecated blacklist one. */
export function denyListPaths(ctx: Cloud1Context): PathDefinition[] {
  return ['roletag-denylist', 'roletag-blacklist'].flatMap((base) => [
    definePath({
      pattern: `${base}/?`,
      operations: {
        list: async (req) => ({ data: { keys: (await req.storage.list(KEYS.denyListPrefix)).map(tagValueOfKey) } }),
      },
      help: 'Lists the deny-listed role tags.',
    }),
    definePath({
      pattern: `${base}/(?<role_tag>.+)`,
      fields: { role_tag: { type: 'string', required: true } },
      operations: {
        read: async (req, f) => {
          const entry = await readDenyListEntry(req.storage, tagValueFromInput(f.string('role_tag')));
          return entry
            ? { data: { creation_time: new Date(entry.creationTime).toISOString(), expiration_time: new Date(entry.expirationTime).toISOString() } }
            : null;
        },
        update: async (req, f) => {
          const value = tagValueFromInput(f.string('role_tag'));
          const tag = parseRoleTagValue(value);
          const role = await readRole(req.storage, tag.role);
          if (!role) throw new BadRequestError(`invalid value for "role_tag": its role "${tag.role}" does not exist`);
          if (!roleTagMacValid(value, role.hmacKey)) throw new BadRequestError('invalid value for "role_tag": the tag was not made by this role');
          const now = ctx.clock.now();
          const existing = await readDenyListEntry(req.storage, value);
          // The entry must outlive any token the tag could still produce.
          const life = tag.maxTtl || role.tokenMaxTtl || req.mount.maxLeaseTtl;
          const entry: DenyListEntry = { creationTime: existing?.creationTime ?? now, expirationTime: now + life * 1000 };
          await putJson(req.storage, denyListKey(value), entry);
          return null;
        },
        delete: async (req, f) => {
          await req.storage.delete(denyListKey(tagValueFromInput(f.string('role_tag'))));
          return null;
        },
      },
      help: 'A deny-listed role tag: it can no longer be used to log in (tokens already issued stay valid).',
    }),
  ]);
}
