import { definePath, NotFoundError, type PathDefinition } from '@strongroom/core';
import { buildConfig, CONFIG_FIELDS, publicView, requireName } from './config';
import type { SnapshotScheduler } from './scheduler';
import { statusView } from './status';

/** `sys/storage/raft/snapshot-auto/*`: configurations (sudo) and their status. */
export function snapshotAutoPaths(scheduler: SnapshotScheduler): PathDefinition[] {
  return [
    definePath({
      pattern: 'storage/raft/snapshot-auto/config/?',
      restricted: true,
      sudo: true,
      operations: { list: async () => ({ data: { keys: (await scheduler.names()).sort() } }) },
    }),
    definePath({
      pattern: 'storage/raft/snapshot-auto/config/(?<name>[^/]+)',
      restricted: true,
      sudo: true,
      fields: CONFIG_FIELDS,
      operations: {
        read: async (_req, f) => {
          const config = await scheduler.config(requireName(f.string('name')));
          return config ? { data: publicView(config) } : null;
        },
        update: async (_req, f) => {
          const name = requireName(f.string('name'));
          await scheduler.save(name, (existing) => buildConfig(name, f, existing));
          return null;
        },
        delete: async (_req, f) => {
          await scheduler.remove(requireName(f.string('name')));
          return null;
        },
      },
    }),
    definePath({
      pattern: 'storage/raft/snapshot-auto/status/(?<name>[^/]+)',
      restricted: true,
      sudo: true,
      fields: { name: { type: 'string', required: true } },
      operations: {
        read: async (_req, f) => {
          const name = requireName(f.string('name'));
          const status = await scheduler.status(name);
          if (!status) throw new NotFoundError(`no automated snapshot configuration named "${name}"`);
          return { data: statusView(status) };
        },
      },
    }),
  ];
}
