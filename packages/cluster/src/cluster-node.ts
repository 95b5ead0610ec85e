import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { open as openFile, readFile, rename, rm, writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  BadRequestError, ConflictError, openWithRootKey, SealedError, StandbyError, systemClock,
  type Clock, type Core, type CoreExtension, type HaHooks, type LeaderInfo, type Logger, type SealConfig, type TimerHandle,
} from '@strongroom/core';
import { createClusterTls, GrpcTransport, makeDir, RaftNode, snapshotValue, type ClusterTls, type ExtraService, type RaftNodeOptions } from '@strongroom/raft';
import { AdvertTransport, decodeAdvert, encodeAdvert, hostPortOf, type Advert } from './advert';
import { Autopilot, type AutopilotConfig, type MemberView } from './autopilot';
import { CommitFeed } from './commit-feed';
import { ForwardingAuth } from './forwarding-auth';
import { decodeControl, decodeControlAnswer, encodeControl, encodeControlAnswer, withTimeout } from './member-control';
import { RAFT_LOCAL_PATHS, raftPaths, type AutopilotServer, type AutopilotSettings, type AutopilotState, type ClusterControl, type PeerView } from './raft-paths';
import { RaftStorage } from './raft-storage';
import { RetryJoin, type JoinState, type LeaderTls, type RetryJoinLeader } from './retry-join';
import type { ClusterRouting } from './routing';

export interface ClusterNodeOptions {
  /** The storage path: `tls.json` and the Raft node's data live here. */
  dir: string;
  nodeId: string;
  /** Where the cluster listener binds. */
  listen: { host: string; port: number };
  /** How the others reach this node's cluster listener (cluster_addr); defaults to `listen`. */
  clusterAddr?: string;
  /** This node's API address as clients and the other members reach it (api_addr); set by `start` when not known earlier. */
  apiAddr?: string;
  logger: Logger;
  clock?: Clock;
  /** Milliseconds per Raft tick; elections take 10 to 20 ticks. */
  tickMs?: number;
  /**
   * Autopilot's thresholds. By default, in Raft ticks: 100 to stabilize (Vault's 10 s at the
   * default tick) and 20 of silence; and Vault's 1000 trailing entries.
   */
  autopilot?: Partial<AutopilotConfig>;
  /** Snapshot schedule and trailing log of the Raft node (the raft storage block's settings). */
  snapshots?: Pick<RaftNodeOptions, 'snapshotThreshold' | 'snapshotIntervalMs' | 'snapshotTrailing'>;
  /** `retry_join`: while this node belongs to no cluster, it keeps asking these leaders to join. */
  retryJoin?: RetryJoinLeader[];
  /** The commit feed's retained window (a replication primary's WAL): entries and bytes kept. */
  changeLog?: RaftNodeOptions['changeLog'];
  /** Handed to every Raft node this member opens (the server's metrics). */
  raftObserver?: RaftNodeOptions['observer'];
}

const TLS_FILE = 'tls.json';
const CHALLENGE_PURPOSE = 'strongroom raft join challenge';
const TLS_PURPOSE = 'strongroom raft join tls';
const CHALLENGE_TTL_MS = 5 * 60_000;
/** The leader answered a request of a joining node with an error status (a 400 to the client). */
class LeaderRefusal extends BadRequestError {
  constructor(message: string, readonly leaderStatus: number) {
    super(message);
  }
}

/** Join challenges kept at once; past it the oldest is dropped (its node asks again). */
const MAX_PENDING_CHALLENGES = 64;
/** How long a join waits for the other side to answer at its cluster address. */
const PROBE_TIMEOUT_MS = 5_000;
/**
 * Where the operator's autopilot settings are kept: in the replicated store but outside the
 * barrier (nothing in them is secret), so that the leader reads them whether sealed or not.
 */
const AUTOPILOT_CONFIG_KEY = 'core/autopilot-configuration';
/** Between two attempts of a sealed leader to hand off its lead. */
const HAND_OFF_PAUSE_MS = 2_000;
/** How long a joining node waits to hear from the leader before it gives up on the data arriving. */
const JOIN_SILENCE_MS = 15_000;

interface PendingJoin {
  leader: string;
  challenge: Buffer;
  /** The cluster's TLS identity, readable only with the root key. */
  tls: Buffer;
  /** The leader's node ID and cluster address, which the joining node must reach. */
  leaderId: string;
  leaderClusterAddr: string;
  nonVoter: boolean;
  leaderTls: LeaderTls;
}

/**
 * This server's membership of a Raft cluster: it owns the Raft node and its TLS identity,
 * creates the cluster at init or joins one, makes the core active while this node leads and a
 * standby otherwise, promotes caught-up learners (autopilot), and serves `sys/storage/raft/*`.
 */
export class ClusterNode implements ClusterControl {
  /**
   * The core's physical storage: empty until this node creates or joins a cluster. On the active
   * node, reads (and each request, through the core) wait until this node is sure it still leads
   * in the term it was activated in, which makes its applied state the cluster's latest; on a
   * standby they read the local state.
   */
  readonly storage = new RaftStorage(null, { activeTerm: () => (this.core?.active ? this.activeTerm : null) });
  /** Every change this node applies, in order; the core's cache follows it (see CoreOptions.commits). */
  readonly feed = new CommitFeed();
  private autopilotWrites: Promise<void> = Promise.resolve();
  private node: RaftNode | null = null;
  /** The node's transport, which also carries standbys' requests to the active node. */
  private transport: GrpcTransport | null = null;
  /** What the active node does with a request a standby hands it (set by the API's dispatcher). */
  private callHandler: ((payload: Buffer) => Promise<Buffer>) | null = null;
  private core: Core | null = null;
  private tls: ClusterTls | null = null;
  private auth: ForwardingAuth | null = null;
  private pendingJoin: PendingJoin | null = null;
  /** The CA of the members' API certificates, as given at join (leader_ca_cert); kept in tls.json. */
  private apiCa: string | undefined;
  private readonly challenges = new Map<string, { answer: Buffer; expires: number }>();
  private reconciling: Promise<void> = Promise.resolve();
  /** The Raft term in which the core was last activated. */
  private activeTerm = -1;
  private retryTimer: TimerHandle | null = null;
  private autopilotTimer: TimerHandle | null = null;
  private readonly autopilotRule: Autopilot;
  /** The thresholds before the operator's settings: the options', over defaults in ticks. */
  private readonly autopilotDefaults: AutopilotConfig;
  /** On the leader: each member's latest echo (when it came, and whether it said it was sealed). */
  private readonly echoes = new Map<string, { at: number; sealed: boolean }>();
  /** On a follower: an echo to the leader is on its way. */
  private echoing = false;
  private readonly clock: Clock;
  private closed = false;
  private retryJoin: RetryJoin | null = null;
  /** A sealed leader tries to hand off its lead at most this often. */
  private handOffAfter = 0;
  /** Served beside Raft on every transport this node creates (addService). */
  private readonly services: ExtraService[] = [];
  /** Client CAs trusted beside the cluster's on the cluster listener (trustClientCas). */
  private clientCas: string[] = [];

  constructor(private options: ClusterNodeOptions) {
    this.clock = options.clock ?? systemClock;
    const tickMs = options.tickMs ?? 100;
    this.autopilotDefaults = { stabilizationMs: 100 * tickMs, lastContactMs: 20 * tickMs, maxTrailingLogs: 1000, ...options.autopilot };
    this.autopilotRule = new Autopilot(this.autopilotDefaults, options.logger);
  }

  /**
   * Starts the node once the API listens (its address goes into the advert). A member of a
   * cluster (it has TLS and Raft state) takes part at once, sealed or not; a new node waits
   * for init or join.
   */
  async start(apiAddr: string): Promise<void> {
    this.options = { apiAddr, ...this.options };
    await makeDir(this.options.dir, 0o700);
    const tlsFile = join(this.options.dir, TLS_FILE);
    if (!existsSync(tlsFile) && existsSync(join(this.options.dir, 'raft'))) {
      // The cluster's TLS identity is stored last in a join: Raft data without it is a join that
      // stopped halfway, which would otherwise pass for membership of a cluster that never took it.
      this.options.logger.warn('removing the Raft data of a join that did not finish; join the cluster again');
      await rm(join(this.options.dir, 'raft'), { recursive: true, force: true });
    }
    if (existsSync(tlsFile)) {
      const stored = JSON.parse(await readFile(tlsFile, 'utf8')) as ClusterTls & { apiCa?: string };
      this.tls = { caCert: stored.caCert, cert: stored.cert, key: stored.key };
      this.apiCa = stored.apiCa;
      await this.startRaft({});
    }
    const leaders = this.options.retryJoin ?? [];
    if (leaders.length > 0 && !this.closed) {
      this.retryJoin = new RetryJoin({
        leaders, clock: this.clock, logger: this.options.logger,
        state: () => this.joinState(),
        join: (leader, tls, signal) => this.join(leader, { nonVoter: false, leaderTls: tls, signal }),
      });
      this.retryJoin.start();
    }
  }

  private async joinState(): Promise<JoinState> {
    if (this.pendingJoin) return 'pending';
    if (this.node || (await this.requireCore().seal.initialized())) return 'member';
    return 'new';
  }

  /** Wires the core this node serves; the core's HA hooks come from `hooks()`. */
  attach(core: Core): void {
    this.core = core;
    // After the core's own subscription (made when it was built), so its cache is clean by then.
    this.feed.subscribe((changes) => {
      if (changes.some((c) => 'restored' in c)) this.afterRestore();
    });
  }

  get advert(): Advert {
    return { cluster: hostPortOf(this.options.clusterAddr ?? `${this.options.listen.host}:${this.options.listen.port}`), api: this.options.apiAddr ?? '', nonVoter: false };
  }

  hooks(): HaHooks {
    return {
      leader: () => this.leaderInfo(),
      beforeInit: () => this.bootstrap(),
      beforeUnseal: (rootKey) => this.completeJoin(rootKey),
      unsealed: () => this.reconcile(),
    };
  }

  routing(): ClusterRouting {
    return {
      activeAddress: () => {
        const leader = this.leaderInfo();
        return leader && !leader.self ? leader.apiAddress : null;
      },
      awaitActive: async () => {
        const deadline = Date.now() + Math.max(3000, 20 * (this.options.tickMs ?? 100));
        for (;;) {
          // Leading but not yet active: activation is moments away, so wait for it too.
          const leader = this.leaderInfo();
          if (leader && !leader.self) return leader.apiAddress;
          if (this.core?.active || Date.now() > deadline || this.closed) return null;
          await new Promise((r) => setTimeout(r, 10));
        }
      },
      auth: this.forwardingAuth(),
      apiCa: () => this.apiCa,
      call: (payload) => {
        const node = this.node;
        const transport = this.transport;
        if (!node || !transport || node.leader === null || node.isLeader) return null;
        const advert = this.leaderAdvert(node);
        return advert ? transport.call(advert.cluster, payload) : null;
      },
      serveCalls: (handler) => {
        this.callHandler = handler;
      },
    };
  }

  /** The core extension that serves `sys/storage/raft/*`; a node not yet in a cluster answers its join itself. */
  extension(): () => CoreExtension {
    return () => ({ systemPaths: raftPaths(this), sealedPaths: RAFT_LOCAL_PATHS });
  }

  /**
   * The key that signs forwarded client addresses. Every member holds the cluster's TLS key
   * and nothing else does; until this node has it, it neither forwards nor trusts forwards.
   */
  private forwardingAuth(): ForwardingAuth {
    const self = this;
    const unknown = new ForwardingAuth(randomBytes(32));
    return new (class extends ForwardingAuth {
      override sign(address: string, method: string, url: string): string {
        return (self.auth ?? unknown).sign(address, method, url);
      }
      override verify(header: string, method: string, url: string): string | null {
        return (self.auth ?? unknown).verify(header, method, url);
      }
    })(randomBytes(32));
  }

  /** The last advert decoded, since a standby looks the leader's up on every request it forwards. */
  private lastAdvert: { text: string; advert: Advert | null } | null = null;

  /** The leader's advert; the decoded one is kept while it does not change. */
  private leaderAdvert(node: RaftNode): Advert | null {
    if (node.leader === null) return null;
    const text = node.addressOf(node.leader);
    if (text === undefined) return null;
    if (this.lastAdvert?.text !== text) this.lastAdvert = { text, advert: decodeAdvert(text) };
    return this.lastAdvert.advert;
  }

  /** The leader's addresses, as sys/leader reports them; null while no leader is known. */
  leaderInfo(): LeaderInfo | null {
    const node = this.node;
    if (!node || node.leader === null) return null;
    const advert = this.leaderAdvert(node);
    if (!advert) return null;
    return { self: node.isLeader, apiAddress: advert.api, clusterAddress: `https://${advert.cluster}` };
  }

  // ---- starting the node ----------------------------------------------------------------

  private async saveTls(tls: ClusterTls): Promise<void> {
    const file = join(this.options.dir, TLS_FILE);
    await writeFile(`${file}.tmp`, JSON.stringify({ ...tls, ...(this.apiCa ? { apiCa: this.apiCa } : {}) }), { mode: 0o600 });
    await rename(`${file}.tmp`, file);
    this.tls = tls;
  }

  private async startRaft(start: { bootstrap?: boolean; peers?: Record<string, string> }): Promise<void> {
    const tls = this.tls as ClusterTls;
    this.auth = new ForwardingAuth(createHash('sha256').update('strongroom request forwarding\n').update(tls.key).digest());
    await this.settleListenPort();
    const { host, port } = this.options.listen;
    const transport = new GrpcTransport({
      id: this.options.nodeId, listen: `${host}:${port}`, tls: { ca: tls.caCert, cert: tls.cert, key: tls.key }, clock: this.clock, logger: this.options.logger,
      callHandler: () => (payload) => this.serveCall(payload),
      services: this.services, clientCas: this.clientCas,
    });
    this.transport = transport;
    const node = await RaftNode.open({
      id: this.options.nodeId,
      dataDir: join(this.options.dir, 'raft'),
      transport: new AdvertTransport(transport),
      clock: this.clock,
      logger: this.options.logger,
      ...(this.options.tickMs ? { tickMs: this.options.tickMs } : {}),
      ...this.options.snapshots,
      ...(this.options.changeLog ? { changeLog: this.options.changeLog } : {}),
      ...(this.options.raftObserver ? { observer: this.options.raftObserver } : {}),
      ...(start.peers ? { peers: start.peers } : {}),
      ...(start.bootstrap ? { bootstrap: { voters: [this.options.nodeId], learners: [] } } : {}),
      address: encodeAdvert(this.advert),
    });
    this.node = node;
    this.storage.attach(node);
    // Whatever the core read before this node had storage, and whatever the log changes under
    // it from now on, must not be answered from its cache.
    this.core?.storageChanged();
    this.feed.attach(node);
    node.onLeaderChange(() => this.reconcile());
    // A cluster of one need not wait out an election timeout to lead again after a restart.
    const { voters } = node.status().conf;
    if (voters.length === 1 && voters[0] === this.options.nodeId && !node.isLeader) node.campaign();
    node.onRemoved(() => {
      this.options.logger.warn('this node was removed from the cluster');
      this.reconcile();
    });
    this.scheduleAutopilot();
  }

  /**
   * Serves a gRPC service on the cluster address, beside Raft, from now on: on the current
   * transport and on every one this node creates later (at start, init or join).
   */
  addService(definition: ExtraService['definition'], implementation: ExtraService['implementation']): void {
    this.services.push({ definition, implementation });
    this.transport?.addService(definition, implementation);
  }

  /**
   * Replaces the CAs (PEM) whose client certificates the cluster listener accepts besides the
   * cluster's own, at once and for every transport created later. Raft's services refuse
   * those clients whatever this list holds.
   */
  trustClientCas(pems: string[]): void {
    this.transport?.trustClientCas(pems);
    this.clientCas = [...pems];
  }

  /** The cluster CA (PEM) a client checks the cluster listener against; null before init or join. */
  clusterCa(): string | null {
    return this.tls?.caCert ?? null;
  }

  /** Port 0 (dev, tests): the advert must carry a real port before anyone dials it, so take a free one now. */
  private async settleListenPort(): Promise<void> {
    const { host, port } = this.options.listen;
    if (port === 0) this.options.listen = { host, port: await freePort(host) };
  }

  /** sys/init on a node of no cluster: it becomes a cluster of one, and the leader, first. */
  private async bootstrap(): Promise<void> {
    if (this.pendingJoin) throw new BadRequestError('this node is joining a cluster; unseal it with that cluster\'s keys instead of initializing it');
    if (!this.node) {
      await this.saveTls(await createClusterTls(this.clock));
      await this.startRaft({ bootstrap: true });
    }
    const node = this.node as RaftNode;
    if (!node.isLeader) node.campaign();
    await this.waitFor('this node to lead its new cluster', 10_000, () => node.isLeader);
    await node.readBarrier();
  }

  // ---- joining --------------------------------------------------------------------------

  async join(leaderApiAddr: string, options: { nonVoter: boolean; leaderTls?: LeaderTls; signal?: AbortSignal }): Promise<void> {
    const core = this.requireCore();
    const refuseMember = async () => {
      if (this.node || (await core.seal.initialized())) {
        throw new BadRequestError('this node already belongs to a cluster (or was initialized); only a new node can join');
      }
    };
    await refuseMember();
    const leaderTls = options.leaderTls ?? {};
    const reply = await this.callLeader(leaderApiAddr, 'sys/storage/raft/bootstrap/challenge', { server_id: this.options.nodeId }, leaderTls, options.signal);
    const data = reply['data'] as { challenge?: string; seal_config?: SealConfig; tls?: string; leader_id?: string; cluster_addr?: string; wrapped_root_key?: string } | undefined;
    if (!data?.challenge || !data.seal_config || !data.tls || !data.leader_id || !data.cluster_addr) {
      throw new BadRequestError(`the leader at ${leaderApiAddr} did not answer with a join challenge`);
    }
    // Cheap and early: a leader whose cluster_addr this node cannot even connect to is refused
    // before the operator unseals; unseal then checks it with the cluster's TLS.
    await reachable(hostPortOf(data.cluster_addr), PROBE_TIMEOUT_MS).catch((err: Error) => {
      throw new BadRequestError(`this node cannot reach the leader at its cluster_addr ${data.cluster_addr}: ${err.message}; the leader's cluster_addr must be an address the other members reach its cluster listener at`);
    });
    // An init (or another join that completed) may have happened while the leader answered.
    await refuseMember();
    this.pendingJoin = {
      leader: leaderApiAddr, challenge: Buffer.from(data.challenge, 'base64'), tls: Buffer.from(data.tls, 'base64'),
      leaderId: data.leader_id, leaderClusterAddr: hostPortOf(data.cluster_addr), nonVoter: options.nonVoter,
      leaderTls,
    };
    core.seal.useJoinConfig(data.seal_config, data.wrapped_root_key);
    this.options.logger.info(data.wrapped_root_key ? 'join pending: this node unseals itself through its auto seal' : 'join pending: unseal this node with the cluster\'s keys', { leader: leaderApiAddr });
  }

  /**
   * Runs inside unseal once the shares rebuilt a root key: proves it to the leader and joins.
   * Before the leader adds this node, each side reaches the other at its cluster address, so a
   * wrong cluster_addr fails here in seconds. Any failure leaves this node as it was before the
   * join (nothing stored, nothing pending): fix the cause and join again.
   */
  private async completeJoin(rootKey: Buffer): Promise<void> {
    const pending = this.pendingJoin;
    if (!pending) return;
    let answer: Buffer;
    let tls: ClusterTls;
    try {
      answer = openWithRootKey(rootKey, pending.challenge, CHALLENGE_PURPOSE);
      tls = JSON.parse(openWithRootKey(rootKey, pending.tls, TLS_PURPOSE).toString('utf8')) as ClusterTls;
    } catch {
      // Nothing happened yet: the join stays pending for the right keys.
      throw new BadRequestError('unseal failed: these keys are not the keys of the cluster this node is joining');
    }
    let added = false;
    try {
      await this.settleListenPort();
      let peers: Record<string, string>;
      let index: number;
      const probeListener = await this.listenForProbes(tls);
      try {
        await this.probe(probeListener, pending.leaderClusterAddr, pending.leaderId).catch((err: Error) => {
          throw new BadRequestError(`this node cannot reach the leader at its cluster_addr ${pending.leaderClusterAddr}: ${err.message}`);
        });
        // From here the leader may have added this node even if its reply never arrives (a time-out,
        // a cut link): unless the leader plainly refused (a 4xx), a failure asks it to withdraw us.
        const reply = await this.callLeader(pending.leader, 'sys/storage/raft/bootstrap/answer', {
          server_id: this.options.nodeId, answer: answer.toString('base64'), cluster_addr: this.advert.cluster,
          api_addr: this.advert.api, non_voter: pending.nonVoter,
        }, pending.leaderTls).catch((err: unknown) => {
          if (!(err instanceof LeaderRefusal && err.leaderStatus < 500)) added = true;
          throw err;
        });
        const data = reply['data'] as { peers?: Record<string, string>; index?: number } | undefined;
        if (!data?.peers) throw new BadRequestError(`the leader at ${pending.leader} did not accept the join`);
        peers = data.peers;
        index = data.index ?? 0;
        added = true;
      } finally {
        await probeListener.close();
      }
      this.tls = tls;
      this.apiCa = pending.leaderTls.ca;
      await this.startRaft({ peers });
      const node = this.node as RaftNode;
      // The keyring and the seal configuration arrive with the leader's log or snapshot; a large
      // snapshot may take a while, so only a leader gone silent ends the wait.
      const since = this.clock.now();
      await this.waitFor('the cluster\'s data to arrive from the leader', 10 * 60_000, () => {
        if (node.applied >= index) return true;
        const contact = node.status().lastContactMs[pending.leaderId];
        if ((contact ?? this.clock.now() - since) > JOIN_SILENCE_MS) {
          throw new BadRequestError(`the join failed: nothing heard from the leader (${pending.leaderId}, cluster_addr ${pending.leaderClusterAddr}) for ${JOIN_SILENCE_MS / 1000} s; check that the members reach each other's cluster_addr, then join again`);
        }
        return false;
      });
      // Stored last: until this file exists, a restart treats the Raft data as an unfinished join.
      await this.saveTls(tls);
      this.pendingJoin = null;
    } catch (err) {
      await this.abandonJoin(added);
      throw err;
    }
  }

  /** Undoes a failed join: this node becomes a new node again, and the leader drops it if it had added it. */
  private async abandonJoin(added: boolean): Promise<void> {
    const pending = this.pendingJoin;
    this.pendingJoin = null;
    this.core?.seal.forgetConfig();
    if (added && pending && this.transport) {
      await withTimeout(this.transport.call(pending.leaderClusterAddr, encodeControl({ kind: 'withdraw', id: this.options.nodeId })), PROBE_TIMEOUT_MS, 'the leader')
        .catch((err: Error) => this.options.logger.warn('could not ask the leader to remove this node after the failed join; remove it there with remove-peer', { err: err.message }));
    }
    const node = this.node;
    const transport = this.transport;
    this.node = null;
    this.transport = null;
    this.storage.attach(null);
    this.feed.attach(null);
    // Closing the node closes its transport; a transport whose node never opened is closed here.
    if (node) await node.close().catch(() => undefined);
    else await transport?.close();
    this.tls = null;
    this.auth = null;
    this.apiCa = undefined;
    await rm(join(this.options.dir, 'raft'), { recursive: true, force: true });
    await rm(join(this.options.dir, TLS_FILE), { force: true });
    this.core?.storageChanged();
    this.options.logger.warn('the join failed; this node is a new node again and can join once the cause is fixed');
  }

  /** A cluster listener that only answers probes: the leader checks this node's cluster_addr before adding it. */
  private async listenForProbes(tls: ClusterTls): Promise<GrpcTransport> {
    const { host, port } = this.options.listen;
    const transport = new GrpcTransport({
      id: this.options.nodeId, listen: `${host}:${port}`, tls: { ca: tls.caCert, cert: tls.cert, key: tls.key }, clock: this.clock, logger: this.options.logger,
      callHandler: () => async (payload) => {
        if (decodeControl(payload)?.kind !== 'probe') throw new Error('this node is still joining');
        return encodeControlAnswer(this.options.nodeId);
      },
    });
    await transport.start({ message: () => {}, snapshot: async () => {}, unreachable: () => {} });
    return transport;
  }

  /** Asks the member at `address` who it is; rejects unless `expected` answers in time. */
  private async probe(transport: GrpcTransport, address: string, expected: string): Promise<void> {
    const id = decodeControlAnswer(await withTimeout(transport.call(address, encodeControl({ kind: 'probe' })), PROBE_TIMEOUT_MS, address));
    if (id !== expected) throw new Error(`the node answering there is "${id}", not "${expected}"`);
  }

  /** Serves the calls of the other members: membership control here, forwarded requests by the dispatcher's handler. */
  private async serveCall(payload: Buffer): Promise<Buffer> {
    const control = decodeControl(payload);
    if (control === null) {
      const handler = this.callHandler;
      if (!handler) throw new Error('this member does not serve calls yet');
      return handler(payload);
    }
    switch (control.kind) {
      case 'probe':
        break;
      case 'echo':
        this.echoes.set(control.id, { at: this.clock.now(), sealed: control.sealed });
        break;
      case 'withdraw':
        await this.withdraw(control.id);
        break;
    }
    return encodeControlAnswer(this.options.nodeId);
  }

  /** On the leader: removes a learner whose join failed. A voter is never removed this way. */
  private async withdraw(id: string): Promise<void> {
    const node = this.node;
    if (!node?.isLeader) throw new Error('this node is not the leader');
    if (!node.status().conf.learners.includes(id)) return;
    await node.removeNode(id);
    this.options.logger.warn('removed a member whose join failed', { node_id: id });
  }

  async challenge(serverId: string): Promise<{ challenge: string; sealConfig: SealConfig; tls: string; leaderId: string; clusterAddr: string; wrappedRootKey: string | null }> {
    const core = this.requireActive();
    const sealConfig = await core.seal.sealConfig();
    if (!sealConfig) throw new SealedError();
    const answer = randomBytes(32);
    const now = this.clock.now();
    for (const [id, c] of this.challenges) if (c.expires < now) this.challenges.delete(id);
    // Anyone may ask (a joining node has no token yet): keep the newest few only.
    this.challenges.delete(serverId);
    while (this.challenges.size >= MAX_PENDING_CHALLENGES) this.challenges.delete(this.challenges.keys().next().value as string);
    this.challenges.set(serverId, { answer, expires: now + CHALLENGE_TTL_MS });
    // The TLS identity comes with the challenge, readable only with the root key (as the answer
    // proves anyway), so that the joining node can listen for the leader's probe before it is added.
    return {
      challenge: core.seal.sealForRootKeyHolder(answer, CHALLENGE_PURPOSE).toString('base64'), sealConfig,
      tls: core.seal.sealForRootKeyHolder(Buffer.from(JSON.stringify(this.tls)), TLS_PURPOSE).toString('base64'),
      leaderId: this.options.nodeId, clusterAddr: `https://${this.advert.cluster}`, wrappedRootKey: await core.seal.wrappedRootKey(),
    };
  }

  async answer(request: { serverId: string; answer: string; clusterAddr: string; apiAddr: string; nonVoter: boolean }): Promise<Record<string, unknown>> {
    this.requireActive();
    const node = this.node as RaftNode;
    const pending = this.challenges.get(request.serverId);
    const given = Buffer.from(request.answer, 'base64');
    if (!pending || pending.expires < this.clock.now() || given.length !== pending.answer.length || !timingSafeEqual(given, pending.answer)) {
      throw new BadRequestError('invalid join answer: ask for a new challenge (sys/storage/raft/join) and unseal with this cluster\'s keys');
    }
    this.challenges.delete(request.serverId);
    const status = node.status();
    if (status.conf.voters.includes(request.serverId) || status.conf.learners.includes(request.serverId)) {
      throw new ConflictError(`a member with node ID "${request.serverId}" already exists; remove it first (sys/storage/raft/remove-peer)`);
    }
    let cluster: string;
    try {
      cluster = hostPortOf(request.clusterAddr);
    } catch {
      throw new BadRequestError('invalid value for "cluster_addr": must be host:port or an https:// URL');
    }
    await this.probe(this.transport as GrpcTransport, cluster, request.serverId).catch((err: Error) => {
      throw new BadRequestError(`the leader cannot reach the joining node at its cluster_addr ${cluster}: ${err.message}; set cluster_addr to an address where the other members reach this node's cluster listener (the listener's cluster_address, by default the API port plus one)`);
    });
    const advert: Advert = { cluster, api: request.apiAddr, nonVoter: request.nonVoter };
    await node.addLearner(request.serverId, encodeAdvert(advert));
    this.options.logger.info('added a member as a non-voter; autopilot promotes it once it is healthy and stable', { node_id: request.serverId, cluster_addr: cluster });
    const peers: Record<string, string> = {};
    for (const [id, address] of Object.entries(node.status().addresses)) if (id !== request.serverId) peers[id] = address;
    return { peers, index: node.applied };
  }

  /**
   * POSTs to the leader's API. Over HTTPS the leader's certificate is checked against
   * `leader_ca_cert` when given (a private CA), else against the system's trust store, under
   * `leader_tls_servername` when given; a client certificate is offered when configured.
   */
  private async callLeader(leader: string, path: string, body: unknown, tls: LeaderTls, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const url = new URL(`${leader}/v1/${path}`);
    const payload = JSON.stringify(body);
    let status: number;
    let text: string;
    try {
      ({ status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const request = (url.protocol === 'https:' ? https : http).request(url, {
          method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
          timeout: 30_000, ...(signal ? { signal } : {}),
          ...(tls.ca ? { ca: tls.ca } : {}), ...(tls.cert ? { cert: tls.cert } : {}), ...(tls.key ? { key: tls.key } : {}),
          ...(tls.servername ? { servername: tls.servername } : {}),
        }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        });
        request.on('timeout', () => request.destroy(new Error('timed out')));
        request.on('error', reject);
        request.end(payload);
      }));
    } catch (err) {
      throw new BadRequestError(`could not reach the leader at ${leader}: ${(err as Error).message}`);
    }
    let parsed: Record<string, unknown> = {};
    try {
      parsed = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      // Reported below with the status.
    }
    if (status >= 400) {
      const errors = Array.isArray(parsed['errors']) ? (parsed['errors'] as string[]).join('; ') : `status ${status}`;
      throw new LeaderRefusal(`the leader at ${leader} refused: ${errors}`, status);
    }
    return parsed;
  }

  // ---- leadership -----------------------------------------------------------------------

  /**
   * Makes the core active exactly while this node leads (and has applied everything committed
   * before), a standby otherwise. Runs one step at a time; a failed activation retries.
   */
  get nodeId(): string {
    return this.options.nodeId;
  }

  /** Checks again whether the core should be active (the cluster's replication role changed). */
  refreshActive(): Promise<void> {
    this.reconcile();
    return this.reconciling;
  }

  /** Whether this node leads its Raft cluster (on a DR secondary, whose core is never active, the node that replicates). */
  get leads(): boolean {
    return this.node?.isLeader ?? false;
  }

  private reconcile(): void {
    this.reconciling = this.reconciling.then(() => this.reconcileNow()).catch(async (err: unknown) => {
      if (err instanceof SealedError && this.core && !this.core.sealed) {
        // The keyring no longer opens with our root key: nothing here can be served until an
        // operator unseals with the keys the data now needs.
        this.options.logger.error('sealing: this node cannot open the cluster\'s data', { err: err.message });
        await this.core.sealNow();
        return;
      }
      this.options.logger.error('could not change the active state; retrying', { err });
      this.retryTimer?.cancel();
      this.retryTimer = this.clock.setTimer(1000, () => this.reconcile());
    });
  }

  private async reconcileNow(): Promise<void> {
    const core = this.core;
    const node = this.node;
    if (!core || this.closed) return;
    // A DR secondary's core stays a standby on every node until the cluster is promoted.
    const leading = node !== null && node.isLeader && !core.drSecondary;
    // Active under an earlier term means the lead was lost and regained in between: another
    // leader may have changed anything this core holds in memory, so it starts over.
    if (core.active && (!leading || node.status().term !== this.activeTerm)) await core.deactivate();
    if (leading && !core.sealed && !core.active) {
      const { term } = node.status();
      await node.readBarrier();
      if (!node.isLeader || node.status().term !== term) return; // lost it meanwhile: another reconcile is queued
      this.activeTerm = term;
      await core.activate();
    }
  }

  // ---- autopilot ------------------------------------------------------------------------

  private scheduleAutopilot(): void {
    if (this.closed) return;
    this.autopilotTimer = this.clock.setTimer(this.options.tickMs ? this.options.tickMs * 5 : 500, () => {
      void this.autopilot()
        .catch((err: unknown) => this.options.logger.debug('autopilot round failed', { err: (err as Error).message }))
        .finally(() => this.scheduleAutopilot());
    });
  }

  /** On the leader: promotes the learner autopilot picks. On a follower: tells the leader whether this node is sealed. */
  private async autopilot(): Promise<void> {
    const node = this.node;
    if (!node) return;
    if (!node.isLeader) {
      this.autopilotRule.reset();
      this.echoes.clear();
      this.sendEcho(node);
      return;
    }
    this.autopilotRule.configure(await this.autopilotConfig(node));
    if (this.core?.sealed !== false) {
      await this.handOffLead(node);
      return;
    }
    const { promote } = this.assess(node.status());
    if (promote === null) return;
    try {
      await node.promote(promote);
      this.options.logger.info('autopilot: promoted a member to voter: it stayed healthy for server_stabilization_time', { node_id: promote });
    } catch (err) {
      this.options.logger.debug('promotion deferred', { node_id: promote, err: (err as Error).message });
    }
  }

  /**
   * A sealed leader serves nobody (an operator sealed it, it restarted, or it cannot open the
   * keyring its data now needs): it hands the lead to a voter that said lately that it is
   * unsealed, so that the cluster gets an active node without waiting for this one's keys.
   */
  private async handOffLead(node: RaftNode): Promise<void> {
    const now = this.clock.now();
    if (now < this.handOffAfter) return;
    const status = node.status();
    const within = this.autopilotDefaults.lastContactMs;
    const target = status.conf.voters.find((id) => {
      const echo = this.echoes.get(id);
      return id !== status.id && echo !== undefined && !echo.sealed && now - echo.at <= within;
    });
    if (!target) return;
    this.handOffAfter = now + HAND_OFF_PAUSE_MS;
    this.options.logger.warn('this node leads but is sealed: handing the lead to an unsealed voter', { node_id: target });
    await node.transferLeadership(target).catch((err: unknown) => {
      this.options.logger.debug('the lead was not handed off', { node_id: target, err: (err as Error).message });
    });
  }

  private async autopilotConfig(node: RaftNode): Promise<AutopilotConfig> {
    const stored = await node.get(AUTOPILOT_CONFIG_KEY);
    if (!stored) return this.autopilotDefaults;
    try {
      return { ...this.autopilotDefaults, ...(JSON.parse(stored.toString('utf8')) as Partial<AutopilotConfig>) };
    } catch {
      return this.autopilotDefaults;
    }
  }

  /** sys/storage/raft/autopilot/configuration, read: the thresholds in force, in Vault's words. */
  async autopilotConfiguration(): Promise<AutopilotSettings> {
    const config = await this.autopilotConfig(this.requireNode());
    return {
      cleanup_dead_servers: false, last_contact_threshold: `${config.lastContactMs / 1000}s`,
      max_trailing_logs: config.maxTrailingLogs, server_stabilization_time: `${config.stabilizationMs / 1000}s`,
    };
  }

  /** sys/storage/raft/autopilot/configuration, write: stored for every leader to come; unset fields keep their value. */
  setAutopilotConfiguration(change: Partial<AutopilotConfig>): Promise<void> {
    // One change at a time, so two updates of different fields do not undo each other.
    const run = this.autopilotWrites.then(async () => {
      this.requireActive();
      const node = this.requireNode();
      const next = { ...(await this.autopilotConfig(node)), ...change };
      await this.storage.put(AUTOPILOT_CONFIG_KEY, Buffer.from(JSON.stringify(next)));
      // Written beside the core's cache, not through it: the commit feed marks it this node's own.
      this.core?.storageChanged([AUTOPILOT_CONFIG_KEY]);
      this.autopilotRule.configure(next);
    });
    this.autopilotWrites = run.catch(() => undefined);
    return run;
  }

  private sendEcho(node: RaftNode): void {
    const transport = this.transport;
    const core = this.core;
    const advert = this.leaderAdvert(node);
    if (this.echoing || !transport || !core || !advert) return;
    this.echoing = true;
    const echo = encodeControl({ kind: 'echo', id: this.options.nodeId, sealed: core.sealed });
    void withTimeout(transport.call(advert.cluster, echo), PROBE_TIMEOUT_MS, 'the leader')
      .catch(() => undefined) // the leader judges silence; nothing to do here
      .finally(() => {
        this.echoing = false;
      });
  }

  private assess(status: ReturnType<RaftNode['status']>) {
    return this.autopilotRule.assess(this.memberViews(status), this.clock.now());
  }

  private memberViews(status: ReturnType<RaftNode['status']>): MemberView[] {
    const now = this.clock.now();
    const tickMs = this.options.tickMs ?? 100;
    const leading = status.role === 'leader';
    return [...status.conf.voters, ...status.conf.learners].map((id) => {
      const p = leading ? status.progress[id] : undefined;
      const echo = this.echoes.get(id);
      return {
        id, self: id === status.id, voter: status.conf.voters.includes(id),
        nonVoter: decodeAdvert(status.addresses[id])?.nonVoter ?? false,
        answered: p?.answered ?? false,
        contactMs: p ? p.ticksSinceContact * tickMs : Infinity,
        trailing: p ? Math.max(0, status.lastIndex - p.match) : Infinity,
        echo: echo ? { ageMs: now - echo.at, sealed: echo.sealed } : undefined,
      };
    });
  }

  // ---- sys/storage/raft -----------------------------------------------------------------

  configuration(): { index: number; servers: PeerView[] } {
    const node = this.requireNode();
    const status = node.status();
    const servers: PeerView[] = [...status.conf.voters, ...status.conf.learners].map((id) => ({
      node_id: id,
      address: decodeAdvert(status.addresses[id])?.cluster ?? '',
      leader: id === status.leader,
      voter: status.conf.voters.includes(id),
      protocol_version: '3',
    }));
    return { index: status.applied, servers };
  }

  async removePeer(id: string): Promise<void> {
    const node = this.requireNode();
    const status = node.status();
    if (!status.conf.voters.includes(id) && !status.conf.learners.includes(id)) throw new BadRequestError(`no member has node ID "${id}"`);
    if (status.conf.voters.length === 1 && status.conf.voters[0] === id) throw new BadRequestError('cannot remove the last voter of the cluster');
    if (status.role === 'leader' && !this.autopilotRule.keepsQuorumWithout(this.memberViews(status), id)) {
      throw new BadRequestError(`cannot remove "${id}": the voters left would lack a reachable quorum; bring the unreachable voters back, or remove those first`);
    }
    try {
      await node.removeNode(id);
    } catch (err) {
      if ((err as { name?: string }).name === 'ConfChangeError') throw new BadRequestError(`cannot remove "${id}" now: ${(err as Error).message}`);
      throw err;
    }
  }

  autopilotState(): AutopilotState {
    const node = this.requireNode();
    const status = node.status();
    const now = this.clock.now();
    // Only the leader's view is the cluster's; a follower's shows what it can, and logs nothing.
    const { members } = this.autopilotRule.assess(this.memberViews(status), now, { quiet: status.role !== 'leader' });
    const servers: Record<string, AutopilotServer> = {};
    for (const id of [...status.conf.voters, ...status.conf.learners]) {
      const voter = status.conf.voters.includes(id);
      const health = members.get(id);
      const contact = id === status.id ? 0 : status.lastContactMs[id];
      servers[id] = {
        id, name: id, address: decodeAdvert(status.addresses[id])?.cluster ?? '', node_status: 'alive',
        last_contact: contact === undefined ? '' : `${(contact / 1000).toFixed(3)}s`,
        last_term: status.term, last_index: id === status.id ? status.lastIndex : status.progress[id]?.match ?? 0,
        healthy: health?.healthy ?? false, stable_since: new Date(health?.healthySince ?? now).toISOString(),
        status: id === status.leader ? 'leader' : voter ? 'voter' : 'non-voter',
        version: '0.1.0', node_type: voter ? 'voter' : 'non-voter',
        reason: health?.reason ?? '',
      };
    }
    const voters = status.conf.voters;
    const healthyVoters = voters.filter((id) => servers[id]?.healthy).length;
    const quorum = Math.floor(voters.length / 2) + 1;
    return {
      healthy: Object.values(servers).every((s) => s.healthy), failure_tolerance: Math.max(0, healthyVoters - quorum),
      optimistic_failure_tolerance: Math.max(0, voters.length - quorum), leader: status.leader ?? '', voters,
      non_voters: status.conf.learners, servers,
    };
  }

  async snapshot(): Promise<Readable> {
    const node = this.requireNode();
    const out = new PassThrough();
    node.writeSnapshot(out).catch((err: unknown) => out.destroy(err as Error));
    return out;
  }

  /**
   * Replaces the cluster's data. Without force, the snapshot must have been taken with this
   * cluster's keys (its keyring opens with our root key), since otherwise nothing in it could be
   * read; with force it is restored anyway and the nodes seal, to be unsealed with its keys.
   */
  async restore(data: Readable, force: boolean): Promise<void> {
    const core = this.requireActive();
    const node = this.requireNode();
    const temp = join(this.options.dir, `restore-${randomBytes(8).toString('hex')}.snap`);
    try {
      await pipeline(data, (await openFile(temp, 'w', 0o600)).createWriteStream());
      let keyring: Buffer | null;
      try {
        keyring = await snapshotValue(createReadStream(temp), 'core/keyring');
      } catch (err) {
        throw new BadRequestError(`not a valid snapshot: ${(err as Error).message}`);
      }
      const sameKeys = keyring !== null && core.seal.opensKeyring(keyring);
      if (!sameKeys && !force) {
        throw new BadRequestError('the snapshot was taken with other unseal keys than this cluster\'s; restore it with snapshot-force, then unseal with the keys it was taken with');
      }
      await core.deactivate();
      try {
        await node.restoreSnapshot(createReadStream(temp));
      } finally {
        core.storageChanged();
        if (sameKeys) this.reconcile();
        else await core.sealNow();
      }
    } finally {
      await rm(temp, { force: true });
    }
  }

  /**
   * Every node checks, once a restore is applied, that its root key still opens the keyring;
   * a snapshot taken with other keys seals the whole cluster, to be unsealed with those.
   */
  private afterRestore(): void {
    const core = this.core;
    if (!core || core.sealed) return;
    void core.seal.reloadKeyring().catch(async (err: unknown) => {
      if (!(err instanceof SealedError) || core.sealed) return;
      this.options.logger.warn('sealing: the restored snapshot was taken with other unseal keys; unseal with those');
      await core.sealNow();
    });
  }

  // ---- helpers --------------------------------------------------------------------------

  private requireCore(): Core {
    if (!this.core) throw new Error('the cluster node has no core attached');
    return this.core;
  }

  private requireNode(): RaftNode {
    if (!this.node) throw new BadRequestError('this node does not belong to a cluster yet: initialize it or join it to one');
    return this.node;
  }

  private requireActive(): Core {
    const core = this.requireCore();
    if (!core.active || !this.node?.isLeader) throw new StandbyError('only the active node can do this; retry shortly');
    return core;
  }

  private async waitFor(what: string, timeoutMs: number, done: () => boolean): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      if (this.closed) throw new StandbyError('the server is shutting down');
      if (Date.now() > deadline) throw new StandbyError(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.retryJoin?.stop();
    this.retryTimer?.cancel();
    this.autopilotTimer?.cancel();
    await this.reconciling;
    await this.node?.close();
    this.node = null;
    this.transport = null;
    this.storage.attach(null);
    this.feed.attach(null);
  }
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once a TCP connection to `hostPort` opens (and closes it); rejects on error or after `timeoutMs`. */
function reachable(hostPort: string, timeoutMs: number): Promise<void> {
  const at = hostPort.lastIndexOf(':');
  const host = hostPort.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(hostPort.slice(at + 1));
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no connection within ${timeoutMs} ms`)));
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', (err: NodeJS.ErrnoException) => reject(new Error(err.code ?? err.message)));
  });
}
