import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import { checkAutoRotatePeriod, keyReadView } from './key-policy';
import { keyNotFound } from './path-keys';
import { KEY_NAME, type TransitContext } from './transit-context';

/** `keys/:name/config`: the settings of a key that may change after creation. */
export function keysConfigPaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: `keys/${KEY_NAME}/config`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        min_decryption_version: { type: 'int', description: 'Oldest version that may decrypt, verify signatures and HMACs.' },
        min_encryption_version: { type: 'int', description: 'Oldest version that may encrypt, sign and HMAC; 0 means the latest.' },
        deletion_allowed: { type: 'bool', description: 'Whether the key may be deleted.' },
        exportable: { type: 'bool', description: 'Allow export of the key material; cannot be undone.' },
        allow_plaintext_backup: { type: 'bool', description: 'Allow plaintext backups; cannot be undone.' },
        auto_rotate_period: { type: 'duration', description: 'Rotate automatically this often; 0 disables, else at least 1h.' },
      },
      operations: {
        async update(req, fields) {
          const name = fields.string('name');
          if (fields.has('auto_rotate_period')) checkAutoRotatePeriod(fields.int('auto_rotate_period'));
          for (const field of ['min_decryption_version', 'min_encryption_version']) {
            if (fields.has(field) && fields.int(field) < 0) throw new BadRequestError(`invalid value for "${field}": must not be negative`);
          }
          return ctx.keys.update(req.storage, name, async (current) => {
            if (!current) throw keyNotFound(name);
            const next = current.clone();
            const warnings: string[] = [];

            if (fields.has('min_decryption_version')) {
              let min = fields.int('min_decryption_version');
              if (min === 0) {
                min = 1;
                warnings.push('min_decryption_version 0 was taken as 1: key versions count from 1');
              }
              if (min > next.latestVersion) {
                throw new BadRequestError(`invalid value for "min_decryption_version": ${min} is above the latest version ${next.latestVersion}`);
              }
              if (min < next.minAvailableVersion) {
                throw new BadRequestError(`invalid value for "min_decryption_version": ${min} is below min_available_version ${next.minAvailableVersion}; those versions were trimmed`);
              }
              next.minDecryptionVersion = min;
            }

            if (fields.has('min_encryption_version')) {
              const min = fields.int('min_encryption_version');
              if (min > next.latestVersion) {
                throw new BadRequestError(`invalid value for "min_encryption_version": ${min} is above the latest version ${next.latestVersion}`);
              }
              if (min > 0 && min < next.minAvailableVersion) {
                throw new BadRequestError(`invalid value for "min_encryption_version": ${min} is below min_available_version ${next.minAvailableVersion}; those versions were trimmed`);
              }
              next.minEncryptionVersion = min;
            }

            if (next.minEncryptionVersion > 0 && next.minEncryptionVersion < next.minDecryptionVersion) {
              throw new BadRequestError(
                `invalid value for "min_encryption_version": must be 0 (latest) or at least min_decryption_version (${next.minDecryptionVersion}), `
                + `or new ciphertext could not be decrypted`,
              );
            }

            if (fields.has('deletion_allowed')) next.deletionAllowed = fields.bool('deletion_allowed');

            // One-way switches: Vault ignores an attempt to turn them off, and so do we, but we
            // say so rather than let the caller believe it worked.
            if (fields.has('exportable')) {
              if (fields.bool('exportable')) next.exportable = true;
              else if (current.exportable) warnings.push('exportable cannot be disabled once enabled; it stays true');
            }
            if (fields.has('allow_plaintext_backup')) {
              if (fields.bool('allow_plaintext_backup')) next.allowPlaintextBackup = true;
              else if (current.allowPlaintextBackup) warnings.push('allow_plaintext_backup cannot be disabled once enabled; it stays true');
            }

            if (fields.has('auto_rotate_period')) next.autoRotatePeriod = fields.int('auto_rotate_period');

            const result = { data: keyReadView(next), ...(warnings.length > 0 ? { warnings } : {}) };
            return { change: { next }, result };
          });
        },
      },
      help: 'Tunes a key: minimum decryption and encryption versions, deletion, export, backup and automatic rotation.',
    }),
  ];
}
