import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import type { Cloud1Context } from './context';
import { readClientConfig, writeClientConfig } from './path-config-client';

export function configRotateRootPaths(ctx: Cloud1Context): PathDefinition[] {
  return [
    definePath({
      pattern: 'config/rotate-root',
      operations: {
        update: async (req) => {
          const config = await readClientConfig(req.storage);
          if (config.accessKey === '' || config.secretKey === '') {
            throw new BadRequestError('invalid value for "access_key": config/client has no static credentials to rotate');
          }
          const created = await ctx.provider.rotateAccessKey(config);
          // Stored before the old key goes, so a failed delete never leaves the mount without a working key.
          await writeClientConfig(req.storage, { ...config, accessKey: created.accessKeyId, secretKey: created.secretAccessKey });
          await ctx.provider.deleteAccessKey(config, created, config.accessKey);
          return { data: { access_key: created.accessKeyId } };
        },
      },
      help: 'Replaces the static access key of config/client with a new one and deletes the old key.',
    }),
  ];
}
