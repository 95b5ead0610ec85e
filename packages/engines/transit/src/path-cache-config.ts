import { BadRequestError, definePath, putJson, type PathDefinition } from '@strongroom/core';
import { CACHE_CONFIG_KEY, loadCacheConfig } from './key-store';
import type { TransitContext } from './transit-context';

export const MIN_CACHE_SIZE = 10;

/** `cache-config`: how many parsed keys the mount keeps in memory. */
export function cacheConfigPaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'cache-config',
      fields: {
        size: { type: 'int', default: 0, description: 'Keys kept in memory: 0 is unlimited, otherwise at least 10 (least recently used go first).' },
      },
      operations: {
        async read(req) {
          await ctx.keys.load(req.storage);
          return { data: { size: (await loadCacheConfig(req.storage)).size } };
        },
        async update(req, fields) {
          const size = fields.int('size');
          if (size !== 0 && size < MIN_CACHE_SIZE) {
            throw new BadRequestError(`invalid value for "size": must be 0 (unlimited) or at least ${MIN_CACHE_SIZE}`);
          }
          await ctx.keys.load(req.storage);
          await putJson(req.storage, CACHE_CONFIG_KEY, { size });
          const warnings = ctx.keys.activeCacheSize === size
            ? []
            : ['the new cache size applies after the mount is reloaded (sys/plugins/reload/backend), remounted, or the server restarts'];
          return { data: { size }, ...(warnings.length > 0 ? { warnings } : {}) };
        },
      },
      help: 'Sizes the in-memory cache of parsed keys; a change applies when the mount is next loaded.',
    }),
  ];
}
