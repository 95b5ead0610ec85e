import type { Core } from '../core';
import { BadRequestError } from '../errors';
import { definePath, type PathDefinition } from '../framework/types';
import { decodeKey } from './path-seal';
import type { TokenGeneration } from './root-generation';

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The two endpoints of a token generation under `base` (relative to `sys/`, ending in `/`):
 * `attempt` (read the progress, start, cancel) and `update` (give a key share). Like unseal,
 * they take no token: the key shares are the authority. Replies are bare JSON, as Vault's.
 */
export function tokenGenerationPaths(base: string, generation: TokenGeneration): PathDefinition[] {
  const prefix = escapeRegex(base);
  const reply = (body: unknown) => ({ raw: { status: 200, body } });
  return [
    definePath({
      pattern: `${prefix}attempt`,
      restricted: true,
      unauthenticated: true,
      fields: { pgp_key: { type: 'string' }, otp: { type: 'string' } },
      operations: {
        read: async () => reply(await generation.status()),
        update: async (_req, f) => {
          const pgpKey = f.string('pgp_key');
          const otp = f.string('otp');
          return reply(await generation.start({ ...(pgpKey ? { pgpKey } : {}), ...(otp ? { otp } : {}) }));
        },
        delete: async () => {
          await generation.cancel();
          return null;
        },
      },
    }),
    definePath({
      pattern: `${prefix}update`,
      restricted: true,
      unauthenticated: true,
      fields: { key: { type: 'string', required: true }, nonce: { type: 'string', required: true } },
      operations: {
        update: async (_req, f) => {
          const key = f.string('key');
          if (key.trim() === '') throw new BadRequestError('invalid value for "key": must be an unseal key share, not empty');
          return reply(await generation.update(decodeKey(key), f.string('nonce')));
        },
      },
    }),
  ];
}

/** Vault's `sys/generate-root/*`: a new root token from a quorum of unseal key shares, on the active node. */
export function generateRootPaths(core: Core): PathDefinition[] {
  return tokenGenerationPaths('generate-root/', core.rootGeneration);
}
