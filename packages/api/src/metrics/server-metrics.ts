import type { ClusterNode } from '@strongroom/cluster';
import type { Core } from '@strongroom/core';
import type { RaftObserver } from '@strongroom/raft';
import type { ClusterReplication } from '@strongroom/replication';
import type { SnapshotObserver } from '@strongroom/snapshots';
import type { SyncObserver } from '@strongroom/sync';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { replicationMetrics } from './replication-metrics';
import { WindowedSummary, type SummarySeries } from './windowed-summary';

/** Vault's summaries: milliseconds, these quantiles, over the last ten minutes in five steps. */
const SUMMARY = { percentiles: [0.5, 0.9, 0.99], maxAgeSeconds: 600, ageBuckets: 5 };

/** Label of a request that never reached a mount (sealed, no mount at the path, bad input). */
export const NO_MOUNT = 'none';


/**
 * The metrics of one server: its own registry (tests run several servers in one process, so
 * the global default registry is never used). Events are pushed where they happen (requests,
 * Raft commits, snapshot attempts, sync operations); state that already exists elsewhere (seal
 * status, Raft term, replication WAL numbers, queue depth) is read when the registry is scraped.
 *
 * No label carries a secret path, a token, an accessor or an entity: requests are labelled by
 * mount type and operation only, secondaries by their cluster id, snapshot configs by name.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly requests: WindowedSummary<'mount_type' | 'operation'>;
  private readonly failures: Counter<'mount_type' | 'operation'>;
  /** Label children resolved once per (mount type, operation): no string is built per request. */
  private readonly children = new Map<string, Map<string, SummarySeries>>();
  private readonly commitTime: WindowedSummary;
  private readonly applies: Counter;
  private readonly snapshotDuration: WindowedSummary<'snapshot_config_name'>;
  private readonly snapshotErrors: Counter<'snapshot_config_name'>;
  private readonly snapshotSize: Gauge<'snapshot_config_name'>;
  private readonly snapshotLastSuccess: Gauge<'snapshot_config_name'>;
  private readonly syncOperations: Counter<'destination_type' | 'status'>;
  private syncDepth: (() => Promise<number>) | null = null;
  private bound = false;

  readonly raft: RaftObserver;
  readonly snapshots: SnapshotObserver;
  readonly sync: SyncObserver;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = new WindowedSummary({
      name: 'vault_core_handle_request', help: 'Time to handle a request, in milliseconds, by mount type and operation',
      labelNames: ['mount_type', 'operation'], registers, ...SUMMARY,
    });
    this.failures = new Counter({
      name: 'strongroom_core_handle_request_errors', help: 'Requests answered with an error status (4xx or 5xx), by mount type and operation',
      labelNames: ['mount_type', 'operation'], registers,
    });
    this.commitTime = new WindowedSummary({ name: 'vault_raft_commitTime', help: 'Time from a proposal on the leader to its commit and apply, in milliseconds', registers, ...SUMMARY });
    this.applies = new Counter({ name: 'vault_raft_apply', help: 'Entries this node proposed as leader and applied', registers });
    this.snapshotDuration = new WindowedSummary({
      name: 'vault_autosnapshots_save_duration', help: 'Time to take and write an automated snapshot, in milliseconds',
      labelNames: ['snapshot_config_name'], registers, ...SUMMARY,
    });
    this.snapshotErrors = new Counter({
      name: 'vault_autosnapshots_save_errors', help: 'Automated snapshot attempts that failed', labelNames: ['snapshot_config_name'], registers,
    });
    this.snapshotSize = new Gauge({
      name: 'vault_autosnapshots_snapshot_size', help: 'Bytes of the last automated snapshot written', labelNames: ['snapshot_config_name'], registers,
    });
    this.snapshotLastSuccess = new Gauge({
      name: 'vault_autosnapshots_last_success_time', help: 'Unix time (seconds) of the last automated snapshot written without error',
      labelNames: ['snapshot_config_name'], registers,
    });
    this.syncOperations = new Counter({
      name: 'strongroom_sync_operations_total', help: 'Secret sync operations run against destinations, by destination type and resulting status',
      labelNames: ['destination_type', 'status'], registers,
    });

    this.raft = {
      committed: (ms) => {
        this.commitTime.observe(ms);
        this.applies.inc();
      },
    };
    this.snapshots = {
      attempted: (config, outcome) => {
        this.snapshotDuration.labels(config).observe(outcome.durationMs);
        if (outcome.failed) this.snapshotErrors.labels(config).inc();
        else this.snapshotLastSuccess.labels(config).set(Math.floor(outcome.at / 1000));
        if (outcome.bytes > 0) this.snapshotSize.labels(config).set(outcome.bytes);
      },
      // A deleted configuration's series would otherwise be scraped for as long as the process lives.
      removed: (config) => {
        this.snapshotDuration.remove(config);
        this.snapshotErrors.remove(config);
        this.snapshotSize.remove(config);
        this.snapshotLastSuccess.remove(config);
      },
    };
    this.sync = {
      queue: (depth) => {
        this.syncDepth = depth;
      },
      operation: (type, status) => this.syncOperations.labels(type, status).inc(),
    };
  }

  /** One request, as the dispatcher saw it end. */
  observeRequest(mountType: string, operation: string, ms: number, failed: boolean): void {
    let byOp = this.children.get(mountType);
    if (!byOp) {
      byOp = new Map();
      this.children.set(mountType, byOp);
    }
    let child = byOp.get(operation);
    if (!child) {
      child = this.requests.labels(mountType, operation);
      byOp.set(operation, child);
    }
    child.observe(ms);
    if (failed) this.failures.labels(mountType, operation).inc();
  }

  /** Adds the families read from the server's parts when scraped. Once per server. */
  bind(parts: { core: Core; cluster: ClusterNode; replication: ClusterReplication }): void {
    if (this.bound) throw new Error('server metrics are already bound to a server');
    this.bound = true;
    const { core, cluster } = parts;
    const registers = [this.registry];
    new Gauge({
      name: 'vault_core_unsealed', help: '1 when this node is unsealed, 0 when sealed', registers,
      collect() {
        this.set(core.sealed ? 0 : 1);
      },
    });
    new Gauge({
      name: 'vault_core_active', help: '1 when this node is the active node of its cluster', registers,
      collect() {
        this.set(core.active ? 1 : 0);
      },
    });
    const raftStatus = () => cluster.storage.node?.status() ?? null;
    const raftGauge = (name: string, help: string, read: (s: NonNullable<ReturnType<typeof raftStatus>>) => number) => new Gauge({
      name, help, registers,
      collect() {
        const s = raftStatus();
        this.set(s ? read(s) : 0);
      },
    });
    raftGauge('strongroom_raft_leader', '1 when this node leads its Raft cluster', (s) => (s.role === 'leader' ? 1 : 0));
    raftGauge('strongroom_raft_term', 'The Raft term this node is in', (s) => s.term);
    raftGauge('strongroom_raft_last_index', 'Index of the last entry in this node\'s Raft log', (s) => s.lastIndex);
    raftGauge('vault_raft_storage_stats_commit_index', 'Raft commit index this node knows', (s) => s.commit);
    raftGauge('vault_raft_storage_stats_applied_index', 'Raft index this node has applied', (s) => s.applied);
    raftGauge('vault_raft_peers', 'Members (voters and non-voters) in the Raft configuration', (s) => s.conf.voters.length + s.conf.learners.length);
    replicationMetrics(registers, { core, feed: cluster.feed, replication: parts.replication });
    const depth = () => this.syncDepth;
    new Gauge({
      name: 'strongroom_sync_queue_depth', help: 'Secret sync operations waiting in the queue (read on the active node)', registers,
      async collect() {
        const read = depth();
        if (!read || !core.active) {
          this.set(0);
          return;
        }
        // A scrape must not fail because storage is briefly unavailable (a leader change).
        this.set(await read().catch(() => 0));
      },
    });
  }
}
