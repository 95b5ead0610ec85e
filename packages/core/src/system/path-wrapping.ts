import type { Core } from '../core';
import { BadRequestError } from '../errors';
import { definePath, type BackendRequest, type PathDefinition } from '../framework/types';

/** What `sys/wrapping/wrap` uses when the request names no wrap TTL. */
export const DEFAULT_WRAP_TTL = 300;

export function wrappingPaths(core: Core): PathDefinition[] {
  /**
   * The wrapping token to act on: the `token` field, which needs a caller allowed to use the
   * path; or the request's own token, which then is the wrapping token (its one use).
   */
  const target = async (req: BackendRequest, field: string, path: string): Promise<string> => {
    if (field !== '') {
      await core.authorizeToken(req.clientToken, req.remoteAddress, core.viewOf(req), path, 'update');
      return field;
    }
    if (!req.clientToken) throw new BadRequestError('missing required field "token"');
    return req.clientToken;
  };
  return [
    definePath({
      pattern: 'wrapping/wrap',
      arbitraryFields: true,
      operations: {
        update: async (req) => {
          const ttl = req.wrapTtl ?? DEFAULT_WRAP_TTL;
          const reply = await core.wrapping.wrap({ status: 200, body: { data: req.data } }, 'sys/wrapping/wrap', ttl);
          return { raw: reply };
        },
      },
    }),
    definePath({
      pattern: 'wrapping/unwrap',
      unauthenticated: true,
      fields: { token: { type: 'string' } },
      operations: {
        update: async (req, f) => ({ raw: await core.wrapping.unwrap(await target(req, f.string('token'), 'sys/wrapping/unwrap')) }),
      },
    }),
    definePath({
      pattern: 'wrapping/lookup',
      unauthenticated: true,
      fields: { token: { type: 'string' } },
      operations: {
        update: async (req, f) => {
          const id = f.string('token') || req.clientToken;
          if (!id) throw new BadRequestError('missing required field "token"');
          return { data: await core.wrapping.lookup(id) };
        },
      },
    }),
    definePath({
      pattern: 'wrapping/rewrap',
      fields: { token: { type: 'string' } },
      operations: {
        update: async (_req, f) => {
          if (f.string('token') === '') throw new BadRequestError('missing required field "token"');
          return { raw: await core.wrapping.rewrap(f.string('token')) };
        },
      },
    }),
  ];
}
