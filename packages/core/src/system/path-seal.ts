import type { Core } from '../core';
import { VERSION } from '../core';
import { BadRequestError } from '../errors';
import type { FieldData } from '../framework/fields';
import { definePath, type PathDefinition } from '../framework/types';

const BUILD_DATE = '2026-11-01T00:00:00Z';

async function sealStatusBody(core: Core) {
  const s = await core.seal.status();
  return {
    type: s.type, initialized: s.initialized, sealed: core.sealed, t: s.t, n: s.n, progress: s.progress, nonce: s.nonce,
    version: VERSION, build_date: BUILD_DATE, migration: s.migration, recovery_seal: s.recoverySeal, storage_type: core.storageType,
    ...(core.sealed ? {} : { cluster_name: core.clusterName, cluster_id: core.clusterId }),
  };
}

/** Accepts an unseal key as hex (as `keys` prints it) or base64 (as `keys_base64` does). */
export function decodeKey(raw: string): Buffer {
  const text = raw.trim();
  if (/^[0-9a-fA-F]+$/.test(text) && text.length % 2 === 0) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return Buffer.from(text, 'base64');
  throw new BadRequestError('invalid value for "key": must be a hex or base64 encoded unseal key share');
}

function statusCode(fields: FieldData, name: string, fallback: number): number {
  if (!fields.has(name)) return fallback;
  const code = fields.int(name);
  if (code < 100 || code > 599) throw new BadRequestError(`invalid value for "${name}": must be an HTTP status code from 100 to 599`);
  return code;
}

export function sealPaths(core: Core): PathDefinition[] {
  return [
    definePath({
      pattern: 'init',
      restricted: true,
      unauthenticated: true,
      fields: {
        // Required under Shamir only: with an auto seal Vault ignores them and makes recovery keys.
        secret_shares: { type: 'int' },
        secret_threshold: { type: 'int' },
        pgp_keys: { type: 'comma-list' },
        root_token_pgp_key: { type: 'string' },
        recovery_shares: { type: 'int' },
        recovery_threshold: { type: 'int' },
        recovery_pgp_keys: { type: 'comma-list' },
      },
      operations: {
        read: async () => ({ raw: { status: 200, body: { initialized: await core.seal.initialized() } } }),
        update: async (_req, f) => {
          if (f.list('pgp_keys').length > 0 || f.string('root_token_pgp_key') !== '') {
            throw new BadRequestError('invalid value for "pgp_keys": PGP-encrypted key shares are not supported');
          }
          if (f.list('recovery_pgp_keys').length > 0) {
            throw new BadRequestError('invalid value for "recovery_pgp_keys": PGP-encrypted recovery keys are not supported');
          }
          const auto = core.seal.configuredAutoSeal !== null;
          if (!auto) {
            for (const name of ['secret_shares', 'secret_threshold']) if (!f.has(name)) throw new BadRequestError(`missing required field "${name}"`);
          }
          const recovery = {
            ...(f.has('recovery_shares') ? { shares: f.int('recovery_shares') } : {}),
            ...(f.has('recovery_threshold') ? { threshold: f.int('recovery_threshold') } : {}),
          };
          const { keys, recoveryKeys, rootToken } = await core.initialize(
            f.has('secret_shares') ? f.int('secret_shares') : 1, f.has('secret_threshold') ? f.int('secret_threshold') : 1, undefined, recovery,
          );
          return {
            raw: {
              status: 200,
              body: {
                keys: keys.map((k) => k.toString('hex')),
                keys_base64: keys.map((k) => k.toString('base64')),
                ...(auto ? {
                  recovery_keys: recoveryKeys.map((k) => k.toString('hex')),
                  recovery_keys_base64: recoveryKeys.map((k) => k.toString('base64')),
                } : {}),
                root_token: rootToken,
              },
            },
          };
        },
      },
    }),
    definePath({
      pattern: 'seal-status',
      unauthenticated: true,
      operations: { read: async () => ({ raw: { status: 200, body: await sealStatusBody(core) } }) },
    }),
    definePath({
      pattern: 'unseal',
      restricted: true,
      unauthenticated: true,
      fields: { key: { type: 'string' }, reset: { type: 'bool' }, migrate: { type: 'bool' } },
      operations: {
        update: async (_req, f) => {
          if (f.bool('reset')) core.seal.resetProgress();
          else {
            if (!f.has('key') || f.string('key') === '') throw new BadRequestError('missing required field "key" (or "reset": true)');
            if (!(await core.seal.initialized())) throw new BadRequestError('server is not initialized');
            await core.unseal(decodeKey(f.string('key')), f.bool('migrate'));
          }
          return { raw: { status: 200, body: await sealStatusBody(core) } };
        },
      },
    }),
    definePath({
      pattern: 'seal',
      restricted: true,
      sudo: true,
      operations: {
        update: async () => {
          core.seal.holdSealed();
          await core.sealNow();
          return null;
        },
      },
    }),
    definePath({
      pattern: 'health',
      restricted: true,
      unauthenticated: true,
      fields: {
        standbyok: { type: 'bool' }, perfstandbyok: { type: 'bool' }, activecode: { type: 'int' }, standbycode: { type: 'int' },
        sealedcode: { type: 'int' }, uninitcode: { type: 'int' }, drsecondarycode: { type: 'int' },
        performancestandbycode: { type: 'int' }, removedcode: { type: 'int' },
      },
      operations: {
        read: async (_req, f) => {
          const initialized = await core.seal.initialized();
          const sealed = core.sealed;
          const standby = core.standby;
          const drMode = core.replication?.drMode() ?? 'disabled';
          let status: number;
          if (!initialized) status = statusCode(f, 'uninitcode', 501);
          else if (sealed) status = statusCode(f, 'sealedcode', 503);
          else if (drMode === 'secondary') status = statusCode(f, 'drsecondarycode', 472);
          else if (standby) status = f.bool('standbyok') ? statusCode(f, 'activecode', 200) : statusCode(f, 'standbycode', 429);
          else status = statusCode(f, 'activecode', 200);
          return {
            raw: {
              status,
              body: {
                initialized, sealed, standby, performance_standby: false,
                replication_performance_mode: core.replication?.performanceMode() ?? 'disabled', replication_dr_mode: drMode,
                server_time_utc: Math.floor(core.clock.now() / 1000), version: VERSION, enterprise: false,
                ...(sealed ? {} : { cluster_name: core.clusterName, cluster_id: core.clusterId }),
              },
            },
          };
        },
      },
    }),
    definePath({
      pattern: 'leader',
      unauthenticated: true,
      operations: {
        read: async () => {
          const leader = core.ha?.leader() ?? null;
          return {
            raw: {
              status: 200,
              body: {
                ha_enabled: core.ha !== null, is_self: core.active,
                active_time: core.activeSince ? new Date(core.activeSince).toISOString() : '0001-01-01T00:00:00Z',
                leader_address: core.ha ? leader?.apiAddress ?? '' : '', leader_cluster_address: core.ha ? leader?.clusterAddress ?? '' : '',
                performance_standby: false, performance_standby_last_remote_wal: 0,
              },
            },
          };
        },
      },
    }),
    definePath({
      pattern: 'rotate',
      restricted: true,
      sudo: true,
      operations: {
        update: async () => {
          await core.rotateKeyring();
          return null;
        },
      },
    }),
    definePath({
      pattern: 'key-status',
      restricted: true,
      operations: {
        read: async () => {
          const term = core.keyringStatus();
          return { data: { term: term.term, install_time: term.installTime, encryptions: 0 }, copyDataToTop: true };
        },
      },
    }),
  ];
}
