import { BadRequestError, definePath, parseDurationSeconds, type FieldSchemas, type PathDefinition } from '@strongroom/core';
import type { ReplicationRole } from './replication-role';

/** Paths a DR secondary answers on any node, without a token: status, and what the DR operation token authorizes. */
export const DR_SECONDARY_PATHS = [
  'sys/replication/status',
  'sys/replication/dr/status',
  'sys/replication/performance/status',
  'sys/replication/dr/secondary/promote',
  'sys/replication/dr/secondary/disable',
  'sys/replication/dr/secondary/update-primary',
  'sys/replication/dr/secondary/operation-token/delete',
  'sys/replication/dr/secondary/reindex',
  'sys/replication/dr/secondary/merkle-check',
  'sys/replication/dr/secondary/generate-operation-token/attempt',
  'sys/replication/dr/secondary/generate-operation-token/update',
];

const DEFAULT_TOKEN_TTL_SECONDS = 30 * 60;

function requireString(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') throw new BadRequestError(`missing required field "${field}"`);
  return value;
}

/** `sys/replication/status` and each kind's status. */
export function statusPaths(dr: ReplicationRole, performance: ReplicationRole): PathDefinition[] {
  const status = (read: () => Promise<Record<string, unknown>>) => ({
    read: async () => ({ data: await read() }),
  });
  return [
    definePath({
      pattern: 'replication/status',
      unauthenticated: true,
      operations: status(async () => ({ dr: await dr.status(), performance: await performance.status() })),
    }),
    definePath({ pattern: 'replication/dr/status', unauthenticated: true, operations: status(() => dr.status()) }),
    definePath({ pattern: 'replication/performance/status', unauthenticated: true, operations: status(() => performance.status()) }),
  ];
}

/**
 * `sys/replication/<kind>/primary/*` and `secondary/*`, the same for both kinds but that a DR
 * secondary's promote, disable and update-primary take a DR operation token instead of a
 * client token (its core serves no tokens), and that the Merkle and operation-token
 * endpoints are DR's.
 */
export function rolePaths(role: ReplicationRole): PathDefinition[] {
  const dr = role;
  const kind = role.kind;
  const isDr = kind === 'dr';
  // A performance secondary's core serves and checks tokens: its role changes are restricted like the primary's.
  const secondaryAccess = isDr ? { unauthenticated: true } : { restricted: true };
  const operationToken: FieldSchemas = isDr ? { dr_operation_token: { type: 'string' } } : {};
  const paths = [
    definePath({
      pattern: `replication/${kind}/primary/enable`,
      restricted: true,
      fields: { primary_cluster_addr: { type: 'string', default: '' } },
      operations: {
        update: async (_req, f) => ({ warnings: await dr.enablePrimary({ primaryClusterAddr: f.string('primary_cluster_addr') }) }),
      },
    }),
    definePath({
      pattern: `replication/${kind}/primary/demote`,
      restricted: true,
      operations: { update: async () => ({ warnings: await dr.demote() }) },
    }),
    definePath({
      pattern: `replication/${kind}/primary/disable`,
      restricted: true,
      operations: { update: async () => ({ warnings: await dr.disablePrimary() }) },
    }),
    definePath({
      pattern: `replication/${kind}/primary/secondary-token`,
      restricted: true,
      sudo: true,
      fields: { id: { type: 'string' }, ttl: { type: 'string', default: '30m' }, secondary_public_key: { type: 'string', default: '' } },
      operations: {
        update: async (_req, f) => {
          const id = requireString(f.get('id'), 'id');
          const ttlText = f.get('ttl');
          let ttl = DEFAULT_TOKEN_TTL_SECONDS;
          if (ttlText !== undefined && ttlText !== '') {
            const parsed = parseDurationSeconds(String(ttlText));
            if (parsed === null || parsed <= 0) throw new BadRequestError('invalid value for "ttl": expected a positive duration such as "30m"');
            ttl = parsed;
          }
          const reply = await dr.secondaryToken({ id, ttlSeconds: ttl, publicKey: f.string('secondary_public_key') });
          return { raw: { status: 200, body: reply } };
        },
      },
    }),
    definePath({
      pattern: `replication/${kind}/primary/revoke-secondary`,
      restricted: true,
      fields: { id: { type: 'string' } },
      operations: {
        update: async (_req, f) => {
          await dr.revokeSecondary(requireString(f.get('id'), 'id'));
          return null;
        },
      },
    }),
    definePath({
      pattern: `replication/${kind}/secondary/generate-public-key`,
      restricted: true,
      operations: { update: async () => ({ data: { secondary_public_key: await dr.generatePublicKey() } }) },
    }),
    definePath({
      pattern: `replication/${kind}/secondary/enable`,
      restricted: true,
      fields: {
        token: { type: 'string' }, primary_api_addr: { type: 'string', default: '' }, ca_file: { type: 'string', default: '' },
        ca_path: { type: 'string', default: '' },
      },
      operations: {
        update: async (_req, f) => ({
          warnings: await dr.enableSecondary({
            token: requireString(f.get('token'), 'token'), primaryApiAddr: f.string('primary_api_addr'),
            caFile: f.string('ca_file'), caPath: f.string('ca_path'),
          }),
        }),
      },
    }),
    definePath({
      pattern: `replication/${kind}/secondary/promote`,
      fields: { ...operationToken, primary_cluster_addr: { type: 'string', default: '' }, force: { type: 'bool', default: false } },
      ...secondaryAccess,
      operations: {
        update: async (_req, f) => ({
          warnings: await dr.promote({
            operationToken: f.get('dr_operation_token'), primaryClusterAddr: f.string('primary_cluster_addr'), force: f.bool('force'),
          }),
        }),
      },
    }),
    definePath({
      pattern: `replication/${kind}/secondary/disable`,
      fields: { ...operationToken },
      ...secondaryAccess,
      operations: { update: async (_req, f) => ({ warnings: await dr.disableSecondary(f.get('dr_operation_token')) }) },
    }),
    definePath({
      pattern: `replication/${kind}/secondary/update-primary`,
      ...secondaryAccess,
      fields: {
        ...operationToken, token: { type: 'string' }, primary_api_addr: { type: 'string', default: '' },
        ca_file: { type: 'string', default: '' }, ca_path: { type: 'string', default: '' }, update_primary_addrs: { type: 'comma-list' },
      },
      operations: {
        update: async (_req, f) => {
          const token = f.get('token');
          if (token !== undefined && typeof token !== 'string') throw new BadRequestError('invalid value for "token": expected a string');
          const addrs = f.has('update_primary_addrs') ? f.list('update_primary_addrs') : undefined;
          return {
            warnings: await dr.updatePrimary({
              operationToken: f.get('dr_operation_token'), ...(token !== undefined ? { token } : {}), ...(addrs ? { addrs } : {}),
              primaryApiAddr: f.string('primary_api_addr'), caFile: f.string('ca_file'), caPath: f.string('ca_path'),
            }),
          };
        },
      },
    }),
  ];
  if (!isDr) return paths;
  return [
    ...paths,
    definePath({
      pattern: `replication/${kind}/secondary/operation-token/delete`,
      unauthenticated: true,
      fields: { dr_operation_token: { type: 'string' } },
      operations: {
        update: async (_req, f) => {
          await dr.deleteOperationToken(f.get('dr_operation_token'));
          return null;
        },
      },
    }),
    definePath({
      pattern: `replication/${kind}/secondary/reindex`,
      unauthenticated: true,
      fields: {
        dr_operation_token: { type: 'string' }, diff: { type: 'bool', default: false }, force: { type: 'bool', default: false },
        skip_flush: { type: 'bool', default: false },
      },
      operations: {
        update: async (_req, f) => ({
          data: await dr.reindex(f.get('dr_operation_token'), { diff: f.bool('diff'), force: f.bool('force'), skipFlush: f.bool('skip_flush') }),
        }),
      },
    }),
    definePath({
      pattern: `replication/${kind}/secondary/merkle-check`,
      unauthenticated: true,
      fields: { dr_operation_token: { type: 'string' } },
      operations: { update: async (_req, f) => ({ data: await dr.merkleCheck(f.get('dr_operation_token')) }) },
    }),
  ];
}
