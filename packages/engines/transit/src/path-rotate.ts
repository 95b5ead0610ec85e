import { BadRequestError, definePath, type PathDefinition } from '@strongroom/core';
import { keyReadView, type KeyPolicy } from './key-policy';
import { keyNotFound } from './path-keys';
import { KEY_NAME, type TransitContext } from './transit-context';

/** Why `policy` may not get a new version from this service, or null when it may. */
export function rotationRefusal(policy: KeyPolicy): string | null {
  if (policy.imported && !policy.allowImportedKeyRotation) {
    return `key "${policy.name}" was imported without allow_rotation, so it can only change through import_version`;
  }
  return null;
}

/** Adds a version to the stored key; the caller holds the key's lock. */
export async function rotatedCopy(policy: KeyPolicy, now: number): Promise<KeyPolicy> {
  const next = policy.clone();
  await next.addGeneratedVersion(now);
  return next;
}

/** `keys/:name/rotate`: a new latest version; older ones stay for decryption. */
export function rotatePaths(ctx: TransitContext): PathDefinition[] {
  return [
    definePath({
      pattern: `keys/${KEY_NAME}/rotate`,
      fields: {
        name: { type: 'string', description: 'Name of the key.' },
        managed_key_name: { type: 'string', default: '', description: 'Managed key by name (type managed_key).' },
        managed_key_id: { type: 'string', default: '', description: 'Managed key by ID (type managed_key).' },
      },
      operations: {
        async update(req, fields) {
          const name = fields.string('name');
          return ctx.keys.update(req.storage, name, async (current) => {
            if (!current) throw keyNotFound(name);
            const refusal = rotationRefusal(current);
            if (refusal) throw new BadRequestError(refusal);
            const next = await rotatedCopy(current, ctx.clock.now());
            return { change: { next }, result: { data: keyReadView(next) } };
          });
        },
      },
      help: 'Rotates a key: new encryptions use the new version; rewrap moves old ciphertext to it.',
    }),
  ];
}
