import { followLogical, type CommitFeed } from '@strongroom/cluster';
import type { Core, Logger } from '@strongroom/core';
import { loadMetadata, loadVersionData } from '@strongroom/engine-kv';
import { coreMounts, secretSync, type SecretReader, type SyncFeed, type SyncObserver } from '@strongroom/sync';

/** Reads a KV v2 secret's current version through the KV engine's storage, for the sync queue. */
export function kvSecretReader(core: Core): SecretReader {
  return {
    async read(mount, name) {
      const entry = core.namespaces.byId(mount.namespaceId)?.mounts.all().find((e) => e.accessor === mount.accessor);
      if (!entry) return { live: false };
      const storage = core.mountStorage('secret', entry);
      const meta = await loadMetadata(storage, name);
      const current = meta?.versions[String(meta.currentVersion)];
      if (!meta || !current || current.destroyed || (current.deletionTime !== null && current.deletionTime <= core.clock.now())) return { live: false };
      const data = await loadVersionData(storage, name, meta.currentVersion);
      return data ? { live: true, version: meta.currentVersion, createdTime: current.createdTime, data } : { live: false };
    },
  };
}

/** The commit feed's logical view, read by this node's core. */
export function syncFeed(feed: CommitFeed, core: Core): SyncFeed {
  return { applied: () => feed.applied, follow: (from, signal) => followLogical(feed, from, core, signal) };
}

/** Secret sync on this server: its paths, and its queue following this node's commit feed while active. */
export function serverSecretSync(core: Core, feed: CommitFeed, logger: Logger, observer?: SyncObserver) {
  return secretSync({
    storage: core.barrier, mounts: coreMounts(core), reader: kvSecretReader(core), feed: syncFeed(feed, core), clock: core.clock, logger,
    ...(observer ? { observer } : {}),
  });
}
