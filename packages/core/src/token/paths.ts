import type { Core } from '../core';
import { BadRequestError, PermissionDeniedError } from '../errors';
import type { FieldData } from '../framework/fields';
import { definePath, type BackendRequest, type BackendResponse, type PathDefinition } from '../framework/types';
import { checkLoginRenewal } from './login-renewal';
import { authOf, createToken } from './token-create';
import { CREATE_FIELDS } from './token-fields';
import type { TokenEntry } from './token-entry';

function rfc3339(ms: number): string {
  return new Date(ms).toISOString();
}

/** The `data` of a token lookup, in Vault's shape. `id` is blank when looked up by accessor. */
async function lookupData(core: Core, entry: TokenEntry, id: string): Promise<Record<string, unknown>> {
  const now = core.clock.now();
  const ttl = entry.expireTime === 0 ? 0 : Math.max(0, Math.floor((entry.expireTime - now) / 1000));
  return {
    accessor: entry.accessor,
    creation_time: Math.floor(entry.creationTime / 1000),
    creation_ttl: entry.creationTtl,
    display_name: entry.displayName,
    entity_id: entry.entityId,
    expire_time: entry.expireTime === 0 ? null : rfc3339(entry.expireTime),
    explicit_max_ttl: entry.explicitMaxTtl,
    id,
    issue_time: rfc3339(entry.creationTime),
    meta: Object.keys(entry.meta).length > 0 ? entry.meta : null,
    num_uses: Math.max(0, entry.numUses),
    orphan: entry.parent === undefined,
    path: entry.path,
    policies: entry.policies,
    identity_policies: await core.identityPolicies(entry).catch(() => []),
    renewable: entry.renewable && entry.expireTime !== 0,
    ttl,
    type: entry.type,
    namespace_path: '',
    ...(entry.period > 0 ? { period: entry.period } : {}),
    ...(entry.boundCidrs.length > 0 ? { bound_cidrs: entry.boundCidrs } : {}),
    ...(entry.lastRenewalTime ? { last_renewal_time: Math.floor(entry.lastRenewalTime / 1000), last_renewal: rfc3339(entry.lastRenewalTime) } : {}),
  };
}

async function tokenArg(core: Core, f: FieldData): Promise<{ id: string; entry: TokenEntry }> {
  const id = f.string('token');
  if (id === '') throw new BadRequestError('missing required field "token"');
  const entry = await core.tokens.lookup(id);
  if (!entry) throw new BadRequestError('bad token: the token is invalid, expired or revoked');
  return { id, entry };
}

async function accessorArg(core: Core, f: FieldData): Promise<TokenEntry> {
  const accessor = f.string('accessor');
  if (accessor === '') throw new BadRequestError('missing required field "accessor"');
  const entry = await core.tokens.lookupByAccessor(accessor);
  if (!entry) throw new BadRequestError('invalid accessor: no valid token has this accessor');
  return entry;
}

async function selfArg(core: Core, req: BackendRequest): Promise<{ id: string; entry: TokenEntry }> {
  const id = req.clientToken ?? '';
  // Not a plain lookup: the request may have spent the token's last use, and still runs.
  const entry = id ? await core.tokens.lookupCaller(id, req.caller?.tokenHash) : null;
  if (!entry) throw new PermissionDeniedError();
  return { id, entry };
}

/**
 * Extends a token's life by `increment` (or its original TTL), never past its explicit max TTL
 * nor the mount's maximum counted from creation; a periodic token renews to its period.
 */
async function renew(core: Core, req: BackendRequest, id: string, entry: TokenEntry, increment: number): Promise<BackendResponse> {
  const now = core.clock.now();
  if (entry.type === 'batch') throw new BadRequestError('batch tokens cannot be renewed');
  if (entry.expireTime === 0) return { auth: authOf(id, entry, now) };
  if (!entry.renewable) throw new BadRequestError('invalid lease ID: the token is not renewable');
  // A login token's auth method rechecks the login and restates its role's current TTLs.
  const renewal = await checkLoginRenewal(core, entry, increment);
  const period = renewal?.period ?? entry.period;
  const warnings: string[] = [];
  let wanted = period > 0 ? period : increment || renewal?.ttl || entry.creationTtl;
  // A period longer than the mount's maximum is held to that maximum, as at creation.
  if (period > 0 && wanted > req.mount.maxLeaseTtl) {
    wanted = req.mount.maxLeaseTtl;
    warnings.push(`period of ${period}s is higher than the mount's maximum TTL of ${req.mount.maxLeaseTtl}s; capped`);
  }
  let expire = now + wanted * 1000;
  const caps: number[] = [];
  if (entry.explicitMaxTtl > 0) caps.push(entry.creationTime + entry.explicitMaxTtl * 1000);
  if (period === 0) caps.push(entry.creationTime + req.mount.maxLeaseTtl * 1000);
  const loginMaxTtl = renewal?.maxTtl ?? entry.login?.maxTtl ?? 0;
  if (period === 0 && loginMaxTtl > 0) caps.push(entry.creationTime + loginMaxTtl * 1000);
  for (const cap of caps) {
    if (expire > cap) {
      expire = cap;
      warnings.push('TTL of the renewal was capped by the token\'s maximum TTL');
    }
  }
  const renewed = { expireTime: Math.max(expire, now), lastRenewalTime: now, period };
  // Applied to the stored entry under its lock, so a use spent meanwhile is not written back.
  // A token revoked meanwhile stays revoked; the answer is then that of a renewal just before.
  const updated = (await core.tokens.update(entry.hash, (current) => ({ ...current, ...renewed }))) ?? { ...entry, ...renewed };
  return { auth: authOf(id, updated, now), ...(warnings.length ? { warnings: [...new Set(warnings)] } : {}) };
}

const TOKEN = { token: { type: 'string' as const } };
const ACCESSOR = { accessor: { type: 'string' as const } };
const INCREMENT = { increment: { type: 'duration' as const } };

/** The `auth/token/` backend's path table. */
export function tokenPaths(core: Core): PathDefinition[] {
  const lookupSelf = async (req: BackendRequest) => {
    const { id, entry } = await selfArg(core, req);
    return { data: await lookupData(core, entry, id) };
  };
  return [
    definePath({
      pattern: 'create',
      fields: CREATE_FIELDS,
      operations: { update: (req, f) => createToken(core, req, f, false) },
    }),
    definePath({
      pattern: 'create-orphan',
      fields: CREATE_FIELDS,
      operations: { update: (req, f) => createToken(core, req, f, true) },
    }),
    definePath({
      pattern: 'lookup',
      fields: TOKEN,
      operations: {
        update: async (_req, f) => {
          const { id, entry } = await tokenArg(core, f);
          return { data: await lookupData(core, entry, id) };
        },
      },
    }),
    definePath({
      pattern: 'lookup-self',
      fields: TOKEN,
      operations: { read: lookupSelf, update: lookupSelf },
    }),
    definePath({
      pattern: 'lookup-accessor',
      fields: ACCESSOR,
      operations: { update: async (_req, f) => ({ data: await lookupData(core, await accessorArg(core, f), '') }) },
    }),
    definePath({
      pattern: 'accessors/?',
      sudo: true,
      operations: { list: async (req) => ({ data: { keys: await core.tokens.accessors(req.namespace.id) } }) },
    }),
    definePath({
      pattern: 'renew',
      fields: { ...TOKEN, ...INCREMENT },
      operations: {
        update: async (req, f) => {
          const { id, entry } = await tokenArg(core, f);
          return renew(core, req, id, entry, f.int('increment'));
        },
      },
    }),
    definePath({
      pattern: 'renew-self',
      fields: { ...TOKEN, ...INCREMENT },
      operations: {
        update: async (req, f) => {
          const { id, entry } = await selfArg(core, req);
          return renew(core, req, id, entry, f.int('increment'));
        },
      },
    }),
    definePath({
      pattern: 'renew-accessor',
      fields: { ...ACCESSOR, ...INCREMENT },
      operations: {
        update: async (req, f) => {
          const entry = await accessorArg(core, f);
          const resp = await renew(core, req, '', entry, f.int('increment'));
          return { ...resp, ...(resp.auth ? { auth: { ...resp.auth, clientToken: '' } } : {}) };
        },
      },
    }),
    definePath({
      pattern: 'revoke',
      fields: TOKEN,
      operations: {
        update: async (_req, f) => {
          const { entry } = await tokenArg(core, f);
          await revoke(core, entry);
          return null;
        },
      },
    }),
    definePath({
      pattern: 'revoke-self',
      operations: {
        update: async (req) => {
          const { entry } = await selfArg(core, req);
          await revoke(core, entry);
          return null;
        },
      },
    }),
    definePath({
      pattern: 'revoke-accessor',
      fields: ACCESSOR,
      operations: {
        update: async (_req, f) => {
          await revoke(core, await accessorArg(core, f));
          return null;
        },
      },
    }),
    definePath({
      pattern: 'revoke-orphan',
      fields: TOKEN,
      sudo: true,
      operations: {
        update: async (_req, f) => {
          const { entry } = await tokenArg(core, f);
          if (entry.type === 'batch') throw new BadRequestError('batch tokens cannot be revoked');
          await core.tokens.revokeOrphan(entry.hash);
          return null;
        },
      },
    }),
  ];
}

async function revoke(core: Core, entry: TokenEntry): Promise<void> {
  if (entry.type === 'batch') throw new BadRequestError('batch tokens cannot be revoked; they expire with their TTL or their parent');
  await core.tokens.revokeTree(entry.hash);
}
