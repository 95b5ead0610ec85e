import { definePath, type PathDefinition } from '@strongroom/core';
import { readStaticRole } from './static-rotation';
import { ROLE_NAME } from './storage-keys';

/** `static-creds/:name`: the current key of a static role (no lease: the engine rotates it). */
export function staticCredsPaths(): PathDefinition[] {
  return [
    definePath({
      pattern: `static-creds/(?<name>${ROLE_NAME})`,
      fields: { name: { type: 'string', required: true } },
      operations: {
        read: async (req, f) => {
          const role = await readStaticRole(req.storage, f.string('name'));
          if (!role) return null;
          return {
            data: {
              access_key: role.accessKeyId, secret_key: role.secretAccessKey,
              // When this key is due to be replaced, so a client knows when to read again.
              expiration: new Date(role.nextRotation).toISOString(),
            },
          };
        },
      },
      help: 'The current access key of a static role.',
    }),
  ];
}
