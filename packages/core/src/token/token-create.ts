import type { Core } from '../core';
import { BadRequestError, PermissionDeniedError } from '../errors';
import type { FieldData } from '../framework/fields';
import type { AuthResult, BackendRequest, BackendResponse } from '../framework/types';
import { checkPathName } from '../path-names';
import { normalizePolicyName } from '../policy/policy';
import { parseCidrs } from './cidr';
import type { TokenEntry } from './token-entry';

function sanitizeDisplayName(name: string): string {
  const clean = name.trim().replace(/[^A-Za-z0-9-]+/g, '-').replace(/^-+|-+$/g, '');
  return clean === '' ? 'token' : `token-${clean}`;
}

/**
 * The `id` asked for, if any. It must arrive as a JSON string: the field layer would turn 1e400
 * into "Infinity" and true into "true". A '.' is refused as Vault does, which also keeps custom
 * IDs apart from generated ones (`hvs.`) and out of anything that reads dots as separators.
 */
function customTokenId(f: FieldData): string | undefined {
  const raw = f.raw['id'];
  if (raw === undefined || raw === null || raw === '') return undefined;
  checkPathName('id', raw);
  if (raw.includes('.')) throw new BadRequestError('invalid value for "id": a custom token ID must not contain "."');
  return raw;
}

export function authOf(id: string, entry: TokenEntry, now: number): AuthResult {
  const leaseDuration = entry.expireTime === 0 ? 0 : Math.max(0, Math.floor((entry.expireTime - now) / 1000));
  const tokenPolicies = entry.policies;
  return {
    clientToken: id,
    accessor: entry.accessor,
    policies: tokenPolicies,
    tokenPolicies,
    metadata: Object.keys(entry.meta).length > 0 ? entry.meta : null,
    leaseDuration,
    renewable: entry.renewable && entry.expireTime !== 0,
    entityId: entry.entityId,
    tokenType: entry.type,
    orphan: entry.parent === undefined,
    numUses: entry.numUses,
  };
}

/** Policies for a child token, following Vault's rules for what a parent may hand down. */
function childPolicies(parent: TokenEntry, f: FieldData, parentIsRoot: boolean, privileged: boolean): string[] {
  const requested = f.has('policies') ? f.list('policies').map(normalizePolicyName) : parent.policies.filter((p) => p !== 'default');
  const set = new Set(requested.filter((p) => p !== ''));
  if (set.has('root')) {
    // Only a root token may make another: sudo on the create path is not enough for that.
    if (!parentIsRoot) throw new PermissionDeniedError('child policies must be a subset of the parent\'s policies: "root" is not held by the parent');
    // As in Vault, the root policy stands alone: next to it every other policy is moot.
    return ['root'];
  }
  // A caller with sudo on the create path may grant any (non-root) policy, as in Vault; any
  // other caller only policies its own token holds, and `default`.
  if (!privileged) {
    for (const p of set) {
      if (p !== 'default' && !parent.policies.includes(p)) {
        throw new PermissionDeniedError(`child policies must be a subset of the parent's policies: "${p}" is not held by the parent`);
      }
    }
  }
  if (f.bool('no_default_policy')) set.delete('default');
  else set.add('default');
  return [...set].sort();
}

/** auth/token/create and create-orphan. */
export async function createToken(core: Core, req: BackendRequest, f: FieldData, forceOrphan: boolean): Promise<BackendResponse> {
  const caller = req.caller;
  if (!caller) throw new PermissionDeniedError();
  if (f.has('role_name') && f.string('role_name') !== '') {
    throw new BadRequestError('invalid value for "role_name": token roles are not supported');
  }
  if (caller.tokenType === 'batch') throw new BadRequestError('batch tokens cannot create more tokens');
  const parent = req.clientToken ? await core.tokens.lookup(req.clientToken) : null;
  if (!parent) throw new PermissionDeniedError();
  const parentIsRoot = parent.policies.includes('root');
  const privileged = parentIsRoot || caller.sudo;

  const orphan = forceOrphan || f.bool('no_parent');
  if (f.bool('no_parent') && !forceOrphan && !privileged) {
    throw new BadRequestError('root or sudo privileges required to create an orphan token with "no_parent"');
  }
  const customId = customTokenId(f);
  if (customId !== undefined && !parentIsRoot) {
    throw new BadRequestError('root privileges required to specify a token "id"');
  }
  const typeRaw = f.has('type') ? f.string('type') : 'service';
  const type: 'service' | 'batch' = typeRaw === 'batch' || typeRaw === 'default-batch' ? 'batch' : 'service';
  const numUses = f.int('num_uses');
  if (numUses < 0) throw new BadRequestError('invalid value for "num_uses": must not be negative');
  const period = f.int('period');
  if (period > 0 && !privileged) throw new BadRequestError('root or sudo privileges required to create a periodic token');
  const policies = childPolicies(parent, f, parentIsRoot, privileged);
  if (type === 'batch') {
    if (period > 0) throw new BadRequestError('invalid value for "period": batch tokens cannot be periodic');
    if (numUses > 0) throw new BadRequestError('invalid value for "num_uses": batch tokens cannot have a use limit');
    if (customId !== undefined) throw new BadRequestError('invalid value for "id": batch tokens cannot have a custom ID');
    if (policies.includes('root')) throw new BadRequestError('invalid value for "policies": batch tokens cannot be root tokens');
  }
  const cidrs = parseCidrs(f.has('token_bound_cidrs') ? 'token_bound_cidrs' : 'bound_cidrs', [...f.list('bound_cidrs'), ...f.list('token_bound_cidrs')]);

  const now = core.clock.now();
  const explicitMax = f.int('explicit_max_ttl');
  const requestedTtl = f.has('ttl') ? f.int('ttl') : f.int('lease');
  const warnings: string[] = [];
  let ttl: number;
  if (policies.includes('root') && requestedTtl === 0 && explicitMax === 0 && period === 0) {
    ttl = 0; // A root token with no TTL asked for never expires, as in Vault.
  } else if (period > 0) {
    // A periodic token lives for its period; one longer than the mount's maximum is capped.
    ttl = period;
    if (ttl > req.mount.maxLeaseTtl) {
      warnings.push(`period of ${ttl}s is higher than the maximum TTL of ${req.mount.maxLeaseTtl}s; capped`);
      ttl = req.mount.maxLeaseTtl;
    }
  } else {
    ttl = requestedTtl || req.mount.defaultLeaseTtl;
    if (ttl > req.mount.maxLeaseTtl) {
      warnings.push(`requested TTL of ${ttl}s is higher than the maximum of ${req.mount.maxLeaseTtl}s; capped`);
      ttl = req.mount.maxLeaseTtl;
    }
  }
  if (explicitMax > 0 && ttl > explicitMax) ttl = explicitMax;
  const meta = { ...(f.map<string>('metadata') ?? {}), ...(f.map<string>('meta') ?? {}) };
  const { id, entry } = await core.tokens.create({
    ...(orphan ? {} : { parent: parent.hash }),
    policies,
    path: req.path === 'create-orphan' ? 'auth/token/create-orphan' : 'auth/token/create',
    meta,
    displayName: sanitizeDisplayName(f.string('display_name')),
    numUses,
    creationTime: now,
    creationTtl: ttl,
    expireTime: ttl === 0 ? 0 : now + ttl * 1000,
    explicitMaxTtl: explicitMax,
    period,
    renewable: type === 'batch' ? false : f.bool('renewable'),
    type,
    boundCidrs: cidrs,
    entityId: parent.entityId,
    // A token belongs to the namespace it was created in, and works there and below.
    namespace: req.namespace.id,
  }, customId);
  return { auth: authOf(id, entry, now), ...(warnings.length ? { warnings } : {}) };
}
