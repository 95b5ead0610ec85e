import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import { isPlainObject } from './merge-patch';
import { parseVersionParam, readVersion, type KvContext } from './secret-store';

/**
 * The key structure of a secret without its values: every leaf becomes null. `depth` 0 walks
 * the whole tree; otherwise objects below that depth are cut off to null as well.
 */
export function subkeysOf(value: Record<string, unknown>, depth: number, level = 1): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const descend = isPlainObject(v) && (depth === 0 || level < depth);
    Object.defineProperty(out, k, {
      value: descend ? subkeysOf(v, depth, level + 1) : null, enumerable: true, writable: true, configurable: true,
    });
  }
  return out;
}

/** `subkeys/<path>`: lets a caller see which keys a secret holds without reading the values. */
export function subkeysPaths(ctx: KvContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'subkeys/(?<path>.+)',
      fields: {
        path: { type: 'string', description: 'Secret path.' },
        version: { type: 'int', description: 'Version to inspect; 0 or absent means the current one.' },
        depth: { type: 'int', description: 'How many levels of nesting to return; 0 is unlimited.' },
      },
      operations: {
        async read(req, fields) {
          const path = fields.string('path');
          const requested = parseVersionParam(fields);
          const depth = fields.int('depth');
          if (depth < 0) throw new BadRequestError('invalid value for "depth": must be 0 (unlimited) or a positive integer');
          const { metadata, data } = await readVersion(ctx, req.storage, path, requested);
          if (data === null) return { status: 404, data: { metadata, subkeys: null } };
          return { data: { metadata, subkeys: subkeysOf(data, depth) } };
        },
      },
      help: 'Lists the keys of a secret version, with every value replaced by null.',
    }),
  ];
}
