import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import { isAsymmetricKeyType, isRsaKeyType, parseWrapHash, wrapForImport } from './crypto';
import type { KeyPolicy, KeyVersion } from './key-policy';
import { selectVersions } from './path-export';
import { userInput } from './path-import';
import type { TransitContext } from './transit-context';

const NAME = '\\w(?:[\\w.-]*\\w)?';

/** What import expects inside the wrapping: raw bytes for symmetric keys, PKCS#8 DER otherwise. */
function importTarget(source: KeyPolicy, v: KeyVersion): Buffer | undefined {
  if (isAsymmetricKeyType(source.type)) return v.privateKeyDer;
  if (source.spec.family === 'hmac') return v.hmacKey;
  return v.key;
}

/**
 * `byok-export/:destination/:source(/:version)`: the source key's versions, each wrapped as an
 * import ciphertext under the destination key, an RSA key that is usually another mount's or
 * cluster's wrapping_key imported here as a public key. Key material leaves only wrapped.
 */
export function byokPaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: `byok-export/(?<destination>${NAME})/(?<source>${NAME})(?:/(?<version>[^/]+))?`,
      fields: {
        destination: { type: 'string', description: 'RSA key to wrap with, usually another cluster\'s wrapping key imported as a public key.' },
        source: { type: 'string', description: 'Key to export.' },
        version: { type: 'string', default: '', description: 'Version to export: a number or "latest"; empty exports every version.' },
        hash: { type: 'string', default: 'SHA256', description: 'Hash of the RSA-OAEP step: SHA1, SHA224, SHA256, SHA384 or SHA512.' },
      },
      operations: {
        async read(req, fields) {
          const hash = userInput(() => parseWrapHash(fields.string('hash') || 'SHA256', 'hash'));
          const destName = fields.string('destination');
          const sourceName = fields.string('source');
          const destination = await ctx.keys.get(req.storage, destName);
          if (!destination) throw new BadRequestError(`invalid value for "destination": key "${destName}" not found`);
          if (!isRsaKeyType(destination.type)) {
            throw new BadRequestError(`invalid value for "destination": key "${destName}" is of type ${destination.type}; byok-export wraps only with RSA keys`);
          }
          const source = await ctx.keys.get(req.storage, sourceName);
          if (!source) throw new BadRequestError(`invalid value for "source": key "${sourceName}" not found`);
          if (!source.exportable) throw new BadRequestError(`key is not exportable: set exportable on key "${sourceName}" through keys/${sourceName}/config to export it`);
          // The destination's newest version wraps, as import on the other side always uses its latest wrapping key.
          const wrapWith = destination.version(destination.latestVersion);
          if (!wrapWith) throw new Error(`key "${destName}" has no version ${destination.latestVersion}`);
          const publicKey = wrapWith.publicKey();

          const keys: Record<string, string> = {};
          for (const v of selectVersions(source, fields.string('version'))) {
            const target = importTarget(source, v);
            // A version imported as a public key alone has nothing to wrap; export answers "" there too.
            keys[String(v.version)] = target ? wrapForImport(publicKey, target, hash).toString('base64') : '';
          }
          return { data: { name: source.name, type: source.type, keys } };
        },
      },
      help: 'Exports a key wrapped for import elsewhere, under the destination RSA key (usually a remote wrapping_key).',
    }),
  ];
}
