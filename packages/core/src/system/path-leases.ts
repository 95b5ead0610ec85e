import type { Core } from '../core';
import { BadRequestError } from '../errors';
import type { LeaseEntry } from '../expiration/lease-entry';
import type { FieldData } from '../framework/fields';
import { definePath, type PathDefinition } from '../framework/types';

function iso(ms: number): string | null {
  return ms ? new Date(ms).toISOString() : null;
}

function leaseData(core: Core, e: LeaseEntry) {
  return {
    id: e.leaseId,
    issue_time: iso(e.issueTime),
    expire_time: iso(e.expireTime),
    last_renewal: iso(e.lastRenewalTime),
    renewable: e.renewable,
    ttl: Math.max(0, Math.round((e.expireTime - core.clock.now()) / 1000)),
  };
}

/** The lease ID from the path (`.../renew/<id>`) or the body (`lease_id`, or legacy `url_lease_id`). */
function leaseIdOf(f: FieldData): string {
  const id = f.string('url_lease_id') || f.string('lease_id');
  if (id === '') throw new BadRequestError('missing required field "lease_id"');
  return id;
}

const LEASE_FIELDS = {
  lease_id: { type: 'string' as const },
  url_lease_id: { type: 'string' as const },
};

/** `sys/leases/*` (and the older `sys/renew`, `sys/revoke` spellings clients still send). */
export function leasePaths(core: Core): PathDefinition[] {
  const renew = definePath({
    pattern: '(?:leases/renew|renew)(?:/(?<url_lease_id>.+))?',
    fields: { ...LEASE_FIELDS, increment: { type: 'duration' } },
    operations: {
      update: async (_req, f) => {
        const { entry, warnings } = await core.expiration.renew(leaseIdOf(f), f.int('increment'));
        // Vault answers a renewal with the lease in the envelope, not in `data`.
        return { raw: { status: 200, body: {
          request_id: _req.id, lease_id: entry.leaseId, renewable: entry.renewable,
          lease_duration: Math.max(0, Math.round((entry.expireTime - core.clock.now()) / 1000)),
          data: {}, wrap_info: null, warnings: warnings.length ? warnings : null, auth: null,
        } } };
      },
    },
  });
  const revoke = definePath({
    pattern: '(?:leases/revoke|revoke)(?:/(?<url_lease_id>.+))?',
    fields: { ...LEASE_FIELDS, sync: { type: 'bool', default: true } },
    operations: {
      update: async (_req, f) => {
        await core.expiration.revoke(leaseIdOf(f)).catch((err: unknown) => {
          throw new BadRequestError(`failed to revoke lease: ${(err as Error).message}`);
        });
        return null;
      },
    },
  });
  const byPrefix = (name: string, force: boolean) => definePath({
    pattern: `(?:leases/${name}|${name})/(?<prefix>.+)`,
    fields: { prefix: { type: 'string' }, sync: { type: 'bool', default: true } },
    sudo: true,
    operations: {
      update: async (_req, f) => {
        await core.expiration.revokePrefix(f.string('prefix'), { force });
        return null;
      },
    },
  });
  return [
    definePath({
      pattern: 'leases/lookup',
      fields: { lease_id: { type: 'string', required: true } },
      operations: { update: async (_req, f) => ({ data: leaseData(core, await core.expiration.lookup(f.string('lease_id'))) }) },
    }),
    definePath({
      pattern: 'leases/lookup/?(?<prefix>.*)',
      fields: { prefix: { type: 'string' } },
      sudo: true,
      operations: {
        list: async (_req, f) => {
          const prefix = f.string('prefix');
          return { data: { keys: await core.expiration.list(prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`) } };
        },
      },
    }),
    renew,
    revoke,
    byPrefix('revoke-prefix', false),
    byPrefix('revoke-force', true),
    definePath({
      pattern: 'leases/tidy',
      operations: {
        update: async () => {
          const count = await core.expiration.tidy(async (hash) => (await core.tokens.lookupByHash(hash)) !== null);
          return { warnings: [`tidy revoked the leases of ${count} revoked or expired tokens`], data: null };
        },
      },
    }),
  ];
}
