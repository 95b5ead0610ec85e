import type { CommitFeed } from '@strongroom/cluster';
import type { Core } from '@strongroom/core';
import type { ClusterReplication } from '@strongroom/replication';
import { Counter, Gauge, type Registry } from 'prom-client';

type Status = Record<string, unknown>;
type Kind = 'dr' | 'performance';
const KINDS: readonly Kind[] = ['dr', 'performance'];

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/**
 * Replication families, read from the roles' status when scraped. A scrape collects every family
 * at once (prom-client starts each family's collect before awaiting any), so the first asks and
 * the others share its answer while it is on its way; the next scrape asks again.
 */
export function replicationMetrics(registers: Registry[], parts: { core: Core; feed: CommitFeed; replication: ClusterReplication }): void {
  const { core, feed, replication } = parts;
  let pending: Promise<{ dr: Status; performance: Status } | null> | null = null;
  const status = () => {
    // A sealed node has no roles to read; a failed read shows as no replication, not a failed scrape.
    pending ??= (core.sealed ? Promise.resolve(null) : replication.status().catch(() => null)).finally(() => {
      pending = null;
    });
    return pending;
  };
  /** When each secondary (by kind and id) was last seen caught up with the primary's last WAL. */
  const caughtUpAt = new Map<string, number>();

  const primaryWal = (s: { dr: Status; performance: Status } | null, kind: Kind) => (s?.[kind]['mode'] === 'primary' ? num(s[kind]['last_wal']) : 0);
  new Gauge({
    name: 'vault_replication_wal_last_wal', help: 'Index of the newest WAL entry on this primary', registers,
    async collect() {
      const s = await status();
      this.set(Math.max(primaryWal(s, 'dr'), primaryWal(s, 'performance')));
    },
  });
  new Gauge({
    name: 'vault_replication_wal_last_dr_wal', help: 'Index of the newest WAL entry on this DR primary', registers,
    async collect() {
      this.set(primaryWal(await status(), 'dr'));
    },
  });
  new Gauge({
    name: 'vault_replication_wal_last_performance_wal', help: 'Index of the newest WAL entry on this performance primary', registers,
    async collect() {
      this.set(primaryWal(await status(), 'performance'));
    },
  });
  new Gauge({
    name: 'vault_replication_fsm_last_remote_wal', help: 'On a secondary: the primary\'s last WAL index this cluster has applied', registers,
    async collect() {
      const s = await status();
      let last = 0;
      for (const kind of KINDS) if (s?.[kind]['mode'] === 'secondary') last = Math.max(last, num(s[kind]['last_remote_wal']));
      this.set(last);
    },
  });
  new Gauge({
    name: 'strongroom_replication_secondary_last_remote_wal', help: 'On a primary: the last WAL index each secondary reported applying',
    labelNames: ['kind', 'secondary_id'], registers,
    async collect() {
      this.reset();
      const s = await status();
      for (const kind of KINDS) {
        for (const sec of secondariesOf(s, kind)) this.labels(kind, sec.id).set(sec.lastRemoteWal);
      }
    },
  });
  new Gauge({
    name: 'strongroom_replication_secondary_lag_seconds',
    help: 'On a primary: seconds since each secondary was last seen caught up with the primary\'s last WAL (0 while it is)',
    labelNames: ['kind', 'secondary_id'], registers,
    async collect() {
      this.reset();
      const s = await status();
      const now = Date.now();
      const seen = new Set<string>();
      for (const kind of KINDS) {
        const last = primaryWal(s, kind);
        for (const sec of secondariesOf(s, kind)) {
          const key = `${kind}\u0000${sec.id}`;
          seen.add(key);
          if (sec.lastRemoteWal >= last || !caughtUpAt.has(key)) caughtUpAt.set(key, now);
          this.labels(kind, sec.id).set(sec.lastRemoteWal >= last ? 0 : (now - (caughtUpAt.get(key) ?? now)) / 1000);
        }
      }
      for (const key of caughtUpAt.keys()) if (!seen.has(key)) caughtUpAt.delete(key);
    },
  });
  new Gauge({
    name: 'strongroom_replication_wal_window_entries', help: 'Committed changes this node retains for secondaries (the WAL window)', registers,
    collect() {
      this.set(feed.window().entries);
    },
  });
  new Gauge({
    name: 'strongroom_replication_wal_window_bytes', help: 'Bytes of the committed changes this node retains for secondaries', registers,
    collect() {
      this.set(feed.window().bytes);
    },
  });
  new Counter({
    name: 'strongroom_replication_merkle_sync_runs', help: 'Times this secondary left streaming WALs for a Merkle sync', labelNames: ['kind'], registers,
    async collect() {
      const s = await status();
      this.reset();
      for (const kind of KINDS) if (s?.[kind]['mode'] === 'secondary') this.labels(kind).inc(num(s[kind]['merkle_sync_count']));
    },
  });
}

function secondariesOf(s: { dr: Status; performance: Status } | null, kind: Kind): Array<{ id: string; lastRemoteWal: number }> {
  const list = s?.[kind]['mode'] === 'primary' ? s[kind]['secondaries'] : undefined;
  if (!Array.isArray(list)) return [];
  return list.flatMap((r: Status) => (typeof r['node_id'] === 'string' ? [{ id: r['node_id'], lastRemoteWal: num(r['last_remote_wal']) }] : []));
}
