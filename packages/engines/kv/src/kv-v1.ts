import { BadRequestError, NotFoundError, definePath, getJson, jsonOp, type PathDefinition } from '@strongroom/core';
import { requireSecretPath } from './secret-store';

/** KV version 1 keeps its entries under their own prefix, apart from any v2 layout. */
export const V1_PREFIX = 'v1/';

/**
 * KV version 1: one unversioned JSON map per path, the behaviour of a `kv` mount without
 * `version=2`. The whole request body is the secret.
 */
export function v1Paths(): PathDefinition[] {
  return [
    definePath({
      pattern: '(?<path>.*)',
      arbitraryFields: true,
      existenceCheck: async (req, fields) => (await req.storage.get(V1_PREFIX + fields.string('path'))) !== null,
      operations: {
        async read(req, fields) {
          const path = fields.string('path');
          const entry = path === '' ? null : await getJson<Record<string, unknown>>(req.storage, V1_PREFIX + path);
          if (!entry) throw new NotFoundError();
          return { data: entry };
        },
        async list(req, fields) {
          let dir = fields.string('path');
          if (dir !== '' && !dir.endsWith('/')) dir += '/';
          return { data: { keys: await req.storage.list(V1_PREFIX + dir) } };
        },
        async update(req, fields) {
          const path = requireSecretPath(fields.string('path'));
          if (Object.keys(fields.raw).length === 0) throw new BadRequestError('no data provided: the request body is the secret and must hold at least one key');
          await req.storage.txn([jsonOp(V1_PREFIX + path, fields.raw)]);
          return null;
        },
        async delete(req, fields) {
          const path = requireSecretPath(fields.string('path'));
          await req.storage.txn([{ type: 'delete', key: V1_PREFIX + path }]);
          return null;
        },
      },
      help: 'KV version 1: reads, writes, deletes and lists unversioned secrets.',
    }),
  ];
}
