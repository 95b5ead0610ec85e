import { definePath, type PathDefinition } from '@strongroom/core';
import { accessListView, readAccessListEntry } from './access-list';
import type { Cloud1Context } from './context';
import { KEYS } from './storage-keys';

/** The identity access list, under its current name and the deprecated whitelist one. */
export function accessListPaths(_ctx: Cloud1Context): PathDefinition[] {
  return ['identity-accesslist', 'identity-whitelist'].flatMap((base) => [
    definePath({
      pattern: `${base}/?`,
      operations: { list: async (req) => ({ data: { keys: await req.storage.list(KEYS.accessListPrefix) } }) },
      help: 'Lists the instance IDs on the identity access list.',
    }),
    definePath({
      pattern: `${base}/(?<instance_id>[^/]+)`,
      fields: { instance_id: { type: 'string', required: true } },
      operations: {
        read: async (req, f) => {
          const entry = await readAccessListEntry(req.storage, f.string('instance_id'));
          return entry ? { data: accessListView(entry) } : null;
        },
        // Deleting the entry is how an operator lets an instance with reauthentication disabled log in again.
        delete: async (req, f) => {
          await req.storage.delete(KEYS.accessListPrefix + f.string('instance_id'));
          return null;
        },
      },
      help: 'An instance\'s entry on the identity access list, made by its `vm` logins.',
    }),
  ]);
}
