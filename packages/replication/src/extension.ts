import { join } from 'node:path';
import type { ClusterNode } from '@strongroom/cluster';
import {
  BadRequestError, drOperationTokenPaths, revokeDrOperationToken, systemClock, verifyDrOperationToken,
  type Clock, type Core, type CoreExtension, type CoreReply, type ReplicationRoles, type Logger, type PathDefinition,
} from '@strongroom/core';
import { NodeRuntime, type PerformanceHooks } from './node-runtime';
import { DR_SECONDARY_PATHS, rolePaths, statusPaths } from './role-paths';
import { KindRouter } from './kind-router';
import { classifyKey, CLUSTER_LOCAL_PREFIX } from './key-space';
import { merkleAdapters } from './merkle-adapters';
import { MerkleIndexer } from './merkle';
import type { MerkleView } from './merkle-view';
import { filterAllowsKey } from './paths-filter';
import { performancePaths } from './performance-paths';
import { MountIndex, mountsOf, performanceCore, type ForwardedWrite } from './performance-core';
import { ReplicationRole, RoleReloader } from './replication-role';
import { KINDS, stateKey } from './role-state';
import { WalTracker } from './wal-tracker';
import { ReplicationServer } from './wire/replication-server';

export interface ClusterReplicationOptions {
  cluster: ClusterNode;
  /** This node's storage directory: the Merkle index keeps its own store under it. */
  dir: string;
  logger: Logger;
  clock?: Clock;
}

/** Where the DR operation token's hash is kept: this cluster's own, outside the barrier. */
const OPERATION_TOKEN_KEY = `${CLUSTER_LOCAL_PREFIX}replication/dr/operation-token`;

/**
 * Replication on one server: the core extension that serves `sys/replication/*`, and the work
 * that runs on every node whatever its core does (the Merkle index, the WAL service, the
 * secondary's stream). `start` once the cluster node has started; `close` before it closes.
 */
export class ClusterReplication {
  private dr: ReplicationRole | null = null;
  private performance: ReplicationRole | null = null;
  private core: Core | null = null;
  private indexer: MerkleIndexer | null = null;
  private runtimes: NodeRuntime[] = [];
  private readonly wal: WalTracker;
  private offFeed: (() => void) | null = null;
  private reloader: RoleReloader | null = null;
  private readonly clock: Clock;

  constructor(private readonly options: ClusterReplicationOptions) {
    this.clock = options.clock ?? systemClock;
    this.wal = new WalTracker(options.cluster.feed);
  }

  /** The core extension: `sys/replication/*`, and the core's view of this cluster's roles. */
  extension(): (core: Core) => CoreExtension {
    return (core) => {
      const { cluster } = this.options;
      const store = { storage: cluster.storage, key: OPERATION_TOKEN_KEY };
      const merkle: MerkleView = {
        status: () => this.merkleStatus(),
        reindex: async (o) => {
          this.requireIndexer().reindex({ diff: o.diff, force: o.force });
          return {};
        },
        check: async () => (await this.requireIndexer().check()) as unknown as Record<string, unknown>,
      };
      const common = { core, cluster, logger: this.options.logger, clock: this.clock, merkle };
      const dr = new ReplicationRole({
        ...common, kind: 'dr', other: () => this.performance,
        operationTokens: { verify: (token) => verifyDrOperationToken(store, token), revoke: () => revokeDrOperationToken(store) },
      });
      const performance = new ReplicationRole({ ...common, kind: 'performance', other: () => this.dr });
      this.dr = dr;
      this.performance = performance;
      this.core = core;
      const roles: ReplicationRoles & { forwardWrite(request: ForwardedWrite): Promise<CoreReply> } = {
        drMode: () => dr.mode(),
        performanceMode: () => performance.mode(),
        servesOnDrSecondary: (path) => dr.servesOnDrSecondary(path),
        forwardWrite: (request) => performance.forwardWrite(request),
      };
      core.replication = roles;
      const tokenPaths = drOperationTokenPaths({
        ...store, prefix: 'replication/dr/secondary/', shares: core.seal, sealed: () => core.sealed,
        proven: (rootKey, recovery) => {
          if (!recovery) dr.offerRootKey(rootKey);
        },
      }).map((path) => onlyOnSecondary(path, dr));
      return { systemPaths: [...statusPaths(dr, performance), ...rolePaths(dr), ...rolePaths(performance), ...performancePaths(performance, core), ...tokenPaths], sealedPaths: DR_SECONDARY_PATHS };
    };
  }

  async start(): Promise<void> {
    const { dr, performance, core } = this;
    if (!dr || !performance || !core) throw new Error('the replication extension was not given to the core');
    const { cluster, logger } = this.options;
    this.indexer = await MerkleIndexer.open({
      dir: join(this.options.dir, 'merkle'), feed: cluster.feed, clock: this.clock, logger, suspended: true,
      scan: async () => {
        const node = cluster.storage.node;
        if (!node) throw new Error('this node does not belong to a cluster yet');
        return node.scan();
      },
    });
    await this.wal.start();
    const router = new KindRouter(this.wal);
    const server = new ReplicationServer({ handler: router, clock: this.clock, logger });
    server.register(cluster);
    router.attach(server);
    const merkle = merkleAdapters(this.indexer);
    const common = { cluster, router, merkle, wal: this.wal, clock: this.clock, logger };
    const roles = [dr, performance];
    this.runtimes = roles.map((role) => {
      const runtime = new NodeRuntime({ ...common, dr: role, ...(role === performance ? { performance: this.performanceHooks(core, performance) } : {}) });
      role.attachRuntime(runtime);
      return runtime;
    });
    // The roles are read again whenever one changes, and when the node under the feed changes
    // (an empty batch: a join or the first start).
    const stateKeys = new Set(KINDS.map(stateKey));
    const reloader = new RoleReloader(roles, { logger, clock: this.clock, after: () => this.indexWhileReplicating(roles) });
    this.reloader = reloader;
    this.offFeed = cluster.feed.subscribe((changes) => {
      if (changes.length === 0 || changes.some((c) => 'restored' in c || c.ops.some((op) => stateKeys.has(op.key)))) void reloader.reload();
    });
    await reloader.reload();
    for (const runtime of this.runtimes) runtime.start();
  }

  /** What a performance primary and secondary ask of the core. */
  private performanceHooks(core: Core, role: ReplicationRole): PerformanceHooks {
    const perf = performanceCore(core);
    const index = new MountIndex(() => mountsOf(core).mounts, () => this.clock.now());
    const isShared = (key: string) => classifyKey(key) !== null && perf.replicationScope(key).scope === 'shared';
    return {
      selector: (id) => {
        const s = role.current;
        const filter = s.mode === 'primary' ? s.paths_filters?.[id] : undefined;
        return filter ? (key) => isShared(key) && filterAllowsKey(filter, key, (uuid) => index.lookup(uuid)) : isShared;
      },
      forward: (request) => perf.handleForwarded({ ...request, operation: request.operation as ForwardedWrite['operation'] }),
      sharedOnly: { isShared, changed: (keys) => perf.sharedChanged(keys) },
    };
  }

  /**
   * The Merkle index serves replication only, so it follows the feed while either role is
   * enabled and rests while both are disabled: kept on every write, it cost a cluster that does
   * not replicate about a third of its write rate. Once a role is enabled, it catches up from its
   * checkpoint, or rebuilds from a scan when the feed no longer holds the changes since.
   */
  private indexWhileReplicating(roles: ReplicationRole[]): void {
    const indexer = this.indexer;
    if (!indexer) return;
    const replicating = roles.some((role) => role.mode() !== 'disabled');
    if (replicating === !indexer.suspended) return;
    if (replicating) indexer.resume();
    else indexer.suspend();
    this.options.logger.info(replicating ? 'merkle index follows the commit feed: replication is enabled' : 'merkle index rests: replication is disabled', { applied: indexer.applied });
  }

  /** Both roles' status as `sys/replication/status` shows it (the server's metrics read it); null before the core is built. */
  async status(): Promise<{ dr: Record<string, unknown>; performance: Record<string, unknown> } | null> {
    if (!this.dr || !this.performance) return null;
    return { dr: await this.dr.status(), performance: await this.performance.status() };
  }

  async close(): Promise<void> {
    this.offFeed?.();
    await this.reloader?.close();
    // First, so that a stream or sync waiting on the index ends rather than holding the runtimes open.
    this.indexer?.suspend();
    for (const runtime of this.runtimes) await runtime.close();
    this.wal.close();
    await this.indexer?.close();
  }

  private requireIndexer(): MerkleIndexer {
    if (!this.indexer) throw new BadRequestError('the Merkle index is not open on this node yet');
    return this.indexer;
  }

  private merkleStatus() {
    const s = this.indexer?.status();
    const reindex = s?.reindex?.running ? { stage: s.reindex.progress.phase, total: s.reindex.progress.keysTotal, done: s.reindex.progress.keysScanned } : null;
    return {
      root: s?.merkleRoot ?? '', corrupted: s?.corrupted ?? false, lastReindexEpoch: s?.lastReindexEpoch ?? '',
      lastCheckEpoch: s?.lastCorruptionCheckEpoch ?? '', reindex,
    };
  }
}

/** DR operation tokens are made on a DR secondary only: elsewhere the paths refuse. */
function onlyOnSecondary(path: PathDefinition, dr: ReplicationRole): PathDefinition {
  const operations: PathDefinition['operations'] = {};
  for (const [op, handler] of Object.entries(path.operations)) {
    if (!handler) continue;
    operations[op as keyof PathDefinition['operations']] = async (req, fields) => {
      if (dr.mode() !== 'secondary') throw new BadRequestError('DR operation tokens are generated on a DR secondary only');
      return handler(req, fields);
    };
  }
  return { ...path, operations };
}
