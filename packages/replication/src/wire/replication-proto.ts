import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { loadService, repositoryProtoPath } from '@strongroom/raft';
import type { TxnOp } from '@strongroom/base';

/** The repository's proto/replication.proto (this file sits as deep in its package as raft's transport). */
export function replicationProtoPath(): string {
  return repositoryProtoPath(__dirname, 'replication.proto');
}

// ---- messages as proto-loader gives and takes them ------------------------------------------

export interface WireActivateRequest {
  nodeId: string;
  apiAddress: string;
  clusterAddress: string;
}

export interface WireActivateResponse {
  clusterId: string;
  clusterAddresses: string[];
  lastWal: number;
}

export interface WirePingRequest {
  nodeId: string;
  apiAddress: string;
  clusterAddress: string;
  timeMs: number;
  lastRttMs: number;
  lastRemoteWal: number;
}

export interface WirePingResponse {
  clusterId: string;
  active: boolean;
  activeClusterAddress: string;
  timeMs: number;
  lastWal: number;
  walSource: string;
  pathsFilter: string;
}

export interface WireStreamWalsRequest {
  fromIndex: number;
  primaryClusterId: string;
  walSource: string;
  nodeId: string;
  apiAddress: string;
  clusterAddress: string;
}

export interface WireWalOp {
  key: string;
  value?: Buffer;
  delete: boolean;
}

export interface WireWalEntry {
  index: number;
  rootBefore: Buffer;
  ops: WireWalOp[];
}

export interface WireWalMessage {
  batch?: { entries: WireWalEntry[]; lastWal: number; through: number } | null;
  heartbeat?: { timeMs: number; lastWal: number } | null;
  notRetained?: { lastWal: number } | null;
  message?: 'batch' | 'heartbeat' | 'notRetained';
}

export interface WireMerkleDiffRequest {
  trees: { tree: string; leafHashes: Buffer[] }[];
  pageFrom: number;
  pageMaxBytes: number;
}

export interface WireMerkleDiffResponse {
  lastWal: number;
  leaves: { tree: string; leaf: number; entries: { key: string; hash: Buffer }[] }[];
  nextPage: number;
}

export interface WireMerkleSyncRequest {
  keys: string[];
}

export interface WireKeyValues {
  entries: { key: string; value?: Buffer }[];
}

export interface WireForwardRequest {
  operation: string;
  path: string;
  dataJson: string;
  namespace: string;
  remoteAddress: string;
}

export interface WireForwardResponse {
  status: number;
  bodyJson: string;
  lastWal: number;
}

export interface ReplicationService {
  definition: ServiceDefinition;
  activate: MethodDefinition<WireActivateRequest, WireActivateResponse>;
  ping: MethodDefinition<WirePingRequest, WirePingResponse>;
  streamWals: MethodDefinition<WireStreamWalsRequest, WireWalMessage>;
  merkleDiff: MethodDefinition<WireMerkleDiffRequest, WireMerkleDiffResponse>;
  merkleSync: MethodDefinition<WireMerkleSyncRequest, WireKeyValues>;
  forward: MethodDefinition<WireForwardRequest, WireForwardResponse>;
}

let loaded: ReplicationService | undefined;

/** The Replication service, parsed from replication.proto on first use. */
export function replicationService(): ReplicationService {
  if (loaded === undefined) {
    // `oneofs` names the member of WalMessage that is set.
    const definition = loadService(replicationProtoPath(), 'strongroom.replication.Replication', { oneofs: true });
    const method = <Req, Res>(name: string): MethodDefinition<Req, Res> => {
      const m = definition[name];
      if (m === undefined) throw new Error(`replication.proto does not declare Replication.${name}`);
      return m as MethodDefinition<Req, Res>;
    };
    loaded = {
      definition,
      activate: method('Activate'),
      ping: method('Ping'),
      streamWals: method('StreamWals'),
      merkleDiff: method('MerkleDiff'),
      merkleSync: method('MerkleSync'),
      forward: method('Forward'),
    };
  }
  return loaded;
}

// ---- conversions between the wire and memory ------------------------------------------------

export function encodeOp(op: TxnOp): WireWalOp {
  return op.type === 'put' ? { key: op.key, value: op.value, delete: false } : { key: op.key, delete: true };
}

/** The operation, or undefined for one that is neither a put with a value nor a delete. */
export function decodeOp(op: WireWalOp): TxnOp | undefined {
  if (op.key === '') return undefined;
  if (op.delete) return op.value === undefined ? { type: 'delete', key: op.key } : undefined;
  return op.value === undefined ? undefined : { type: 'put', key: op.key, value: op.value };
}

/** Bytes a message adds for each field and length prefix, counted generously. */
const FRAMING_BYTES = 16;

export function opBytes(op: TxnOp): number {
  return Buffer.byteLength(op.key) + (op.type === 'put' ? op.value.length : 0) + FRAMING_BYTES;
}
