import type { Readable } from 'node:stream';
import { BadRequestError, definePath, type PathDefinition, type SealConfig } from '@strongroom/core';

export interface PeerView {
  node_id: string;
  /** Cluster (Raft) address. */
  address: string;
  leader: boolean;
  voter: boolean;
  protocol_version: string;
}

export interface AutopilotServer {
  id: string;
  name: string;
  address: string;
  node_status: 'alive' | 'left';
  last_contact: string;
  last_term: number;
  last_index: number;
  healthy: boolean;
  stable_since: string;
  status: 'leader' | 'voter' | 'non-voter';
  version: string;
  node_type: 'voter' | 'non-voter';
  /** Why the member is unhealthy, or why a healthy non-voter is not promoted yet; empty otherwise. */
  reason: string;
}

export interface AutopilotState {
  healthy: boolean;
  failure_tolerance: number;
  optimistic_failure_tolerance: number;
  leader: string;
  voters: string[];
  non_voters: string[];
  servers: Record<string, AutopilotServer>;
}

/** Autopilot's settings as Vault names them; durations read back as "10s". */
export interface AutopilotSettings {
  cleanup_dead_servers: false;
  last_contact_threshold: string;
  max_trailing_logs: number;
  server_stabilization_time: string;
}

/** What the `sys/storage/raft/` paths need from the node's cluster membership. */
export interface ClusterControl {
  configuration(): { index: number; servers: PeerView[] };
  removePeer(id: string): Promise<void>;
  autopilotState(): AutopilotState;
  autopilotConfiguration(): Promise<AutopilotSettings>;
  /** Milliseconds and entries; fields left out keep their value. */
  setAutopilotConfiguration(change: { stabilizationMs?: number; lastContactMs?: number; maxTrailingLogs?: number }): Promise<void>;
  /** On a new node: asks the leader for a join challenge; the join completes at unseal. */
  join(leaderApiAddr: string, options: { nonVoter: boolean; leaderTls?: { ca?: string } }): Promise<void>;
  /**
   * On the active node: a challenge only a holder of the root key can answer, with what the
   * joining node needs before it is added (the cluster's TLS, readable with the root key, and
   * the leader's ID and cluster address, which it checks it can reach).
   */
  challenge(serverId: string): Promise<{ challenge: string; sealConfig: SealConfig; tls: string; leaderId: string; clusterAddr: string; wrappedRootKey: string | null }>;
  /** On the active node: checks the answer and adds the node as a non-voter. */
  answer(request: { serverId: string; answer: string; clusterAddr: string; apiAddr: string; nonVoter: boolean }): Promise<Record<string, unknown>>;
  snapshot(): Promise<Readable>;
  restore(data: Readable, force: boolean): Promise<void>;
}

/**
 * `sys/storage/raft/*`: membership, autopilot state and snapshots. `join` runs on the joining
 * node (it is uninitialized or sealed, hence unauthenticated); `bootstrap/*` are the leader's
 * half of the join, unauthenticated too because the joiner has no token, and guarded by the
 * challenge instead.
 */
export function raftPaths(cluster: ClusterControl): PathDefinition[] {
  return [
    definePath({
      pattern: 'storage/raft/join',
      unauthenticated: true,
      restricted: true,
      fields: {
        leader_api_addr: { type: 'string', required: true },
        non_voter: { type: 'bool' },
        leader_ca_cert: { type: 'string' },
      },
      operations: {
        update: async (_req, f) => {
          const leader = f.string('leader_api_addr');
          let url: URL;
          try {
            url = new URL(leader);
          } catch {
            throw new BadRequestError('invalid value for "leader_api_addr": must be a URL such as http://127.0.0.1:8200');
          }
          if (url.protocol !== 'http:' && url.protocol !== 'https:') {
            throw new BadRequestError('invalid value for "leader_api_addr": the scheme must be http or https');
          }
          const ca = f.string('leader_ca_cert');
          await cluster.join(url.origin, { nonVoter: f.bool('non_voter'), ...(ca ? { leaderTls: { ca } } : {}) });
          return { raw: { status: 200, body: { joined: true } } };
        },
      },
    }),
    definePath({
      pattern: 'storage/raft/bootstrap/challenge',
      unauthenticated: true,
      restricted: true,
      fields: { server_id: { type: 'string', required: true } },
      operations: {
        update: async (_req, f) => {
          const { challenge, sealConfig, tls, leaderId, clusterAddr, wrappedRootKey } = await cluster.challenge(requireId(f.string('server_id')));
          // The root key wrapped by the auto seal: a node with the same seal unseals itself with it.
          return { data: { challenge, seal_config: sealConfig, tls, leader_id: leaderId, cluster_addr: clusterAddr, ...(wrappedRootKey ? { wrapped_root_key: wrappedRootKey } : {}) } };
        },
      },
    }),
    definePath({
      pattern: 'storage/raft/bootstrap/answer',
      unauthenticated: true,
      restricted: true,
      fields: {
        server_id: { type: 'string', required: true },
        answer: { type: 'string', required: true },
        cluster_addr: { type: 'string', required: true },
        api_addr: { type: 'string', required: true },
        non_voter: { type: 'bool' },
      },
      operations: {
        update: async (_req, f) => ({
          data: await cluster.answer({
            serverId: requireId(f.string('server_id')), answer: f.string('answer'), clusterAddr: f.string('cluster_addr'),
            apiAddr: f.string('api_addr'), nonVoter: f.bool('non_voter'),
          }),
        }),
      },
    }),
    definePath({
      pattern: 'storage/raft/configuration',
      restricted: true,
      operations: { read: async () => ({ data: { config: cluster.configuration() } }) },
    }),
    definePath({
      pattern: 'storage/raft/remove-peer',
      restricted: true,
      sudo: true,
      fields: { server_id: { type: 'string', required: true } },
      operations: {
        update: async (_req, f) => {
          await cluster.removePeer(requireId(f.string('server_id')));
          return null;
        },
      },
    }),
    definePath({
      pattern: 'storage/raft/autopilot/state',
      restricted: true,
      operations: { read: async () => ({ data: cluster.autopilotState() as unknown as Record<string, unknown> }) },
    }),
    definePath({
      pattern: 'storage/raft/autopilot/configuration',
      restricted: true,
      fields: {
        server_stabilization_time: { type: 'duration' },
        last_contact_threshold: { type: 'duration' },
        max_trailing_logs: { type: 'int' },
        cleanup_dead_servers: { type: 'bool' },
      },
      operations: {
        read: async () => ({ data: { ...(await cluster.autopilotConfiguration()) } }),
        update: async (_req, f) => {
          if (f.bool('cleanup_dead_servers')) throw new BadRequestError('invalid value for "cleanup_dead_servers": removing dead servers automatically is not supported; remove them with remove-peer');
          const change: { stabilizationMs?: number; lastContactMs?: number; maxTrailingLogs?: number } = {};
          if (f.has('server_stabilization_time')) change.stabilizationMs = f.int('server_stabilization_time') * 1000;
          if (f.has('last_contact_threshold')) {
            const seconds = f.int('last_contact_threshold');
            if (seconds <= 0) throw new BadRequestError('invalid value for "last_contact_threshold": must be a positive duration, e.g. "10s"');
            change.lastContactMs = seconds * 1000;
          }
          if (f.has('max_trailing_logs')) {
            const n = f.int('max_trailing_logs');
            if (!Number.isSafeInteger(n) || n < 0) throw new BadRequestError('invalid value for "max_trailing_logs": must be a non-negative integer');
            change.maxTrailingLogs = n;
          }
          await cluster.setAutopilotConfiguration(change);
          return null;
        },
      },
    }),
    definePath({
      pattern: 'storage/raft/snapshot',
      restricted: true,
      sudo: true,
      operations: {
        read: async () => ({ raw: { status: 200, body: await cluster.snapshot() } }),
        update: async (req) => {
          await cluster.restore(requireBody(req.body), false);
          return null;
        },
      },
    }),
    definePath({
      pattern: 'storage/raft/snapshot-force',
      restricted: true,
      sudo: true,
      operations: {
        update: async (req) => {
          await cluster.restore(requireBody(req.body), true);
          return null;
        },
      },
    }),
  ];
}

/** Node IDs name directories and appear in logs: keep them to a safe alphabet. */
function requireId(id: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(id)) {
    throw new BadRequestError('invalid value for "server_id": use 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit');
  }
  return id;
}

function requireBody(body: Readable | undefined): Readable {
  if (!body) throw new BadRequestError('the snapshot must be sent as the request body with Content-Type application/octet-stream');
  return body;
}

/** Paths of the above that a sealed, uninitialized or standby node answers itself. */
export const RAFT_LOCAL_PATHS = ['sys/storage/raft/join'];
