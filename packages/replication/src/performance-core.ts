import type { Core, CoreReply, ForwardedWrite, KeyScope } from '@strongroom/core';
import type { FilterMount } from './paths-filter';

export type { ForwardedWrite, KeyScope };

/** What performance replication asks of the core beyond what DR does. */
export interface PerformanceCore {
  replicationScope(key: string): KeyScope;
  sharedChanged(keys: readonly string[]): Promise<void>;
  handleForwarded(request: ForwardedWrite): Promise<CoreReply>;
}

/** The core's performance side. */
export function performanceCore(core: Core): PerformanceCore {
  return {
    replicationScope: (key) => core.replicationScope(key),
    sharedChanged: (keys) => core.sharedChanged(keys),
    handleForwarded: (request) => core.handleForwarded(request),
  };
}

/** Every namespace path ('' for the root) and every mount, as the core holds them now. */
export function mountsOf(core: Core): { mounts: FilterMount[]; namespaces: string[] } {
  const mounts: FilterMount[] = [];
  const namespaces: string[] = [];
  for (const view of core.namespaces.all()) {
    namespaces.push(view.path);
    for (const m of view.mounts.all()) mounts.push({ uuid: m.uuid, path: `${view.path}${m.path}`, namespace: view.path });
    for (const m of view.auths.all()) mounts.push({ uuid: m.uuid, path: `${view.path}auth/${m.path}`, namespace: view.path });
  }
  return { mounts, namespaces };
}

/** Least time between two rereads of the mount tables for a UUID they did not have. */
const REINDEX_MS = 250;

/** Finds mounts by UUID; rereads the core's tables when asked for one it did not know (a new mount). */
export class MountIndex {
  private byUuid = new Map<string, FilterMount>();
  private readAt = -Infinity;

  constructor(private readonly read: () => FilterMount[], private readonly now: () => number) {}

  lookup(uuid: string): FilterMount | undefined {
    const known = this.byUuid.get(uuid);
    if (known) return known;
    if (this.now() - this.readAt < REINDEX_MS) return undefined;
    this.readAt = this.now();
    this.byUuid = new Map(this.read().map((m) => [m.uuid, m]));
    return this.byUuid.get(uuid);
  }
}
