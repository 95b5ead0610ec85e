import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import type { Cloud1SecretsContext } from './context';
import { readRootConfig, writeRootConfig } from './path-config-root';
import { KEYS } from './storage-keys';

/** `config/rotate-root`: replaces config/root's static key with a new key of the same IAM user. */
export function configRotateRootPaths(ctx: Cloud1SecretsContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'config/rotate-root',
      operations: {
        update: (req) => ctx.locks.run(KEYS.rootConfig, async () => {
          const config = await readRootConfig(req.storage);
          if (config.accessKey === '' || config.secretKey === '') {
            throw new BadRequestError('invalid value for "access_key": config/root has no static credentials to rotate');
          }
          const { credentials, userName } = await ctx.provider.createRootKey(config);
          // Stored before the old key goes, so a failed delete never leaves the mount without a working key.
          await writeRootConfig(req.storage, { ...config, accessKey: credentials.accessKeyId, secretKey: credentials.secretAccessKey });
          await ctx.provider.deleteRootKey(config, credentials, userName, config.accessKey);
          return { data: { access_key: credentials.accessKeyId } };
        }),
      },
      help: 'Replaces the static access key of config/root with a new one and deletes the old key; the key must be the user\'s only one.',
    }),
  ];
}
