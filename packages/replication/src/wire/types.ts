import type { TxnOp } from '@strongroom/base';

/** What a newly activated secondary tells the primary about itself. */
export interface ActivateRequest {
  nodeId: string;
  apiAddress: string;
  clusterAddress: string;
}

export interface ActivateResult {
  clusterId: string;
  /** The cluster addresses of the primary's members, for the secondary to fail over between. */
  clusterAddresses: string[];
  lastWal: number;
}

/** What a secondary tells the primary with each ping. */
export interface PingRequest {
  nodeId: string;
  apiAddress: string;
  clusterAddress: string;
  /** The secondary's clock when it sent the ping. */
  timeMs: number;
  /** The round trip of its previous ping. */
  lastRttMs: number;
  /** The primary's WAL index its data reflects (0 before the first applied entry). */
  lastRemoteWal?: number;
}

export interface PingResult {
  clusterId: string;
  /** The primary's WAL index space. */
  walSource: string;
  /** Whether the node that answered is the primary's active node. */
  active: boolean;
  /** The active node's cluster address when the answering node is not it, if known. */
  activeClusterAddress: string | null;
  lastWal: number;
  /** A performance secondary's paths filter, if it has one. */
  pathsFilter?: { mode: 'allow' | 'deny'; paths: string[] } | null;
}

/** A ping's answer as the secondary sees it: with the primary's clock, for the skew. */
export interface PingReply extends PingResult {
  timeMs: number;
}

export interface StreamWalsRequest {
  /** The first WAL index the secondary has not applied. */
  fromIndex: number;
  primaryClusterId: string;
  /** The WAL index space fromIndex belongs to. */
  walSource: string;
  nodeId: string;
  apiAddress: string;
  clusterAddress: string;
}

/** One committed change of the primary's replicated key space: physical (encrypted) entries. */
export interface WalEntry {
  index: number;
  /** The Merkle root before this entry applied. */
  rootBefore: Buffer;
  ops: TxnOp[];
}

/** What the primary's handler yields on a WAL stream; the wire adds heartbeats. */
export type WalStreamItem =
  /** `through`: every change up to it was sent or left out on purpose (0 or absent: not said). */
  | { kind: 'batch'; entries: WalEntry[]; lastWal: number; through?: number }
  /** `fromIndex` left the window: the stream ends, the secondary runs a Merkle diff. */
  | { kind: 'notRetained'; lastWal: number };

/** What the secondary reads from a WAL stream. */
export type WalStreamMessage = WalStreamItem | { kind: 'heartbeat'; timeMs: number; lastWal: number };

export interface MerkleDiffRequest {
  trees: { tree: string; leafHashes: Buffer[] }[];
  /** Absent: the whole answer at once. */
  page?: { from: number; maxBytes: number };
}

export interface MerkleDiffResult {
  /** The primary's last_wal that the answer reflects. */
  lastWal: number;
  leaves: { tree: string; leaf: number; entries: { key: string; hash: Buffer }[] }[];
  /** Where the next page starts; absent after the last page. */
  next?: number;
}

/** A key's current value on the primary; null when it does not exist there. */
export interface KeyValue {
  key: string;
  value: Buffer | null;
}

/** A write a performance secondary forwards to its primary. */
export interface ForwardRequest {
  operation: string;
  path: string;
  data: Record<string, unknown>;
  namespace?: string;
  remoteAddress?: string;
}

/** The primary's answer to a forwarded write, and its last_wal once the write applied. */
export interface ForwardResult {
  status: number;
  body?: unknown;
  lastWal: number;
}
