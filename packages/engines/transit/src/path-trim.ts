import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import { keyReadView } from './key-policy';
import { keyNotFound } from './path-keys';
import { KEY_NAME, type TransitContext } from './transit-context';

/** `keys/:name/trim`: permanently deletes the versions below min_available_version. */
export function trimPaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: `keys/${KEY_NAME}/trim`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        min_available_version: { type: 'int', required: true, description: 'Versions below this one are deleted for good.' },
      },
      operations: {
        async update(req, fields) {
          const name = fields.string('name');
          const min = fields.int('min_available_version');
          if (min <= 0) throw new BadRequestError('invalid value for "min_available_version": must be a positive version number');
          return ctx.keys.update(req.storage, name, async (current) => {
            if (!current) throw keyNotFound(name);
            if (min < current.minAvailableVersion) {
              throw new BadRequestError(`invalid value for "min_available_version": cannot go back from ${current.minAvailableVersion}; trimmed versions are gone`);
            }
            // Only versions no caller may use any more can go: both minimums must be set, and
            // trimming stops at the lesser of them.
            if (current.minEncryptionVersion === 0 || current.minDecryptionVersion === 0) {
              throw new BadRequestError(
                `invalid value for "min_available_version": key "${name}" needs non-zero min_encryption_version and min_decryption_version before it can be trimmed`,
              );
            }
            const ceiling = Math.min(current.minEncryptionVersion, current.minDecryptionVersion);
            if (min > ceiling) {
              throw new BadRequestError(
                `invalid value for "min_available_version": ${min} is above the lesser of min_encryption_version and min_decryption_version (${ceiling})`,
              );
            }
            const next = current.clone();
            for (const v of [...next.versions.keys()]) if (v < min) next.versions.delete(v);
            next.minAvailableVersion = min;
            return { change: { next }, result: { data: keyReadView(next) } };
          });
        },
      },
      help: 'Deletes the versions of a key below min_available_version, for good.',
    }),
  ];
}
