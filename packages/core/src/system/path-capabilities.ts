import type { Core } from '../core';
import { BadRequestError } from '../errors';
import type { FieldData } from '../framework/fields';
import type { TokenEntry } from '../token/token-entry';
import { definePath, type BackendRequest, type PathDefinition } from '../framework/types';

function requestedPaths(f: FieldData): string[] {
  const paths = [...f.list('paths'), ...(f.has('path') ? f.list('path') : [])].map((p) => p.replace(/^\/+/, ''));
  if (paths.length === 0) throw new BadRequestError('missing required field "paths"');
  return paths;
}

/** What `entry` may do on each path of the request's namespace (paths as the caller wrote them). */
async function answer(core: Core, req: BackendRequest, entry: TokenEntry | null, paths: string[]) {
  const data: Record<string, unknown> = {};
  const scoped = entry ? await core.aclFor(entry, core.viewOf(req), '').catch(() => null) : null;
  for (const path of paths) data[path] = scoped ? [...scoped.acl.capabilities(scoped.aclPath + path)] : ['deny'];
  // With one path, Vault also answers under `capabilities`.
  if (paths.length === 1) data['capabilities'] = data[paths[0] as string];
  return { data, copyDataToTop: true };
}

const PATH_FIELDS = { path: { type: 'comma-list' as const }, paths: { type: 'comma-list' as const } };

export function capabilityPaths(core: Core): PathDefinition[] {
  return [
    definePath({
      pattern: 'capabilities-self',
      fields: { ...PATH_FIELDS, token: { type: 'string' } },
      operations: {
        update: async (req, f) => {
          const entry = req.clientToken ? await core.tokens.lookupCaller(req.clientToken, req.caller?.tokenHash) : null;
          return answer(core, req, entry, requestedPaths(f));
        },
      },
    }),
    definePath({
      pattern: 'capabilities',
      fields: { ...PATH_FIELDS, token: { type: 'string', required: true } },
      operations: {
        update: async (req, f) => {
          const entry = await core.tokens.lookup(f.string('token'));
          if (!entry) throw new BadRequestError('invalid value for "token": the token is invalid, expired or revoked');
          return answer(core, req, entry, requestedPaths(f));
        },
      },
    }),
    definePath({
      pattern: 'capabilities-accessor',
      fields: { ...PATH_FIELDS, accessor: { type: 'string', required: true } },
      operations: {
        update: async (req, f) => {
          const entry = await core.tokens.lookupByAccessor(f.string('accessor'));
          if (!entry) throw new BadRequestError('invalid value for "accessor": no valid token has this accessor');
          return answer(core, req, entry, requestedPaths(f));
        },
      },
    }),
  ];
}
