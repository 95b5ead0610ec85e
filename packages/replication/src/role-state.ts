import type { Storage } from '@strongroom/base';
import { CLUSTER_LOCAL_PREFIX } from './key-space';

/** The two kinds of replication; each has its own role, state and stream. */
export type ReplicationKind = 'dr' | 'performance';
export const KINDS: readonly ReplicationKind[] = ['dr', 'performance'];

/** The kind as messages name it. */
export function kindLabel(kind: ReplicationKind): string {
  return kind === 'dr' ? 'DR' : 'performance';
}

function kindKey(kind: ReplicationKind, name: string): string {
  return `${CLUSTER_LOCAL_PREFIX}replication/${kind}/${name}`;
}

/**
 * The role of this cluster for one kind, kept in its Raft store under the cluster-local prefix:
 * every node of the cluster reads it (a standby answers status, a new leader resumes the role),
 * and it never travels to another cluster. It is outside the barrier on purpose: a secondary's
 * keyring is the primary's, so what the secondary needs to reach its primary must not depend on
 * it (the same reasoning as the cluster's own TLS key, which is kept in the clear beside the
 * Raft data).
 */
export function stateKey(kind: ReplicationKind): string {
  return kindKey(kind, 'state');
}

/** The last WAL applied on a secondary, written in the same Raft entry as the WAL's own writes. */
export function appliedKey(kind: ReplicationKind): string {
  return kindKey(kind, 'applied');
}

/**
 * What the node that runs replication last saw of its links, for the other nodes' status: they
 * run no stream and hold no connection, but answer status all the same.
 */
export function liveKey(kind: ReplicationKind): string {
  return kindKey(kind, 'live');
}

/** Where `generate-public-key` keeps the private half, for `secondary/enable` to open the token with. */
export function keypairKey(kind: ReplicationKind): string {
  return kindKey(kind, 'activation-keypair');
}

/**
 * A performance primary's set (its cluster ID, replication CA, signing key, secondaries and paths
 * filters), copied outside the cluster-local prefix so that its DR secondaries hold it: promoted,
 * a DR secondary takes the set over. The core keeps it from performance secondaries (a local key
 * there). Kept in the clear, as the role itself is.
 */
export const PERFORMANCE_SET_KEY = 'core/replication-performance-set';

export type PerformanceSet = Omit<PrimaryState, 'mode'>;

export async function readPerformanceSet(storage: Pick<Storage, 'get'>): Promise<PerformanceSet | null> {
  const raw = await storage.get(PERFORMANCE_SET_KEY);
  return raw ? (JSON.parse(raw.toString('utf8')) as PerformanceSet) : null;
}

/**
 * A performance secondary's link (its identity at the primary: secondary and cluster IDs, the
 * client certificate and key, the primary's addresses and CA), copied with every write of that
 * role, and its applied mark, copied with every batch it applies, both outside the cluster-local
 * prefix for the same reason as the set: a promoted DR secondary of this cluster follows the
 * same performance primary as the same secondary, from where this one stopped. Local to the
 * core as the set is.
 */
export const PERFORMANCE_LINK_KEY = 'core/replication-performance-link';
export const PERFORMANCE_LINK_MARK_KEY = 'core/replication-performance-link-applied';

export type PerformanceLink = Pick<SecondaryState, 'cluster_id' | 'own_cluster_id' | 'secondary_id' | 'merkle_sync_count'> & { primary: PrimaryLink };

export async function readPerformanceLink(storage: Pick<Storage, 'get'>): Promise<{ link: PerformanceLink; mark: Buffer | null } | null> {
  const raw = await storage.get(PERFORMANCE_LINK_KEY);
  if (!raw) return null;
  return { link: JSON.parse(raw.toString('utf8')) as PerformanceLink, mark: await storage.get(PERFORMANCE_LINK_MARK_KEY) };
}

export const DR_STATE_KEY = stateKey('dr');
export const DR_APPLIED_KEY = appliedKey('dr');

/** One secondary the primary issued an activation token to. */
export interface SecondaryRecord {
  id: string;
  /** A performance secondary's own cluster ID (its status shows it; paths filters may name it). */
  cluster_id?: string;
  /** SHA-256 of the client certificate issued with the token (hex). */
  fingerprint: string;
  /** The wrapping token's accessor, to revoke it when the secondary is revoked before use. */
  wrap_accessor?: string;
  issued_at: number;
  /** Until when the activation may be used (ms); an activated secondary keeps its certificate. */
  expires_at: number;
  activated: boolean;
  /** The secondary's own addresses, as it told them when it connected. */
  api_address?: string;
  cluster_address?: string;
  node_id?: string;
}

/** Which mounts and namespaces a performance secondary receives. */
export interface PathsFilter {
  mode: 'allow' | 'deny';
  /** Mount paths (`secret/`, `auth/userpass/`, `ns1/kv/`) and namespace paths (`ns1/`), each ending with '/'. */
  paths: string[];
}

export interface PrimaryState {
  mode: 'primary';
  cluster_id: string;
  /** Names the WAL index space: a new one at each enable or promotion (another Raft log). */
  wal_source: string;
  primary_cluster_addr: string;
  /** The replication CA, which issues the secondaries' client certificates (PEM). */
  ca_cert: string;
  ca_key: string;
  /** Signs activation tokens (ES512, PKCS#8 PEM). */
  jwt_key: string;
  secondaries: Record<string, SecondaryRecord>;
  /** Performance only: per secondary id, what it may receive. */
  paths_filters?: Record<string, PathsFilter>;
}

/** What a secondary needs to reach its primary, as the activation token carried it. */
export interface PrimaryLink {
  cluster_id: string;
  wal_source: string;
  cluster_addrs: string[];
  api_addr: string;
  /** The primary's cluster CA: its nodes' certificates chain to it. */
  ca_cert: string;
  /** This secondary's client certificate and key, issued by the primary's replication CA. */
  cert: string;
  key: string;
}

export interface SecondaryState {
  mode: 'secondary';
  /** The replication set's cluster ID (the primary's). */
  cluster_id: string;
  /** A performance secondary's own cluster ID, which its status shows and paths filters may name. */
  own_cluster_id?: string;
  secondary_id: string;
  /** Null after a demotion or an update-primary with a blank token: no primary to stream from. */
  primary: PrimaryLink | null;
  /** A former primary demoted after a failover: update_primary_addrs is refused until it has a token. */
  demoted: boolean;
  /** Times this secondary left `stream-wals` for a Merkle sync. */
  merkle_sync_count: number;
  /**
   * Set from enable until this cluster's own data is wiped: the stream must not start before,
   * or the wipe deletes keys the first Merkle sync already copied. A new leader finishes it.
   */
  wipe_pending?: boolean;
  /** The replication CA and signing key a demoted primary keeps, to use again if promoted back. */
  kept_primary?: Omit<PrimaryState, 'mode'>;
}

export interface DisabledState {
  mode: 'disabled';
}

export type RoleState = PrimaryState | SecondaryState | DisabledState;

/** The WAL index space a secondary last applied from, and the index. */
export interface AppliedMark {
  wal_source: string;
  /** Where the stream resumes: the primary's index this node's data reflects. */
  index: number;
  /** The primary's last WAL that data reflects, when a Merkle sync set the mark (status shows it). */
  last_wal?: number;
  /**
   * A performance secondary's paths filter (its JSON; `null` for none) as the primary last told
   * it when its last Merkle sync began. The pages of that sync were answered with this filter or
   * a newer one: a different filter told since means keys the sync kept or left out by the old one.
   */
  paths_filter?: string;
}

export async function readRoleState(storage: Pick<Storage, 'get'>, kind: ReplicationKind): Promise<RoleState> {
  const raw = await storage.get(stateKey(kind));
  return raw ? (JSON.parse(raw.toString('utf8')) as RoleState) : { mode: 'disabled' };
}

export function encodeJson(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

export interface LiveRecord {
  /** Who wrote it, and when (ms). */
  node_id: string;
  at: number;
  secondary?: {
    state: string;
    connection_state: string;
    primary_cluster_addr: string;
    last_start: string;
    primaries: Array<Record<string, unknown>>;
  };
  secondaries?: Array<Record<string, unknown>>;
}

export async function readLive(storage: Pick<Storage, 'get'>, kind: ReplicationKind): Promise<LiveRecord | null> {
  const raw = await storage.get(liveKey(kind));
  return raw ? (JSON.parse(raw.toString('utf8')) as LiveRecord) : null;
}

export async function readApplied(storage: Pick<Storage, 'get'>, kind: ReplicationKind): Promise<AppliedMark | null> {
  const raw = await storage.get(appliedKey(kind));
  return raw ? (JSON.parse(raw.toString('utf8')) as AppliedMark) : null;
}
