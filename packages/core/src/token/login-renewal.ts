import { randomUUID } from 'node:crypto';
import type { Core } from '../core';
import { BadRequestError } from '../errors';
import type { BackendRequest, LoginRenewal } from '../framework/types';
import type { TokenEntry } from './token-entry';

/**
 * Asks the auth method that issued a login token whether it may be renewed, as Vault's renew
 * handlers (PathLoginRenew) do: it throws to refuse, or answers its role's current TTLs.
 */
export async function checkLoginRenewal(core: Core, entry: TokenEntry, increment: number): Promise<LoginRenewal | null> {
  const login = entry.login;
  if (!login) return null;
  for (const view of core.namespaces.all()) {
    const mount = view.auths.byUuid(login.mountUuid);
    if (!mount) continue;
    const req: BackendRequest = {
      id: randomUUID(), operation: 'update', path: entry.path.slice(`auth/${mount.path}`.length),
      mount: core.mountSettings('auth', mount), storage: core.mountStorage('auth', mount), data: {}, headers: {},
      namespace: { id: view.id, path: view.path },
    };
    const backend = core.backendOf(mount.uuid);
    if (!backend) throw new BadRequestError(`the auth method "${mount.type}" that issued this token is not available`);
    return backend.renewLogin(req, {
      internal: login.internal, metadata: entry.meta, policies: entry.policies, increment, issuedAt: entry.creationTime,
    });
  }
  throw new BadRequestError('the token cannot be renewed: the auth method that issued it is no longer mounted');
}
