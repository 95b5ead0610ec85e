import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import type { WireBatch, WireSnapshotChunk } from './codec';
import { loadService, repositoryProtoPath } from './proto-files';

/**
 * Request headers of a Stream call. The receiver refuses a stream addressed to another node
 * (its address now belongs to someone else), and reads only the newest stream of each sender.
 */
export const FROM_HEADER = 'strongroom-raft-from';
export const TO_HEADER = 'strongroom-raft-to';

/** The repository's proto/raft.proto. */
export function raftProtoPath(): string {
  return repositoryProtoPath(__dirname, 'raft.proto');
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
    const definition = loadService(raftProtoPath(), 'strongroom.raft.Raft');
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
