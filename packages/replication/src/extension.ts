import { join } from 'node:path';
import type { ClusterNode } from '@strongroom/cluster';
import {
  BadRequestError, drOperationTokenPaths, revokeDrOperationToken, systemClock, verifyDrOperationToken,
  type Clock, type Core, type CoreExtension, type Logger, type PathDefinition,
} from '@strongroom/core';
import { DrNodeRuntime } from './dr-node-runtime';
import { DR_SECONDARY_PATHS, drPaths } from './dr-paths';
import { DrReplication } from './dr-replication';
import { DR_STATE_KEY } from './dr-state';
import { CLUSTER_LOCAL_PREFIX } from './key-space';
import { merkleAdapters } from './merkle-adapters';
import { MerkleIndexer } from './merkle';
import { WalTracker } from './wal-tracker';

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
  private dr: DrReplication | null = null;
  private indexer: MerkleIndexer | null = null;
  private runtime: DrNodeRuntime | null = null;
  private readonly wal: WalTracker;
  private offFeed: (() => void) | null = null;
  private reloading: Promise<void> = Promise.resolve();
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
      const dr = new DrReplication({
        core, cluster, logger: this.options.logger, clock: this.clock,
        merkle: {
          status: () => this.merkleStatus(),
          reindex: async (o) => {
            this.requireIndexer().reindex({ diff: o.diff, force: o.force });
            return {};
          },
          check: async () => (await this.requireIndexer().check()) as unknown as Record<string, unknown>,
        },
        operationTokens: { verify: (token) => verifyDrOperationToken(store, token), revoke: () => revokeDrOperationToken(store) },
      });
      this.dr = dr;
      core.replication = dr;
      const tokenPaths = drOperationTokenPaths({
        ...store, prefix: 'replication/dr/secondary/', shares: core.seal, sealed: () => core.sealed,
        proven: (rootKey, recovery) => {
          if (!recovery) dr.offerRootKey(rootKey);
        },
      }).map((path) => onlyOnSecondary(path, dr));
      return { systemPaths: [...drPaths(dr), ...tokenPaths], sealedPaths: DR_SECONDARY_PATHS };
    };
  }

  async start(): Promise<void> {
    const dr = this.dr;
    if (!dr) throw new Error('the replication extension was not given to the core');
    const { cluster, logger } = this.options;
    this.indexer = await MerkleIndexer.open({
      dir: join(this.options.dir, 'merkle'), feed: cluster.feed, clock: this.clock, logger,
      scan: async () => {
        const node = cluster.storage.node;
        if (!node) throw new Error('this node does not belong to a cluster yet');
        return node.scan();
      },
    });
    await this.wal.start();
    const runtime = new DrNodeRuntime({ cluster, dr, merkle: merkleAdapters(this.indexer), wal: this.wal, clock: this.clock, logger });
    this.runtime = runtime;
    dr.attachRuntime(runtime);
    // The role is read again whenever it changes, and when the node under the feed changes
    // (an empty batch: a join or the first start).
    this.offFeed = cluster.feed.subscribe((changes) => {
      if (changes.length === 0 || changes.some((c) => 'restored' in c || c.ops.some((op) => op.key === DR_STATE_KEY))) this.reload();
    });
    this.reload();
    await this.reloading;
    runtime.start();
  }

  private reload(): void {
    const dr = this.dr;
    if (!dr) return;
    this.reloading = this.reloading.then(() => dr.reload()).catch((err: unknown) => {
      this.options.logger.error('could not read this cluster\'s replication role', { err: (err as Error).message });
    });
  }

  async close(): Promise<void> {
    this.offFeed?.();
    await this.runtime?.close();
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
function onlyOnSecondary(path: PathDefinition, dr: DrReplication): PathDefinition {
  const operations: PathDefinition['operations'] = {};
  for (const [op, handler] of Object.entries(path.operations)) {
    if (!handler) continue;
    operations[op as keyof PathDefinition['operations']] = async (req, fields) => {
      if (dr.drMode() !== 'secondary') throw new BadRequestError('DR operation tokens are generated on a DR secondary only');
      return handler(req, fields);
    };
  }
  return { ...path, operations };
}
