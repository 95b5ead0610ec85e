import {
  Backend, NotFoundError, definePath,
  type BackendRequest, type BackendResponse, type EngineContext, type EngineFactory, type Operation, type PathDefinition, type PathMatch,
} from '@strongroom/core';
import { KeyedMutex } from '@strongroom/core';
import { describeKvChange } from './describe-change';
import { v1Paths } from './kv-v1';
import { configPaths } from './path-config';
import { dataPaths } from './path-data';
import { deletePaths } from './path-delete';
import { metadataPaths } from './path-metadata';
import { subkeysPaths } from './path-subkeys';
import type { KvContext } from './secret-store';

const CLI_VERB: Record<Operation, string> = { read: 'get', list: 'list', create: 'put', update: 'put', patch: 'patch', delete: 'delete' };

/**
 * Anything outside the v2 endpoints: Vault answers 404 with a warning (not an error) that
 * points old `vault read`/`vault write` users at the versioned API, and tools grep for it.
 */
function unversionedPath(): PathDefinition {
  const answer = async (req: BackendRequest): Promise<BackendResponse> => ({
    status: 404,
    data: null,
    warnings: [
      'Invalid path for a versioned K/V secrets engine: use the data/, metadata/, delete/, undelete/, destroy/ '
      + `or subkeys/ endpoints, or 'vault kv ${CLI_VERB[req.operation]}' from the CLI.`,
    ],
  });
  return definePath({
    pattern: '.*',
    arbitraryFields: true,
    operations: { read: answer, list: answer, update: answer, patch: answer, delete: answer },
  });
}

function isVersion1(req: BackendRequest): boolean {
  return req.mount.options['version'] !== '2';
}

/**
 * One backend for both KV versions. The version is a mount option, which the factory does not
 * see, so the choice is made per request: v1 mounts are served by a separate path table.
 */
export class KvBackend extends Backend {
  private readonly v1 = new Backend('kv', v1Paths());

  constructor(ctx: KvContext) {
    super('kv', [
      ...configPaths(ctx), ...dataPaths(ctx), ...metadataPaths(ctx), ...deletePaths(ctx), ...subkeysPaths(ctx), unversionedPath(),
    ]);
  }

  private v1Match(req: BackendRequest): PathMatch {
    const match = this.v1.match(req.path);
    if (!match) throw new NotFoundError();
    return match;
  }

  override supports(match: PathMatch, op: Operation): boolean {
    // Without the request the version is unknown; v1 serves every operation but patch.
    return super.supports(match, op) || op !== 'patch';
  }

  override resolveWrite(match: PathMatch, req: BackendRequest): Operation | Promise<Operation> {
    return isVersion1(req) ? this.v1.resolveWrite(this.v1Match(req), req) : super.resolveWrite(match, req);
  }

  override execute(match: PathMatch, req: BackendRequest): Promise<BackendResponse | null> {
    return isVersion1(req) ? this.v1.execute(this.v1Match(req), req) : super.execute(match, req);
  }
}

export function createKvBackend(ctx: EngineContext): KvBackend {
  return new KvBackend({ clock: ctx.clock, locks: new KeyedMutex() });
}

export const kvEngine: EngineFactory = {
  type: 'kv',
  kind: 'secret',
  create: createKvBackend,
  describeChange: describeKvChange,
};
