import { definePath, jsonOp, type PathDefinition } from '@strongroom/core';
import {
  CONFIG_KEY, formatSignedDuration, loadConfig, parseDeleteAfter, parseMaxVersions, type KvContext,
} from './secret-store';

/** `config`: mount-wide defaults for version limits, cas and auto-deletion. */
export function configPaths(ctx: KvContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'config',
      fields: {
        max_versions: { type: 'int', description: 'Versions kept per secret; 0 keeps the default of 10.' },
        cas_required: { type: 'bool', description: 'Every data write must carry options.cas.' },
        delete_version_after: { type: 'any', description: 'Duration after which new versions read as deleted; negative disables.' },
      },
      operations: {
        async read(req) {
          const config = await loadConfig(req.storage);
          return {
            data: {
              cas_required: config.casRequired,
              delete_version_after: formatSignedDuration(config.deleteVersionAfter),
              max_versions: config.maxVersions,
            },
          };
        },
        async update(req, fields) {
          const maxVersions = parseMaxVersions(fields);
          const deleteAfter = fields.has('delete_version_after') ? parseDeleteAfter('delete_version_after', fields.get('delete_version_after')) : undefined;
          await ctx.locks.run(`${req.mount.uuid}\u0000config`, async () => {
            const config = await loadConfig(req.storage);
            if (maxVersions !== undefined) config.maxVersions = maxVersions;
            if (fields.has('cas_required')) config.casRequired = fields.bool('cas_required');
            if (deleteAfter !== undefined) config.deleteVersionAfter = deleteAfter;
            await req.storage.txn([jsonOp(CONFIG_KEY, config)]);
          });
          return null;
        },
      },
      help: 'Configures version limits, check-and-set and automatic deletion for the whole mount.',
    }),
  ];
}
