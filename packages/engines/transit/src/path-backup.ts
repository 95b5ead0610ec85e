import { BadRequestError, definePath, type BackendResponse, type PathDefinition } from '@strongroom/core';
import { keyReadView } from './key-policy';
import { KEY_NAME, type TransitContext } from './transit-context';
import { decodeBackup, encodeBackup } from './vault-backup';

/** `backup/:name`, `restore` and `restore/:name`: plaintext backups in Vault's format. */
export function backupPaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: `backup/${KEY_NAME}`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
      },
      operations: {
        async read(req, fields) {
          const name = fields.string('name');
          // A backup is recorded on the key (backup_info), so it is a write under the key's lock.
          return ctx.keys.update<BackendResponse>(req.storage, name, async (current) => {
            if (!current) throw new BadRequestError(`key "${name}" not found`);
            if (!current.exportable) {
              throw new BadRequestError(`key "${name}" cannot be backed up: exporting is disallowed on the key; set exportable through keys/${name}/config`);
            }
            if (!current.allowPlaintextBackup) {
              throw new BadRequestError(`key "${name}" cannot be backed up: plaintext backup is disallowed on the key; set allow_plaintext_backup through keys/${name}/config`);
            }
            const next = current.clone();
            next.backupInfo = { time: ctx.clock.now(), version: next.latestVersion };
            return { change: { next }, result: { data: { backup: encodeBackup(next) } } };
          });
        },
      },
      help: 'Returns a plaintext backup of a key: configuration, every version and their HMAC keys. Needs exportable and allow_plaintext_backup.',
    }),

    definePath({
      pattern: `restore(?:/${KEY_NAME})?`,
      fields: {
        name: { type: 'string', default: '', description: 'Name to restore under; the backed-up name when empty.' },
        backup: { type: 'string', description: 'The text backup/:name returned.' },
        force: { type: 'bool', default: false, description: 'Overwrite a key that already exists under the name.' },
      },
      operations: {
        async update(req, fields) {
          const backup = fields.string('backup');
          if (backup === '') throw new BadRequestError('missing required field "backup": give the text backup/:name returned');
          const rename = fields.string('name');
          if (rename.includes('/')) throw new BadRequestError('invalid value for "name": key names cannot be paths');
          if (rename !== '' && !/^\w(?:[\w.-]*\w)?$/.test(rename)) {
            throw new BadRequestError(`invalid value for "name": "${rename}" is not a valid key name (letters, digits, _, - and . inside)`);
          }
          const { policy, warnings } = decodeBackup(backup, rename);
          const force = fields.bool('force');
          return ctx.keys.update<BackendResponse>(req.storage, policy.name, async (current) => {
            if (current && !force) {
              throw new BadRequestError(`key "${policy.name}" already exists; set "force" to true to overwrite it, or restore under another name`);
            }
            policy.restoreInfo = { time: ctx.clock.now(), version: policy.latestVersion };
            return { change: { next: policy }, result: { data: keyReadView(policy), ...(warnings.length > 0 ? { warnings } : {}) } };
          });
        },
      },
      help: 'Restores a key from backup/:name output, under its own name or the one given; force overwrites an existing key.',
    }),
  ];
}
