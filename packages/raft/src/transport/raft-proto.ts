import { existsSync } from 'node:fs';
import path from 'node:path';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import type { WireBatch, WireSnapshotChunk } from './codec';

/**
 * Request headers of a Stream call. The receiver refuses a stream addressed to another node
 * (its address now belongs to someone else), and reads only the newest stream of each sender.
 */
export const FROM_HEADER = 'strongroom-raft-from';
export const TO_HEADER = 'strongroom-raft-to';

/**
 * How proto-loader converts decoded messages to plain objects; codec.ts is written against
 * exactly these. `defaults` fills the fields that have no presence (a missing `term` reads 0)
 * and leaves absent the `optional` ones, which is what keeps them distinguishable.
 */
const LOADER_OPTIONS: Options = {
  keepCase: false,
  longs: Number,
  enums: Number,
  bytes: Buffer,
  defaults: true,
  arrays: true,
  oneofs: false,
};

/**
 * The repository's proto/raft.proto. This file sits at the same depth under packages/raft in
 * sources (src/transport, run by Jest) and in the build (dist/transport), so one relative path
 * serves both.
 */
export function raftProtoPath(): string {
  const file = path.resolve(__dirname, '../../../../proto/raft.proto');
  if (!existsSync(file)) {
    throw new Error(`raft.proto not found at ${file}: the proto/ folder of the repository must ship beside packages/raft`);
  }
  return file;
}

export interface WireCallRequest {
  id: number;
  payload: Buffer;
}

export interface WireCallResponse {
  id: number;
  payload: Buffer;
  error: string;
}

export interface WireCallRequests {
  calls: WireCallRequest[];
}

export interface WireCallResponses {
  answers: WireCallResponse[];
}

export interface RaftService {
  definition: ServiceDefinition;
  stream: MethodDefinition<WireBatch, object>;
  installSnapshot: MethodDefinition<WireSnapshotChunk, object>;
  calls: MethodDefinition<WireCallRequests, WireCallResponses>;
}

let loaded: RaftService | undefined;

/** The Raft service, parsed from raft.proto on first use and shared by every transport. */
export function raftService(): RaftService {
  if (loaded === undefined) {
    const definition = loadSync(raftProtoPath(), LOADER_OPTIONS)['strongroom.raft.Raft'] as ServiceDefinition;
    const stream = definition['Stream'];
    const installSnapshot = definition['InstallSnapshot'];
    const calls = definition['Calls'];
    if (stream === undefined || installSnapshot === undefined || calls === undefined) {
      throw new Error('raft.proto does not declare the Raft service with Stream, InstallSnapshot and Calls');
    }
    loaded = { definition, stream, installSnapshot, calls: calls as MethodDefinition<WireCallRequests, WireCallResponses> };
  }
  return loaded;
}
