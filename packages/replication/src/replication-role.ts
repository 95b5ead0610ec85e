import { randomUUID } from 'node:crypto';
import type { TxnOp } from '@strongroom/base';
import type { Check } from '@strongroom/raft';
import type { ClusterNode } from '@strongroom/cluster';
import { BadRequestError, NotFoundError, type Clock, type Core, type CoreReply, type Logger } from '@strongroom/core';
import { createActivationSigningKey, parseActivationJwt, signActivationJwt } from './activation/activation-jwt';
import { decryptForSecondary, encryptToSecondary, generateSecondaryKeyPair } from './activation/secondary-key';
import { fetchActivation, type ActivationMaterial } from './activation-fetch';
import {
  appliedKey, encodeJson, keypairKey, kindLabel, PERFORMANCE_LINK_KEY, PERFORMANCE_LINK_MARK_KEY, PERFORMANCE_SET_KEY, readApplied, readLive,
  readPerformanceLink, readPerformanceSet, readRoleState, stateKey,
  type PathsFilter, type PerformanceLink, type PrimaryLink, type PrimaryState, type ReplicationKind, type RoleState, type SecondaryState,
} from './role-state';
import { DR_SECONDARY_PATHS } from './role-paths';
import { classifyKey } from './key-space';
import type { MerkleView } from './merkle-view';
import type { ForwardedWrite } from './performance-core';
import { createReplicationCa, issueSecondaryCertificate } from './tls/replication-ca';
import type { RoleRuntime } from './role-runtime';

/** What a DR operation token is checked against; generated from the key shares (see the core's root generation). */
export interface OperationTokens {
  verify(token: string): Promise<boolean>;
  revoke(): Promise<void>;
}

export interface ReplicationRoleOptions {
  kind: ReplicationKind;
  core: Core;
  cluster: ClusterNode;
  logger: Logger;
  clock: Clock;
  merkle: MerkleView;
  /** DR only: promote, disable and update-primary of a DR secondary need one. */
  operationTokens?: OperationTokens;
  /** The other kind's role on this cluster, for what the two may not be at once. */
  other?: () => ReplicationRole | null;
}
/** Client certificates outlive their activation token: revoke-secondary is what cuts a secondary off. */
const CLIENT_CERT_VALIDITY_MS = 10 * 365 * 24 * 3600 * 1000;
/** Keys deleted per Raft entry when a new secondary's storage is wiped. */
const WIPE_BATCH = 512;
const SECONDARY_SEALED = new Set(DR_SECONDARY_PATHS);

/**
 * One kind of replication (DR or performance) of this cluster: its role (kept in the cluster's
 * own Raft store, so every node knows it and a new leader resumes it), the role changes of the
 * spec's table, and the runtime on the node that leads: the WAL service a primary offers, the
 * stream a secondary follows. The two kinds differ in what a secondary receives (DR: every
 * replicated key; performance: the shared ones its paths filter allows), in whether its core
 * serves (a performance secondary's does), and in the DR operation token.
 */
export class ReplicationRole {
  readonly kind: ReplicationKind;
  private readonly label: string;
  private state: RoleState = { mode: 'disabled' };
  private runtime: RoleRuntime | null = null;
  private readonly cluster: ClusterNode;
  private readonly core: Core;
  private readonly logger: Logger;
  private readonly clock: Clock;
  readonly merkle: MerkleView;
  private readonly tokens: OperationTokens | null;
  private readonly other: () => ReplicationRole | null;
  private primaryRootKey: Buffer | null = null;
  /** Role changes run one at a time. */
  private changing: Promise<unknown> = Promise.resolve();

  constructor(options: ReplicationRoleOptions) {
    this.kind = options.kind;
    this.label = kindLabel(options.kind);
    this.other = options.other ?? (() => null);
    this.cluster = options.cluster;
    this.core = options.core;
    this.logger = options.logger;
    this.clock = options.clock;
    this.merkle = options.merkle;
    this.tokens = options.operationTokens ?? null;
  }

  /** The runtime is built by the extension once the wire exists (it needs this object). */
  attachRuntime(runtime: RoleRuntime): void {
    this.runtime = runtime;
  }

  get current(): RoleState {
    return this.state;
  }

  mode(): 'disabled' | 'primary' | 'secondary' {
    return this.state.mode;
  }

  servesOnDrSecondary(path: string): boolean {
    return SECONDARY_SEALED.has(path);
  }

  /** Rereads the role from storage (at start, and whenever a committed change touched it). */
  async reload(): Promise<void> {
    const next = await readRoleState(this.cluster.storage, this.kind);
    const before = this.state.mode;
    this.state = next;
    this.runtime?.stateChanged(next);
    if (before !== next.mode) await this.cluster.refreshActive();
  }

  // ---- status -----------------------------------------------------------------------------

  async status(): Promise<Record<string, unknown>> {
    const s = this.state;
    const merkle = this.merkle.status();
    const common = {
      merkle_root: merkle.root, corrupted_merkle_tree: merkle.corrupted, last_reindex_epoch: merkle.lastReindexEpoch,
      last_corruption_check_epoch: merkle.lastCheckEpoch, ...(merkle.reindex ? { reindex_in_progress: true, reindex_stage: merkle.reindex.stage, reindex_keys_total: merkle.reindex.total, reindex_keys_done: merkle.reindex.done } : {}),
    };
    if (s.mode === 'disabled') return { mode: 'disabled' };
    // A node that does not run replication (a standby) answers from what the one that does last recorded.
    const recorded = this.cluster.leads ? null : await readLive(this.cluster.storage, this.kind).catch(() => null);
    if (s.mode === 'primary') {
      const lastWal = this.runtime?.lastWal() ?? 0;
      return {
        mode: 'primary', cluster_id: s.cluster_id, state: 'running', last_wal: lastWal, ...(this.kind === 'dr' ? { last_dr_wal: lastWal } : { last_performance_wal: lastWal }), ...common,
        primary_cluster_addr: s.primary_cluster_addr, known_secondaries: Object.keys(s.secondaries).sort(),
        secondaries: recorded?.secondaries ?? this.runtime?.secondaries() ?? [],
      };
    }
    const applied = await readApplied(this.cluster.storage, this.kind);
    const link = s.primary;
    const running = this.runtime?.secondaryStatus();
    const live = running ?? (recorded?.secondary ? {
      state: recorded.secondary.state, connectionState: recorded.secondary.connection_state, lastRemoteWal: undefined,
      primaryClusterAddr: recorded.secondary.primary_cluster_addr, lastStart: recorded.secondary.last_start, primaries: recorded.secondary.primaries,
    } : null);
    return {
      mode: 'secondary', cluster_id: s.own_cluster_id ?? s.cluster_id, secondary_id: s.secondary_id,
      state: live?.state ?? 'idle', connection_state: live?.connectionState ?? 'disconnected',
      last_remote_wal: live?.lastRemoteWal ?? (link && applied?.wal_source === link.wal_source ? applied.last_wal ?? applied.index : 0),
      ...common,
      known_primary_cluster_addrs: link?.cluster_addrs ?? [],
      primary_cluster_addr: live?.primaryClusterAddr ?? link?.cluster_addrs[0] ?? '',
      last_start: live?.lastStart ?? '',
      merkle_sync_count: s.merkle_sync_count,
      primaries: live?.primaries ?? [],
    };
  }

  // ---- primary ----------------------------------------------------------------------------

  enablePrimary(options: { primaryClusterAddr: string }): Promise<string[]> {
    return this.serial(async () => {
      const s = this.state;
      if (s.mode === 'primary') throw new BadRequestError(`this cluster is already a ${this.label} primary`);
      if (s.mode === 'secondary') throw new BadRequestError(`this cluster is a ${this.label} secondary: promote it, or disable it first`);
      // A DR secondary serves nothing, so it is no primary of any kind; a performance secondary may be a DR primary.
      if (this.other()?.mode() === 'secondary' && this.kind === 'performance') throw new BadRequestError('this cluster is a DR secondary: promote it, or disable it first');
      if (options.primaryClusterAddr !== '') checkAddress(options.primaryClusterAddr, 'primary_cluster_addr');
      await this.write(await this.newPrimary(randomUUID(), options.primaryClusterAddr));
      return [`This cluster is now a ${this.label} primary. Issue a secondary token (primary/secondary-token) for each ${this.label} secondary.`];
    });
  }

  private async newPrimary(clusterId: string, primaryClusterAddr: string): Promise<PrimaryState> {
    const ca = await createReplicationCa();
    const jwt = createActivationSigningKey();
    return {
      mode: 'primary', cluster_id: clusterId, wal_source: randomUUID(), primary_cluster_addr: primaryClusterAddr,
      ca_cert: ca.caCert, ca_key: ca.caKey, jwt_key: jwt.privateKey, secondaries: {},
    };
  }

  demote(): Promise<string[]> {
    return this.serial(async () => {
      const s = this.requirePrimary();
      const { mode: _mode, ...kept } = s;
      const next: SecondaryState = {
        mode: 'secondary', cluster_id: s.cluster_id, secondary_id: '', primary: null, demoted: true, merkle_sync_count: 0, kept_primary: kept,
      };
      const performance = this.kind === 'dr' ? this.other() : null;
      let stopped: string[] = [];
      if (performance) stopped = await performance.stopForDrSecondary((ops) => this.write(next, { extra: ops }));
      else await this.write(next);
      return [`This cluster is now a ${this.label} secondary with no primary: give it a new primary with secondary/update-primary and a secondary token.`, ...stopped];
    });
  }

  disablePrimary(): Promise<string[]> {
    return this.serial(async () => {
      this.requirePrimary();
      await this.write({ mode: 'disabled' });
      return [`${capitalized(this.label)} replication is disabled: the secondaries can no longer connect, and enabling it again gives a new cluster ID.`];
    });
  }

  secondaryToken(options: { id: string; ttlSeconds: number; publicKey: string }): Promise<Record<string, unknown>> {
    return this.serial(async () => {
      const s = this.requirePrimary();
      if (!/^[A-Za-z0-9._-]{1,128}$/.test(options.id)) {
        throw new BadRequestError('invalid value for "id": use 1 to 128 letters, digits, ".", "_" or "-"');
      }
      const now = this.clock.now();
      const existing = s.secondaries[options.id];
      if (existing && (existing.activated || existing.expires_at > now)) {
        throw new BadRequestError(`invalid value for "id": a secondary with ID "${options.id}" already exists; revoke it first (primary/revoke-secondary)`);
      }
      const caCert = this.cluster.clusterCa();
      if (!caCert) throw new BadRequestError('this node does not belong to a cluster yet');
      const client = await issueSecondaryCertificate({ caCert: s.ca_cert, caKey: s.ca_key }, options.id, CLIENT_CERT_VALIDITY_MS);
      const secondaryClusterId = this.kind === 'performance' ? randomUUID() : undefined;
      const rootKey = await this.core.seal.rootKeyForSecondary();
      const material: ActivationMaterial = {
        kind: this.kind,
        secondary_id: options.id,
        ...(secondaryClusterId ? { secondary_cluster_id: secondaryClusterId } : {}),
        primary: {
          cluster_id: s.cluster_id, wal_source: s.wal_source, cluster_addrs: this.primaryClusterAddrs(s),
          api_addr: this.cluster.advert.api, ca_cert: caCert, cert: client.cert, key: client.key,
        },
        ...(rootKey ? { root_key: rootKey.toString('base64') } : {}),
      };
      rootKey?.fill(0);
      const record = {
        id: options.id, ...(secondaryClusterId ? { cluster_id: secondaryClusterId } : {}), fingerprint: client.fingerprint, issued_at: now, expires_at: now + options.ttlSeconds * 1000, activated: false,
      };
      let reply: Record<string, unknown>;
      if (options.publicKey !== '') {
        let sealed: string;
        try {
          sealed = encryptToSecondary(options.publicKey, encodeJson(material));
        } catch {
          throw new BadRequestError('invalid value for "secondary_public_key": not a public key made by secondary/generate-public-key');
        }
        reply = { request_id: randomUUID(), lease_id: '', renewable: false, lease_duration: 0, data: { token: sealed, id: options.id }, wrap_info: null, warnings: null, auth: null };
        await this.write({ ...s, secondaries: { ...s.secondaries, [options.id]: record } });
      } else {
        const wrapped = await this.core.wrapping.wrap({ status: 200, body: { data: material } }, `sys/replication/${this.kind}/primary/secondary-token`, options.ttlSeconds);
        const body = wrapped.body as { wrap_info: Record<string, unknown> };
        const info = body.wrap_info;
        const jwt = signActivationJwt(s.jwt_key, {
          addr: this.cluster.advert.api, exp: Math.floor(now / 1000) + options.ttlSeconds, iat: Math.floor(now / 1000), jti: String(info['token']), type: 'wrapping', kind: this.kind,
        });
        reply = { ...body, wrap_info: { ...info, token: jwt } };
        await this.write({ ...s, secondaries: { ...s.secondaries, [options.id]: { ...record, wrap_accessor: String(info['accessor']) } } });
      }
      return reply;
    });
  }

  revokeSecondary(id: string): Promise<void> {
    return this.serial(async () => {
      const s = this.requirePrimary();
      const record = s.secondaries[id];
      if (!record) throw new BadRequestError(`invalid value for "id": no secondary has ID "${id}"`);
      const { [id]: _gone, ...rest } = s.secondaries;
      const { [id]: _filter, ...filters } = s.paths_filters ?? {};
      await this.write({ ...s, secondaries: rest, ...(s.paths_filters ? { paths_filters: filters } : {}) });
      if (record.wrap_accessor && !record.activated) {
        const entry = await this.core.tokens.lookupByAccessor(record.wrap_accessor);
        if (entry) await this.core.tokens.revokeTree(entry.hash);
      }
      this.runtime?.disconnect(id);
    });
  }

  // ---- performance secondary ------------------------------------------------------------

  /** A write the core could not run here (it touches shared keys): the primary runs it, and its reply is the client's. */
  async forwardWrite(request: ForwardedWrite): Promise<CoreReply> {
    if (this.state.mode !== 'secondary') throw new BadRequestError(`this cluster is not a ${this.label} secondary`);
    const answer = await this.requireRuntime().forwardWrite(request);
    if (answer.warnings.length === 0) return { status: answer.status, body: answer.body };
    const body = answer.body && typeof answer.body === 'object' && !Array.isArray(answer.body) ? answer.body as Record<string, unknown> : {};
    const earlier = Array.isArray(body['warnings']) ? body['warnings'] as unknown[] : [];
    return { status: answer.status === 204 ? 200 : answer.status, body: { ...body, warnings: [...earlier, ...answer.warnings] } };
  }

  /** The paths filter the primary has for this secondary, as it last said (null: none, or not known yet). */
  secondaryFilter(): PathsFilter | null {
    if (this.state.mode !== 'secondary') throw new BadRequestError(`this cluster is not a ${this.label} secondary`);
    return this.runtime?.pathsFilter() ?? null;
  }

  // ---- performance primary: paths filters -------------------------------------------------

  /** A performance secondary's paths filter; 404 when it has none. */
  /** A secondary named by its ID or, for a performance secondary, by the cluster ID its status shows. */
  private secondaryIdOf(s: PrimaryState, id: string): string | null {
    if (s.secondaries[id]) return id;
    return Object.values(s.secondaries).find((r) => r.cluster_id === id)?.id ?? null;
  }

  pathsFilter(idOrCluster: string): PathsFilter {
    const s = this.requirePrimary();
    const id = this.secondaryIdOf(s, idOrCluster) ?? idOrCluster;
    const filter = s.paths_filters?.[id];
    if (!filter) throw new NotFoundError(`no paths filter for secondary "${id}"`);
    return filter;
  }

  /** Creates or replaces a filter; the secondary's streams restart with a Merkle sync (see the runtime). */
  setPathsFilter(idOrCluster: string, filter: PathsFilter): Promise<void> {
    return this.serial(async () => {
      const s = this.requirePrimary();
      const id = this.secondaryIdOf(s, idOrCluster);
      if (!id) throw new BadRequestError(`invalid value for "id": no secondary has ID or cluster ID "${idOrCluster}"`);
      await this.write({ ...s, paths_filters: { ...(s.paths_filters ?? {}), [id]: filter } });
    });
  }

  deletePathsFilter(idOrCluster: string): Promise<void> {
    return this.serial(async () => {
      const s = this.requirePrimary();
      const id = this.secondaryIdOf(s, idOrCluster) ?? idOrCluster;
      if (!s.paths_filters?.[id]) return;
      const { [id]: _gone, ...rest } = s.paths_filters;
      await this.write({ ...s, paths_filters: rest });
    });
  }

  /** The filter a secondary has, for dynamic-filter on the primary (null: it gets everything); 400 for an unknown secondary. */
  filterOf(idOrCluster: string): PathsFilter | null {
    const s = this.requirePrimary();
    const id = this.secondaryIdOf(s, idOrCluster);
    if (!id) throw new BadRequestError(`invalid value for "id": no secondary has ID or cluster ID "${idOrCluster}"`);
    return s.paths_filters?.[id] ?? null;
  }

  /** The addresses a secondary is told to dial: the operator's (a load balancer), else every member's. */
  private primaryClusterAddrs(s: PrimaryState): string[] {
    if (s.primary_cluster_addr !== '') return [stripScheme(s.primary_cluster_addr)];
    const own = this.cluster.advert.cluster;
    const members = this.cluster.configuration().servers.map((m) => m.address).filter((a) => a !== '' && a !== own);
    return [own, ...members];
  }

  private requirePrimary(): PrimaryState {
    if (this.state.mode !== 'primary') throw new BadRequestError(`this cluster is not a ${this.label} primary`);
    return this.state;
  }

  // ---- secondary --------------------------------------------------------------------------

  async generatePublicKey(): Promise<string> {
    const pair = generateSecondaryKeyPair();
    await this.cluster.storage.put(keypairKey(this.kind), encodeJson(pair));
    return pair.publicKey;
  }

  enableSecondary(options: { token: string; primaryApiAddr: string; caFile: string; caPath: string }): Promise<string[]> {
    return this.serial(async () => {
      if (this.state.mode === 'secondary') throw new BadRequestError(`this cluster is already a ${this.label} secondary`);
      if (this.state.mode === 'primary') throw new BadRequestError(`this cluster is a ${this.label} primary: demote or disable it first`);
      const other = this.other();
      if (other?.mode() === 'secondary') throw new BadRequestError(`this cluster is a ${kindLabel(other.kind)} secondary: disable it first`);
      // A DR secondary takes over from its primary alone: it cannot keep serving performance secondaries meanwhile.
      if (this.kind === 'dr' && other?.mode() === 'primary') throw new BadRequestError('this cluster is a performance primary: disable it first');
      const material = await this.openToken(options);
      await this.activate(material);
      const next: SecondaryState = {
        mode: 'secondary', cluster_id: material.primary.cluster_id, secondary_id: material.secondary_id, primary: material.primary,
        ...(material.secondary_cluster_id ? { own_cluster_id: material.secondary_cluster_id } : {}),
        demoted: false, merkle_sync_count: 0, wipe_pending: true,
      };
      // The role first: the core stops serving before its data goes away under it.
      await this.write(next);
      await this.wipeNow();
      // After the wipe: until then this cluster's own keyring is stored, which the primary's root key does not open.
      const autoSealed = material.root_key !== undefined && (await this.core.seal.wrapForThisCluster(Buffer.from(material.root_key, 'base64')));
      this.logger.info(`this cluster is now a ${this.label} secondary; its data is being replaced by the primary's`, { secondary_id: material.secondary_id });
      return [`This cluster is now a ${this.label} secondary: its data was cleared and is being copied from the primary. ${autoSealed
        ? 'Its own seal keeps unsealing it; the primary\'s recovery keys are its recovery keys from now on.'
        : 'From now on it unseals with the primary\'s keys.'}`];
    });
  }

  promote(options: { operationToken: unknown; primaryClusterAddr: string; force: boolean }): Promise<string[]> {
    return this.serial(async () => {
      const s = await this.requireSecondaryWithToken(options.operationToken);
      if (options.primaryClusterAddr !== '') checkAddress(options.primaryClusterAddr, 'primary_cluster_addr');
      if (!options.force && !s.demoted && !(await readApplied(this.cluster.storage, this.kind))) {
        throw new BadRequestError('this secondary has not copied the primary\'s data yet; wait for it (status shows stream-wals), or set "force"');
      }
      // Mid-sync, part of the data is newer than the rest: promoting then serves a mix.
      const syncing = this.runtime?.secondaryStatus()?.state;
      if (!options.force && (syncing === 'merkle-diff' || syncing === 'merkle-sync')) {
        throw new BadRequestError(`this secondary is in ${syncing}: its data is partly copied; wait for stream-wals, or set "force"`);
      }
      await this.takePrimaryRootKey();
      const kept = s.kept_primary;
      const next = kept && kept.cluster_id === s.cluster_id
        ? { mode: 'primary' as const, ...kept, wal_source: randomUUID(), secondaries: {}, primary_cluster_addr: options.primaryClusterAddr }
        : { ...(await this.newPrimary(s.cluster_id, options.primaryClusterAddr)) };
      await this.write(next);
      // The performance primary's address is not the DR one the caller may have named.
      const joined = this.kind === 'dr' ? await this.other()?.adoptPerformanceRole('') ?? [] : [];
      return [`This cluster is now the ${this.label} primary: issue new secondary tokens to the other secondaries of the set.`, ...joined];
    });
  }

  disableSecondary(operationToken: unknown): Promise<string[]> {
    return this.serial(async () => {
      await this.requireSecondaryWithToken(operationToken);
      await this.takePrimaryRootKey();
      // A cluster of its own belongs to no performance set: the copies of its former primary's
      // role must not make a later DR secondary of it take that role over.
      const copies = [PERFORMANCE_SET_KEY, PERFORMANCE_LINK_KEY, PERFORMANCE_LINK_MARK_KEY].map((key): TxnOp => ({ type: 'delete', key }));
      await this.write({ mode: 'disabled' }, { extra: this.kind === 'dr' ? copies : [] });
      return [`${capitalized(this.label)} replication is disabled on this cluster: it serves the data it holds as a cluster of its own.`];
    });
  }

  updatePrimary(options: {
    operationToken: unknown; token?: string; addrs?: string[]; primaryApiAddr: string; caFile: string; caPath: string;
  }): Promise<string[]> {
    return this.serial(async () => {
      const s = await this.requireSecondaryWithToken(options.operationToken);
      if (options.token !== undefined && options.token !== '' && options.addrs !== undefined) {
        throw new BadRequestError('"token" and "update_primary_addrs" cannot be used together');
      }
      if (options.addrs !== undefined) {
        if (s.demoted) throw new BadRequestError('"update_primary_addrs" is not allowed on a cluster demoted after a failover: use a secondary token from the new primary');
        if (!s.primary) throw new BadRequestError('"update_primary_addrs" needs a known primary: use a secondary token');
        if (options.addrs.length === 0) throw new BadRequestError('invalid value for "update_primary_addrs": give at least one address');
        for (const a of options.addrs) checkAddress(a, 'update_primary_addrs');
        const link = s.primary;
        const picked = await this.requireRuntime().pickPrimary(link, options.addrs.map(stripScheme));
        await this.write({ ...s, primary: { ...link, cluster_addrs: [picked, ...options.addrs.map(stripScheme).filter((a) => a !== picked)] } });
        return [`This secondary now reaches its primary at ${picked}.`];
      }
      if (options.token === undefined) throw new BadRequestError('missing required field "token" (or "update_primary_addrs")');
      if (options.token === '') {
        await this.write({ ...s, primary: null });
        return ['This secondary no longer knows a primary.'];
      }
      const material = await this.openToken({ token: options.token, primaryApiAddr: options.primaryApiAddr, caFile: options.caFile, caPath: options.caPath });
      if (material.primary.cluster_id !== s.cluster_id) {
        throw new BadRequestError('invalid value for "token": it is for another replication set; disable this secondary and enable it with the token instead');
      }
      await this.activate(material);
      await this.write({
        ...s, secondary_id: material.secondary_id, primary: material.primary, demoted: false, kept_primary: undefined,
        ...(material.secondary_cluster_id ? { own_cluster_id: material.secondary_cluster_id } : {}),
      });
      return ['This secondary now follows the primary that issued the token; it catches up with a Merkle sync where its data differs.'];
    });
  }

  async deleteOperationToken(operationToken: unknown): Promise<void> {
    await this.requireSecondaryWithToken(operationToken);
    await this.tokens?.revoke();
  }

  async reindex(operationToken: unknown, options: { diff: boolean; force: boolean; skipFlush: boolean }): Promise<Record<string, unknown>> {
    await this.requireSecondaryWithToken(operationToken);
    return this.merkle.reindex(options);
  }

  async merkleCheck(operationToken: unknown): Promise<Record<string, unknown>> {
    await this.requireSecondaryWithToken(operationToken);
    return this.merkle.check();
  }

  /**
   * The root key rebuilt from the primary's shares while a DR operation token was generated here:
   * the core needs it to open the primary's keyring once this cluster serves.
   */
  offerRootKey(rootKey: Buffer): void {
    this.primaryRootKey?.fill(0);
    this.primaryRootKey = Buffer.from(rootKey);
  }

  /** Before this cluster serves: the core must hold the root key its (the primary's) keyring opens with. */
  private async takePrimaryRootKey(): Promise<void> {
    if (this.core.sealed) throw new BadRequestError('this node is sealed: unseal it with the primary\'s keys first');
    if (await this.core.seal.holdsStoredRootKey()) return;
    if (this.primaryRootKey && (await this.core.seal.adoptRootKey(this.primaryRootKey))) return;
    if (await this.core.seal.adoptAutoSealedRootKey()) return;
    throw new BadRequestError('this node does not hold the primary\'s root key yet: generate the DR operation token on this node (it rebuilds the key from the shares), or restart and unseal it with the primary\'s keys');
  }

  /** A DR secondary's changes need a DR operation token; a performance secondary's do not (its core serves and authorizes them). */
  private async requireSecondaryWithToken(token: unknown): Promise<SecondaryState> {
    if (this.state.mode !== 'secondary') throw new BadRequestError(`this cluster is not a ${this.label} secondary`);
    const state = this.state;
    if (!this.tokens) return state;
    if (typeof token !== 'string' || token === '') throw new BadRequestError('missing required field "dr_operation_token"');
    if (!(await this.tokens.verify(token))) throw new BadRequestError('invalid value for "dr_operation_token": not a valid DR operation token');
    return this.state;
  }

  /** Opens an activation token: a wrapped one at the primary's API, an encrypted one with this cluster's key. */
  private async openToken(options: { token: string; primaryApiAddr: string; caFile: string; caPath: string }): Promise<ActivationMaterial> {
    const { token } = options;
    if (token.split('.').length === 3) {
      const claims = parseActivationJwt(token);
      this.requireOwnKind(claims.kind ?? 'dr');
      if (claims.exp * 1000 < this.clock.now()) throw new BadRequestError('invalid value for "token": the activation token has expired');
      return fetchActivation({ addr: options.primaryApiAddr || claims.addr, wrappingToken: claims.jti, caFile: options.caFile, caPath: options.caPath });
    }
    const raw = await this.cluster.storage.get(keypairKey(this.kind));
    if (!raw) throw new BadRequestError('invalid value for "token": not an activation token (and no key was made with secondary/generate-public-key)');
    const pair = JSON.parse(raw.toString('utf8')) as { privateKey: string };
    let opened: Buffer;
    try {
      opened = decryptForSecondary(pair.privateKey, token);
    } catch {
      throw new BadRequestError('invalid value for "token": not an activation token for this cluster');
    }
    const material = parseMaterial(opened);
    this.requireOwnKind(material.kind ?? 'dr');
    return material;
  }

  /** A token of the other kind is refused before anything spends it. */
  private requireOwnKind(kind: ReplicationKind): void {
    if (kind === this.kind) return;
    throw new BadRequestError(`invalid value for "token": it is a ${kindLabel(kind)} secondary token; use it with sys/replication/${kind}/secondary/enable`);
  }


  /** The first call with the new certificate, which spends the activation: used, expired or revoked is refused here. */
  private async activate(material: ActivationMaterial): Promise<void> {
    await this.requireRuntime().activate(material.primary, this.cluster.advert);
  }

  private requireRuntime(): RoleRuntime {
    if (!this.runtime) throw new BadRequestError('replication is not running on this node');
    return this.runtime;
  }

  /** Finishes a wipe that an enable left pending (its node lost the lead or stopped midway). */
  resumeWipe(): Promise<void> {
    return this.serial(async () => {
      if (this.state.mode === 'secondary' && this.state.wipe_pending) await this.wipeNow();
    });
  }

  /** The wipe, then the role without the pending mark, which lets the stream start. */
  private async wipeNow(): Promise<void> {
    await this.wipe();
    const s = this.state;
    if (s.mode === 'secondary') await this.write({ ...s, wipe_pending: false });
  }

  /** Deletes every replicated key (all but this cluster's own), a Raft entry per batch. */
  private async wipe(): Promise<void> {
    const keys: string[] = [];
    const walk = async (prefix: string): Promise<void> => {
      for (const child of await this.cluster.storage.list(prefix)) {
        const key = prefix + child;
        if (child.endsWith('/')) await walk(key);
        else if (classifyKey(key) !== null) keys.push(key);
      }
    };
    await walk('');
    for (let i = 0; i < keys.length; i += WIPE_BATCH) {
      await this.cluster.storage.txn(keys.slice(i, i + WIPE_BATCH).map((key): TxnOp => ({ type: 'delete', key })));
    }
    await this.cluster.storage.delete(appliedKey(this.kind));
  }

  // ---- storage ----------------------------------------------------------------------------

  /**
   * Stores the role, with `extra` ops in the same Raft entry; every node (this one included)
   * picks it up from the commit feed.
   */
  private async write(next: RoleState, options: { extra?: TxnOp[] } = {}): Promise<void> {
    const checks: Check[] = [];
    const ops: TxnOp[] = [{ type: 'put', key: stateKey(this.kind), value: encodeJson(next) }, ...this.copyOps(next), ...(options.extra ?? [])];
    await this.cluster.storage.checkAndSet(checks, ops);
    await this.reload();
  }

  /**
   * Performance: the copies a DR secondary of this cluster needs to take the role over (the
   * primary's set, a secondary's link) follow every write of the role, and go when it ends.
   */
  private copyOps(next: RoleState): TxnOp[] {
    if (this.kind !== 'performance') return [];
    const ops: TxnOp[] = [];
    if (next.mode === 'primary') {
      const { mode: _mode, ...set } = next;
      ops.push({ type: 'put', key: PERFORMANCE_SET_KEY, value: encodeJson(set) });
    } else if (this.state.mode === 'primary') {
      ops.push({ type: 'delete', key: PERFORMANCE_SET_KEY });
    }
    // Until its wipe is done, a new secondary's copy would only be deleted by it.
    if (next.mode === 'secondary' && next.primary && !next.wipe_pending) {
      const link: PerformanceLink = {
        cluster_id: next.cluster_id, ...(next.own_cluster_id ? { own_cluster_id: next.own_cluster_id } : {}), secondary_id: next.secondary_id,
        primary: next.primary, merkle_sync_count: next.merkle_sync_count,
      };
      ops.push({ type: 'put', key: PERFORMANCE_LINK_KEY, value: encodeJson(link) });
    } else if (this.state.mode === 'secondary') {
      ops.push({ type: 'delete', key: PERFORMANCE_LINK_KEY }, { type: 'delete', key: PERFORMANCE_LINK_MARK_KEY });
    }
    return ops;
  }

  /**
   * Performance, as this cluster becomes a DR secondary (a DR demotion): a DR secondary acts in
   * no performance role, so the role ends in the same Raft entry as the DR one (`writeDr` writes
   * it with the ops given). A primary's streams end with its trust in the set's CA; a
   * secondary's stream stops, so the primary never has it from two clusters. The copies stay:
   * they are what the DR stream gives this cluster from now on, and what a failback takes over.
   */
  stopForDrSecondary(writeDr: (ops: TxnOp[]) => Promise<void>): Promise<string[]> {
    return this.serial(async () => {
      const was = this.state.mode;
      if (this.kind !== 'performance' || was === 'disabled') {
        await writeDr([]);
        return [];
      }
      await writeDr([{ type: 'put', key: stateKey(this.kind), value: encodeJson({ mode: 'disabled' }) }]);
      await this.reload();
      return [`Its performance ${was} role stopped: a DR secondary acts in no performance role; promoted again, it takes the role over from what the DR stream gives it.`];
    });
  }

  /**
   * Called on the performance role once a DR promotion made this cluster a DR primary: it takes
   * over the performance role of the DR primary it replaced, from the copy the DR stream gave it.
   *
   * A performance primary's set: this cluster becomes its performance primary. Same cluster ID,
   * CA and paths filters; a new WAL source (another Raft log), so the secondaries catch up by
   * Merkle sync; each needs a new secondary token from here (update-primary), since its
   * credentials were for the old cluster.
   *
   * A performance secondary's link: this cluster becomes that secondary, with the same identity
   * (the primary already knows its certificate), from the mark its former primary had applied;
   * the data that mark describes came with it, in the same DR entries.
   */
  adoptPerformanceRole(primaryClusterAddr: string): Promise<string[]> {
    return this.serial(async () => {
      if (this.kind !== 'performance' || this.state.mode !== 'disabled') return [];
      const set = await readPerformanceSet(this.cluster.storage);
      if (set) {
        const secondaries = Object.fromEntries(Object.entries(set.secondaries).map(([id, r]) => [id, { ...r, activated: false, expires_at: 0 }]));
        await this.write({ ...set, mode: 'primary', wal_source: randomUUID(), primary_cluster_addr: primaryClusterAddr, secondaries });
        return [`This cluster is now also the performance primary of its former primary's set (${Object.keys(secondaries).length} known secondaries): issue each a new secondary token here, for secondary/update-primary.`];
      }
      const copy = await readPerformanceLink(this.cluster.storage);
      if (!copy) return [];
      const { link, mark } = copy;
      const next: SecondaryState = {
        mode: 'secondary', cluster_id: link.cluster_id, ...(link.own_cluster_id ? { own_cluster_id: link.own_cluster_id } : {}),
        secondary_id: link.secondary_id, primary: link.primary, demoted: false, merkle_sync_count: link.merkle_sync_count,
      };
      const key = appliedKey(this.kind);
      await this.write(next, { extra: [mark ? { type: 'put', key, value: mark } : { type: 'delete', key }] });
      return [`This cluster is now also the performance secondary "${link.secondary_id}" its former primary was: it follows that performance primary with the same secondary token, from where its former primary stopped.`];
    });
  }

  /** Records a Merkle sync the runtime did (status counts them). */
  async countMerkleSync(): Promise<void> {
    const s = this.state;
    if (s.mode !== 'secondary') return;
    await this.write({ ...s, merkle_sync_count: s.merkle_sync_count + 1 });
  }

  /** Records what a secondary told the primary about itself when it connected. */
  async recordActivation(id: string, fingerprint: string, where: { api_address: string; cluster_address: string; node_id: string }): Promise<void> {
    await this.serial(async () => {
      const s = this.requirePrimary();
      const record = s.secondaries[id];
      if (!record || record.fingerprint !== fingerprint) throw new BadRequestError('unknown secondary');
      if (record.activated) throw new BadRequestError('this activation token was already used');
      if (record.expires_at < this.clock.now()) throw new BadRequestError('this activation token has expired');
      await this.write({ ...s, secondaries: { ...s.secondaries, [id]: { ...record, activated: true, ...where } } });
    });
  }

  private serial<T>(run: () => Promise<T>): Promise<T> {
    const next = this.changing.then(run);
    this.changing = next.catch(() => undefined);
    return next;
  }
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function stripScheme(addr: string): string {
  return addr.replace(/^[a-z]+:\/\//i, '').replace(/\/+$/, '');
}

function checkAddress(addr: string, field: string): void {
  const bare = stripScheme(addr);
  if (!/^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/.test(bare)) throw new BadRequestError(`invalid value for "${field}": expected host:port (optionally with https://)`);
}

function parseMaterial(raw: Buffer): ActivationMaterial {
  try {
    const m = JSON.parse(raw.toString('utf8')) as ActivationMaterial;
    if (typeof m.secondary_id === 'string' && m.primary && typeof (m.primary as PrimaryLink).cluster_id === 'string') return m;
  } catch {
    // refused below
  }
  throw new BadRequestError('invalid value for "token": not an activation token');
}

export { parseMaterial };

/**
 * Reads each role's state again, each on its own: a role whose state cannot be read (a failed
 * storage read, a damaged record) keeps the state it had and is logged, and the other is read.
 * Answers the kinds that could not be read.
 */
export async function reloadRoles(roles: ReadonlyArray<Pick<ReplicationRole, 'kind' | 'reload'>>, logger: Logger): Promise<string[]> {
  const failed: string[] = [];
  for (const role of roles) {
    await role.reload().catch((err: unknown) => {
      failed.push(role.kind);
      logger.error('could not read this cluster\'s replication role', { kind: role.kind, err: (err as Error).message });
    });
  }
  return failed;
}

/** The first wait before a role that could not be read is read again; it doubles up to the longest. */
export const ROLE_RETRY_FIRST_MS = 1000;
export const ROLE_RETRY_LONGEST_MS = 30_000;

/**
 * Reads the roles whenever asked, one reading at a time, then runs `after` (whatever follows
 * the roles' modes). A role that could not be read is read again after a wait (1 s, doubling up
 * to 30 s) until it is: otherwise a storage error at start would leave a DR or performance
 * secondary disabled, and not replicating, until someone changed its state again.
 */
export class RoleReloader {
  private reading: Promise<void> = Promise.resolve();
  private retry: { cancel(): void } | null = null;
  private wait = ROLE_RETRY_FIRST_MS;
  private closed = false;

  constructor(
    private readonly roles: ReadonlyArray<Pick<ReplicationRole, 'kind' | 'reload'>>,
    private readonly options: { logger: Logger; clock: Clock; after: () => void },
  ) {}

  /** Queues a reading; resolves when it and what follows it are done. Never rejects. */
  reload(): Promise<void> {
    this.reading = this.reading.then(async () => {
      if (this.closed) return;
      const failed = await reloadRoles(this.roles, this.options.logger);
      // Closed meanwhile: the index was suspended for the shutdown and must stay so.
      if (this.closed) return;
      this.scheduleRetry(failed);
      this.options.after();
    }).catch((err: unknown) => {
      this.options.logger.error('could not apply this cluster\'s replication roles', { err: (err as Error).message });
    });
    return this.reading;
  }

  /** Ends the retries; resolves once a reading in progress is done (nothing follows it). */
  close(): Promise<void> {
    this.closed = true;
    this.retry?.cancel();
    this.retry = null;
    return this.reading;
  }

  private scheduleRetry(failed: string[]): void {
    // A reading asked for meanwhile (a state change) takes the pending retry's place; the wait
    // goes back to the first only once every role reads.
    this.retry?.cancel();
    this.retry = null;
    if (failed.length === 0) {
      this.wait = ROLE_RETRY_FIRST_MS;
      return;
    }
    const wait = this.wait;
    this.wait = Math.min(this.wait * 2, ROLE_RETRY_LONGEST_MS);
    this.options.logger.warn('reading the replication role again later', { kinds: failed, in_ms: wait });
    this.retry = this.options.clock.setTimer(wait, () => {
      this.retry = null;
      void this.reload();
    });
  }
}
