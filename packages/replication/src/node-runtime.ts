import type { Advert, ClusterNode } from '@strongroom/cluster';
import { BadRequestError, type Clock, type Logger, type TimerHandle } from '@strongroom/core';
import type { KindRouter } from './kind-router';
import type { ReplicationRole } from './replication-role';
import type { RoleRuntime, SecondaryLive } from './role-runtime';
import { changedFilters } from './paths-filter';
import { encodeJson, kindLabel, liveKey, type LiveRecord, type PathsFilter, type PrimaryLink, type RoleState } from './role-state';
import { PrimaryService, type PrimaryMerkle, type PrimaryServiceOptions } from './primary-service';
import { SecondaryRunner, type SecondaryMerkle, type SharedOnly } from './secondary-runner';
import { CredentialRefusedError, NotActiveError, ReplicationWireError, WrongClusterError } from './wire/errors';
import { ReplicationClient } from './wire/replication-client';
import type { ForwardRequest, ForwardResult } from './wire/types';
import type { WalTracker } from './wal-tracker';

/** What a performance runtime adds to a DR one. */
export interface PerformanceHooks {
  /** On the primary: the keys a secondary may receive. */
  selector: NonNullable<PrimaryServiceOptions['selector']>;
  /** On the primary: runs a forwarded write on this node's core. */
  forward: NonNullable<PrimaryServiceOptions['forward']>;
  /** On the secondary: which keys are its own, and the core's reload. */
  sharedOnly: SharedOnly;
}

export interface NodeRuntimeOptions {
  cluster: ClusterNode;
  dr: ReplicationRole;
  /** The replication service of this node, shared by both kinds. */
  router: KindRouter;
  performance?: PerformanceHooks;
  merkle: PrimaryMerkle & SecondaryMerkle;
  wal: WalTracker;
  clock: Clock;
  logger: Logger;
}

/** How often the node checks whether it should run the secondary's stream (it leads, the role says so). */
const SUPERVISE_MS = 500;
/** The live record is written when what it says changes, and at least this often while it leads. */
const LIVE_REFRESH_MS = 10_000;
/** How long a forwarded write waits for itself to stream back before answering with a warning. */
const FORWARD_WAIT_MS = 2_000;
/** How long the primary has to run a forwarded write. */
const FORWARD_TIMEOUT_MS = 60_000;
const NOT_BACK_YET = 'the write was applied on the primary but has not reached this secondary yet';

/**
 * One kind of replication's runtime on one node: the primary's service on the cluster listener
 * (every node serves it; standbys point at the active node), and, on the node that leads a
 * secondary cluster, the stream from its primary.
 */
export class NodeRuntime implements RoleRuntime {
  private readonly primary: PrimaryService;
  private readonly name: string;
  /** The primary's filters as last read; null before the first reading. */
  private filters: Record<string, PathsFilter> | null = null;
  private runner: { link: PrimaryLink; runner: SecondaryRunner } | null = null;
  private timer: TimerHandle | null = null;
  private supervising: Promise<void> = Promise.resolve();
  private wiping: Promise<void> | null = null;
  private closed = false;
  /** What was last written to the live record (timestamps left out), and when. */
  private lastLive: { text: string; at: number } | null = null;
  private writingLive = false;

  constructor(private readonly options: NodeRuntimeOptions) {
    const { cluster, dr, merkle, wal, clock, logger, performance } = options;
    this.name = `${kindLabel(dr.kind)} replication`;
    const state = () => (dr.current.mode === 'primary' ? dr.current : null);
    this.primary = new PrimaryService({
      cluster, merkle, wal, clock, logger, state,
      recordActivation: (id, fingerprint, where) => dr.recordActivation(id, fingerprint, where),
      ...(performance ? { selector: performance.selector, forward: performance.forward } : {}),
    });
    options.router.serve(dr.kind, this.primary, state);
  }

  start(): void {
    const tick = () => {
      if (this.closed) return;
      this.supervise();
      this.recordLive();
      this.timer = this.options.clock.setTimer(SUPERVISE_MS, tick);
    };
    tick();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    await this.supervising;
    await this.wiping;
    await this.runner?.runner.stop();
    this.runner = null;
  }

  stateChanged(state: RoleState): void {
    this.options.router.trust(this.options.dr.kind, state.mode === 'primary' ? [state.ca_cert] : []);
    // A secondary whose paths filter changed syncs by Merkle tree: it removes what it may no longer hold and fetches what it now may.
    const filters = state.mode === 'primary' ? state.paths_filters ?? {} : {};
    for (const id of changedFilters(this.filters, filters)) this.primary.resync(id);
    this.filters = filters;
    this.supervise();
  }

  /** On a performance secondary: the primary's filter for it, as the last ping told. */
  pathsFilter(): PathsFilter | null {
    return this.runner?.runner.pathsFilter() ?? null;
  }

  /**
   * On a performance secondary: runs a write on the primary, then waits up to 2 s for it to
   * stream back here (so the client reads what it wrote), and answers the primary's reply.
   */
  async forwardWrite(request: ForwardRequest): Promise<ForwardResult & { warnings: string[] }> {
    const runner = this.runner?.runner;
    const client = runner?.activeClient();
    if (!runner || !client) throw new BadRequestError('this performance secondary is not connected to its primary: the write cannot be forwarded now');
    const answer = await client.forward(request, FORWARD_TIMEOUT_MS);
    // A refused write changed nothing: there is nothing to wait for.
    if (answer.status >= 400) return { ...answer, warnings: [] };
    const back = await runner.reached(answer.lastWal, FORWARD_WAIT_MS);
    return { ...answer, warnings: back ? [] : [NOT_BACK_YET] };
  }

  /** Starts, replaces or stops the secondary's stream to match the role and the leadership. */
  private supervise(): void {
    this.supervising = this.supervising.then(async () => {
      const state = this.options.dr.current;
      const leads = this.options.cluster.leads;
      if (!this.closed && leads && state.mode === 'secondary' && state.wipe_pending) this.resumeWipe();
      const want = !this.closed && leads && state.mode === 'secondary' && state.primary !== null && !state.wipe_pending ? state.primary : null;
      if (this.runner && this.runner.link === want) return;
      if (this.runner && want && sameLink(this.runner.link, want)) {
        this.runner.link = want;
        return;
      }
      const old = this.runner;
      this.runner = null;
      await old?.runner.stop();
      if (!want) return;
      const runner = new SecondaryRunner({
        kind: this.options.dr.kind,
        ...(this.options.performance ? { sharedOnly: this.options.performance.sharedOnly } : {}),
        storage: this.options.cluster.storage, link: want, self: this.options.cluster.advert, nodeId: this.options.cluster.nodeId,
        merkle: this.options.merkle, applied: () => this.options.cluster.feed.window().last ?? 0,
        clock: this.options.clock, logger: this.options.logger,
        connect: (address, link) => new ReplicationClient(address, { ca: link.ca_cert, cert: link.cert, key: link.key }),
        countMerkleSync: () => this.options.dr.countMerkleSync(),
      });
      this.runner = { link: want, runner };
      runner.start();
    }).catch((err: unknown) => this.options.logger.error(`${this.name}: could not change the stream`, { err: (err as Error).message }));
  }

  /** On the node that runs replication: keeps the live record current for the other nodes' status. */
  private recordLive(): void {
    const state = this.options.dr.current;
    if (this.writingLive || state.mode === 'disabled' || !this.options.cluster.leads) return;
    const secondary = this.runner?.runner.status();
    const record: Omit<LiveRecord, 'at'> = {
      node_id: this.options.cluster.nodeId,
      ...(state.mode === 'secondary' && secondary ? {
        secondary: {
          state: secondary.state, connection_state: secondary.connectionState, primary_cluster_addr: secondary.primaryClusterAddr,
          last_start: secondary.lastStart, primaries: secondary.primaries,
        },
      } : {}),
      ...(state.mode === 'primary' ? { secondaries: this.secondaries() } : {}),
    };
    const text = JSON.stringify(record, (k, v) => (k === 'last_heartbeat' || k === 'last_heartbeat_duration_ms' || k === 'clock_skew_ms' || k === 'last_remote_wal' ? undefined : v));
    const now = this.options.clock.now();
    if (this.lastLive && this.lastLive.text === text && now - this.lastLive.at < LIVE_REFRESH_MS) return;
    this.writingLive = true;
    this.options.cluster.storage.put(liveKey(this.options.dr.kind), encodeJson({ ...record, at: now }))
      .then(() => { this.lastLive = { text, at: now }; })
      .catch(() => undefined)
      .finally(() => { this.writingLive = false; });
  }

  private resumeWipe(): void {
    if (this.wiping) return;
    this.wiping = this.options.dr.resumeWipe()
      .catch((err: unknown) => this.options.logger.error(`${this.name}: could not wipe this secondary's own data; retrying`, { err: (err as Error).message }))
      .finally(() => {
        this.wiping = null;
      });
  }

  lastWal(): number {
    return this.options.wal.lastWal;
  }

  secondaries(): Array<Record<string, unknown>> {
    const state = this.options.dr.current;
    return state.mode === 'primary' ? this.primary.secondaries(state) : [];
  }

  secondaryStatus(): SecondaryLive | null {
    return this.runner?.runner.status() ?? null;
  }

  disconnect(id: string): void {
    this.primary.disconnect(id);
  }

  /** Activate at the primary's active node (found by following a standby's pointer); refusals become 400s. */
  async activate(link: PrimaryLink, self: Advert): Promise<void> {
    const errors: string[] = [];
    for (const first of link.cluster_addrs) {
      let address = first;
      for (let hop = 0; hop < 3; hop++) {
        const client = new ReplicationClient(address, { ca: link.ca_cert, cert: link.cert, key: link.key });
        try {
          const answer = await client.activate({ nodeId: this.options.cluster.nodeId, apiAddress: self.api, clusterAddress: self.cluster });
          if (answer.clusterId !== link.cluster_id) throw new BadRequestError('invalid value for "token": the primary answered for another replication set');
          return;
        } catch (err) {
          if (err instanceof NotActiveError && err.activeClusterAddress) {
            address = err.activeClusterAddress;
            continue;
          }
          if (err instanceof CredentialRefusedError) {
            throw new BadRequestError(`invalid value for "token": the primary refused the activation (${err.reason === 'used' ? 'already used' : 'revoked or expired'})`);
          }
          if (err instanceof WrongClusterError || err instanceof BadRequestError) throw err;
          errors.push(`${address}: ${err instanceof ReplicationWireError ? err.message : (err as Error).message}`);
          break;
        } finally {
          client.close();
        }
      }
    }
    throw new BadRequestError(`could not reach the primary's cluster address to activate: ${errors.join('; ')}`);
  }

  async pickPrimary(link: PrimaryLink, addrs: string[]): Promise<string> {
    const errors: string[] = [];
    for (const address of addrs) {
      const client = new ReplicationClient(address, { ca: link.ca_cert, cert: link.cert, key: link.key });
      try {
        const pong = await client.ping();
        if (pong.clusterId === link.cluster_id) return address;
        errors.push(`${address}: belongs to another replication set`);
      } catch (err) {
        errors.push(`${address}: ${(err as Error).message}`);
      } finally {
        client.close();
      }
    }
    throw new BadRequestError(`invalid value for "update_primary_addrs": no address answered as this secondary's primary (${errors.join('; ')})`);
  }
}

function sameLink(a: PrimaryLink, b: PrimaryLink): boolean {
  return a.wal_source === b.wal_source && a.cert === b.cert && a.cluster_addrs.join(',') === b.cluster_addrs.join(',');
}
