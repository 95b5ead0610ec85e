import { definePath, type Core, type PathDefinition } from '@strongroom/core';
import { dynamicFilter, parsePathsFilter } from './paths-filter';
import { mountsOf } from './performance-core';
import type { ReplicationRole } from './replication-role';

/** `sys/replication/performance/{primary,secondary}/...` beyond what both kinds share: paths filters and dynamic filters. */
export function performancePaths(role: ReplicationRole, core: Core): PathDefinition[] {
  return [
    definePath({
      pattern: 'replication/performance/primary/paths-filter/(?<id>[^/]+)',
      restricted: true,
      fields: { id: { type: 'string' }, mode: { type: 'string' }, paths: { type: 'comma-list' } },
      operations: {
        read: async (_req, f) => ({ data: { ...role.pathsFilter(f.string('id')) } }),
        update: async (_req, f) => {
          const { mounts, namespaces } = mountsOf(core);
          const { filter, warnings } = parsePathsFilter(f.get('mode'), f.has('paths') ? f.list('paths') : undefined, mounts, namespaces);
          await role.setPathsFilter(f.string('id'), filter);
          return warnings.length > 0 ? { warnings } : null;
        },
        delete: async (_req, f) => {
          await role.deletePathsFilter(f.string('id'));
          return null;
        },
      },
    }),
    definePath({
      pattern: 'replication/performance/primary/dynamic-filter/(?<id>[^/]+)',
      restricted: true,
      fields: { id: { type: 'string' } },
      operations: {
        read: async (_req, f) => {
          const { mounts, namespaces } = mountsOf(core);
          return { data: dynamicFilter(role.filterOf(f.string('id')), mounts, namespaces) };
        },
      },
    }),
    definePath({
      pattern: 'replication/performance/secondary/dynamic-filter/(?<id>[^/]+)',
      restricted: true,
      fields: { id: { type: 'string' } },
      operations: {
        read: async () => {
          const { mounts, namespaces } = mountsOf(core);
          return { data: dynamicFilter(role.secondaryFilter(), mounts, namespaces) };
        },
      },
    }),
  ];
}
