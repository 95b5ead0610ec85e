import { BadRequestError, NotFoundError } from '../errors';
import { Backend } from '../framework/backend';
import type { EngineFactory } from '../framework/engine';
import { definePath } from '../framework/types';
import { getJson, jsonOp } from '../storage/logical';

/**
 * A stand-in secrets engine for core's tests that need "some mount" and not a real engine: the
 * request body is kept as one JSON map per path. Writes tell create from update, so ACL checks
 * through the router see both. `type` lets a test mount it as `kv`, the one type core itself
 * knows by name (the `kv-v2` alias).
 */
export function storeEngine(type = 'store'): EngineFactory {
  const paths = [
    definePath({
      pattern: '(?<path>.*)',
      arbitraryFields: true,
      existenceCheck: async (req, fields) => (await req.storage.get(fields.string('path'))) !== null,
      operations: {
        async read(req, fields) {
          const entry = await getJson<Record<string, unknown>>(req.storage, fields.string('path'));
          if (!entry) throw new NotFoundError();
          return { data: entry };
        },
        async list(req, fields) {
          let dir = fields.string('path');
          if (dir !== '' && !dir.endsWith('/')) dir += '/';
          return { data: { keys: await req.storage.list(dir) } };
        },
        async update(req, fields) {
          if (Object.keys(fields.raw).length === 0) throw new BadRequestError('no data provided: the request body is what is stored');
          await req.storage.txn([jsonOp(fields.string('path'), fields.raw)]);
          return null;
        },
        async delete(req, fields) {
          await req.storage.txn([{ type: 'delete', key: fields.string('path') }]);
          return null;
        },
      },
    }),
  ];
  return { type, kind: 'secret', create: () => new Backend(type, paths) };
}
