import { allows, type CapabilityMap, type Need } from '../api/capabilities';
import { api, ApiError, errorText, request } from '../api/client';

/** One card's latest answer: its data, or the API's words for why there is none. */
export type Section<T> = { ok: true; data: T } | { ok: false; error: string };

export interface SealStatus {
  type: string;
  initialized: boolean;
  sealed: boolean;
  t: number;
  n: number;
  progress: number;
  version: string;
  storage_type?: string;
  cluster_name?: string;
  cluster_id?: string;
}

export interface LeaderStatus {
  ha_enabled: boolean;
  is_self: boolean;
  active_time?: string;
  leader_address: string;
  leader_cluster_address: string;
  performance_standby?: boolean;
}

export interface AutopilotServer {
  id: string;
  name: string;
  address: string;
  node_status: string;
  last_contact: string;
  last_term: number;
  last_index: number;
  healthy: boolean;
  stable_since?: string;
  status: string;
  version?: string;
  node_type?: string;
}

export interface AutopilotState {
  healthy: boolean;
  failure_tolerance: number;
  leader: string;
  voters: string[];
  non_voters?: string[];
  servers: Record<string, AutopilotServer>;
}

/** One peer cluster as a primary lists its secondaries, or a secondary its primaries. */
export interface ReplicationPeer {
  node_id?: string;
  api_address?: string;
  cluster_address?: string;
  connection_status?: string;
  last_heartbeat?: string;
  last_heartbeat_duration_ms?: number;
  /** A primary's view of a secondary: the WAL index the secondary last said it applied. */
  last_remote_wal?: number;
}

export interface ReplicationStatus {
  mode: 'disabled' | 'primary' | 'secondary' | string;
  state?: string;
  cluster_id?: string;
  last_wal?: number;
  last_remote_wal?: number;
  merkle_root?: string;
  connection_state?: string;
  secondary_id?: string;
  primary_cluster_addr?: string;
  known_secondaries?: string[];
  secondaries?: ReplicationPeer[];
  primaries?: ReplicationPeer[];
}

export interface SnapshotStatus {
  consecutive_errors: number;
  last_snapshot_start: string;
  last_snapshot_end: string;
  last_snapshot_error: string;
  last_snapshot_size: number;
  last_snapshot_url?: string;
  next_snapshot_start: string;
}

export interface SnapshotRow {
  name: string;
  status: Section<SnapshotStatus>;
}

export interface SyncDestination {
  type: string;
  name: string;
  /** Associations by their latest sync status (`SYNCED`, `PENDING`, ...). */
  associations: Section<Record<string, number>>;
}

export interface DashboardData {
  seal: Section<SealStatus>;
  leader: Section<LeaderStatus>;
  /** Absent when the token may not read it: the card is hidden, not an error. */
  autopilot?: Section<AutopilotState>;
  dr: Section<ReplicationStatus>;
  performance: Section<ReplicationStatus>;
  snapshots?: Section<SnapshotRow[]>;
  sync?: Section<SyncDestination[]>;
  at: number;
}

const AUTOPILOT = 'sys/storage/raft/autopilot/state';
const SNAPSHOT_CONFIGS = 'sys/storage/raft/snapshot-auto/config';
const SYNC_DESTINATIONS = 'sys/sync/destinations';

/**
 * What each optional card needs. Seal, leader and replication status are readable without a
 * token, so those cards always show. Listing snapshot configurations also takes sudo.
 */
export const CARD_NEEDS = {
  autopilot: [{ path: AUTOPILOT, any: ['read'] }],
  snapshots: [{ path: SNAPSHOT_CONFIGS, any: ['list'] }, { path: SNAPSHOT_CONFIGS, any: ['sudo'] }],
  sync: [{ path: SYNC_DESTINATIONS, any: ['list'] }],
} satisfies Record<string, Need[]>;

export const CARD_PATHS = [...new Set(Object.values(CARD_NEEDS).flat().map((n) => n.path))];

async function section<T>(load: () => Promise<T>): Promise<Section<T>> {
  try {
    return { ok: true, data: await load() };
  } catch (err) {
    return { ok: false, error: errorText(err) };
  }
}

/** `sys/seal-status` and `sys/leader` answer bare, without Vault's `data` envelope. */
async function bare<T>(path: string): Promise<T> {
  const res = await request<T>('GET', path);
  if (res === null) throw new Error(`${path} answered with no body`);
  return res;
}

async function data<T>(path: string): Promise<T> {
  const res = await api.read<T>(path);
  if (!res?.data) throw new Error(`${path} answered with no data`);
  return res.data;
}

async function snapshotRows(): Promise<SnapshotRow[]> {
  const names = await api.list(SNAPSHOT_CONFIGS);
  return Promise.all(names.map(async (name) => ({
    name,
    status: await section(() => data<SnapshotStatus>(`sys/storage/raft/snapshot-auto/status/${encodeURIComponent(name)}`)),
  })));
}

function countByStatus(associated: Record<string, { sync_status?: string }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of Object.values(associated)) {
    const status = a.sync_status || 'UNKNOWN';
    counts[status] = (counts[status] ?? 0) + 1;
  }
  return counts;
}

async function syncDestinations(): Promise<SyncDestination[]> {
  const res = await api.listWithInfo<string[]>(SYNC_DESTINATIONS).catch((err: unknown) => {
    // No destination at all is Vault's empty-folder 404.
    if (err instanceof ApiError && err.status === 404 && err.errors.length === 0) return null;
    throw err;
  });
  const byType = res?.data.key_info ?? {};
  const found = Object.entries(byType).flatMap(([type, names]) => (names ?? []).map((name) => ({ type: type.replace(/\/$/, ''), name })));
  found.sort((a, b) => a.type.localeCompare(b.type) || a.name.localeCompare(b.name));
  return Promise.all(found.map(async ({ type, name }) => ({
    type, name,
    associations: await section(async () => {
      const path = `${SYNC_DESTINATIONS}/${encodeURIComponent(type)}/${encodeURIComponent(name)}/associations`;
      const d = await data<{ associated_secrets?: Record<string, { sync_status?: string }> }>(path);
      return countByStatus(d.associated_secrets ?? {});
    }),
  })));
}

/** One refresh of every card the token may see, in parallel; a failing card never hides the rest. */
export async function loadDashboard(caps: CapabilityMap): Promise<DashboardData> {
  const [seal, leader, autopilot, dr, performance, snapshots, sync] = await Promise.all([
    section(() => bare<SealStatus>('sys/seal-status')),
    section(() => bare<LeaderStatus>('sys/leader')),
    allows(caps, CARD_NEEDS.autopilot) ? section(() => data<AutopilotState>(AUTOPILOT)) : undefined,
    section(() => data<ReplicationStatus>('sys/replication/dr/status')),
    section(() => data<ReplicationStatus>('sys/replication/performance/status')),
    allows(caps, CARD_NEEDS.snapshots) ? section(snapshotRows) : undefined,
    allows(caps, CARD_NEEDS.sync) ? section(syncDestinations) : undefined,
  ]);
  return {
    seal, leader, dr, performance, at: Date.now(),
    ...(autopilot ? { autopilot } : {}),
    ...(snapshots ? { snapshots } : {}),
    ...(sync ? { sync } : {}),
  };
}

/** Lag of each secondary a primary lists, in WAL entries; none when the cluster is not a primary. */
export function secondaryLags(status: ReplicationStatus | undefined): Map<string, number> {
  const lags = new Map<string, number>();
  if (status?.mode !== 'primary' || typeof status.last_wal !== 'number') return lags;
  for (const s of status.secondaries ?? []) {
    if (!s.node_id || typeof s.last_remote_wal !== 'number') continue;
    lags.set(s.node_id, Math.max(0, status.last_wal - s.last_remote_wal));
  }
  return lags;
}
