import { randomBytes } from 'node:crypto';
import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import { decodeOptionalBase64 } from './codec';
import { encryptWithKey } from './encryption';
import { encryptionKeyNotFound } from './path-encrypt';
import { KEY_NAME, type TransitContext } from './transit-context';

export const DATAKEY_BITS: readonly number[] = [128, 256, 512];

/**
 * `datakey/plaintext/:name` and `datakey/wrapped/:name`: a fresh random key, encrypted with
 * the named key. The two are separate paths so ACL policy decides who may see the plaintext.
 */
export function datakeyPaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: `datakey/(?<type>[^/]+)/${KEY_NAME}`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        type: { type: 'string', description: '"plaintext" returns the key and its ciphertext, "wrapped" only the ciphertext.' },
        context: { type: 'string', description: 'Base64 key-derivation context; required by derived keys.' },
        nonce: { type: 'string', description: 'Base64 12-byte nonce; only for convergent keys from release 0.6.1.' },
        bits: { type: 'int', default: 256, description: 'Length of the data key: 128, 256 or 512 bits.' },
        key_version: { type: 'int', default: 0, description: 'Version to encrypt with; 0 is the latest.' },
      },
      operations: {
        async update(req, fields) {
          const name = fields.string('name');
          const type = fields.string('type');
          if (type !== 'plaintext' && type !== 'wrapped') {
            throw new BadRequestError(`invalid value for "type": the path segment after datakey/ must be "plaintext" or "wrapped", not "${type}"`);
          }
          const bits = fields.int('bits');
          if (!DATAKEY_BITS.includes(bits)) throw new BadRequestError('invalid value for "bits": must be 128, 256 or 512');
          const context = decodeOptionalBase64('context', fields.string('context'));
          const nonce = decodeOptionalBase64('nonce', fields.string('nonce'));
          const policy = await ctx.keys.get(req.storage, name);
          if (!policy) throw encryptionKeyNotFound(name);
          const dataKey = randomBytes(bits / 8);
          try {
            const result = encryptWithKey(policy, { plaintext: dataKey, context, nonce, keyVersion: fields.int('key_version') });
            const data: Record<string, unknown> = { ciphertext: result.ciphertext, key_version: result.keyVersion };
            if (type === 'plaintext') data['plaintext'] = dataKey.toString('base64');
            return { data };
          } finally {
            dataKey.fill(0);
          }
        },
      },
      help: 'Generates a data key encrypted with the named key, with its plaintext on the plaintext/ path only.',
    }),
  ];
}
