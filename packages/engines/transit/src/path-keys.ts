import { BadRequestError, definePath, type BackendResponse, type PathDefinition } from '@strongroom/core';
import { decodeBase64 } from './codec';
import { checkCreationOptions, generateKeyPolicy, keyReadView, type KeyCreationOptions } from './key-policy';
import { showDerivedPublicKeys } from './path-sign';
import { KEY_NAME, type TransitContext } from './transit-context';

export function keyNotFound(name: string): BadRequestError {
  return new BadRequestError(`key "${name}" not found`);
}

/** `keys/` and `keys/:name`: list, create, read and delete named keys. */
export function keysPaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'keys/?',
      operations: {
        async list(req) {
          return { data: { keys: await ctx.keys.list(req.storage) } };
        },
      },
      help: 'Lists the names of the keys of this mount.',
    }),
    definePath({
      pattern: `keys/${KEY_NAME}`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        type: { type: 'string', default: 'aes256-gcm96', description: 'Key type; aes256-gcm96 unless given.' },
        derived: { type: 'bool', default: false, description: 'Derive a key per request from a caller-supplied context.' },
        convergent_encryption: { type: 'bool', default: false, description: 'Same plaintext and context give the same ciphertext; needs derived.' },
        exportable: { type: 'bool', default: false, description: 'Allow export of the key material; cannot be undone.' },
        allow_plaintext_backup: { type: 'bool', default: false, description: 'Allow plaintext backups; cannot be undone.' },
        key_size: { type: 'int', default: 0, description: 'Bytes of an hmac key, 32 to 512; other types take none.' },
        auto_rotate_period: { type: 'duration', default: 0, description: 'Rotate automatically this often; 0 disables, else at least 1h.' },
        managed_key_name: { type: 'string', default: '', description: 'Managed key by name (type managed_key).' },
        managed_key_id: { type: 'string', default: '', description: 'Managed key by ID (type managed_key).' },
        context: { type: 'string', description: 'On read: base64 context; a derived ed25519 key then shows the public keys derived for it.' },
      },
      operations: {
        async read(req, fields) {
          const policy = await ctx.keys.get(req.storage, fields.string('name'));
          if (!policy) return null;
          const view = keyReadView(policy);
          const context = fields.string('context');
          if (context !== '') showDerivedPublicKeys(policy, view, decodeBase64('context', context));
          return { data: view };
        },

        async update(req, fields) {
          const name = fields.string('name');
          const options: KeyCreationOptions = {
            name,
            type: fields.string('type'),
            derived: fields.bool('derived'),
            convergentEncryption: fields.bool('convergent_encryption'),
            exportable: fields.bool('exportable'),
            allowPlaintextBackup: fields.bool('allow_plaintext_backup'),
            keySize: fields.int('key_size'),
            autoRotatePeriod: fields.int('auto_rotate_period'),
          };
          checkCreationOptions(options);
          return ctx.keys.update<BackendResponse>(req.storage, name, async (current) => {
            // Creation values are fixed: a second create changes nothing and says so.
            if (current) return { change: null, result: { data: keyReadView(current), warnings: [`key ${name} already existed`] } };
            const policy = await generateKeyPolicy(options, ctx.clock.now());
            return { change: { next: policy }, result: { data: keyReadView(policy) } };
          });
        },

        async delete(req, fields) {
          const name = fields.string('name');
          await ctx.keys.update(req.storage, name, async (current) => {
            if (!current) throw new BadRequestError(`could not delete key "${name}": not found`);
            if (!current.deletionAllowed) {
              throw new BadRequestError(`deletion is not allowed for key "${name}": set deletion_allowed to true through keys/${name}/config first`);
            }
            return { change: { delete: true }, result: undefined };
          });
          return null;
        },
      },
      help: 'Creates a named key (POST), reads its configuration and public parts (GET), deletes it (DELETE, needs deletion_allowed).',
    }),
  ];
}
