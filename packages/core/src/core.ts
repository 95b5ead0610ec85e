import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { CommitSubscription, CommittedChange } from '@strongroom/base';
import { systemClock, type Clock, type TimerHandle } from './clock';
import {
  BadRequestError, NotFoundError, NotInitializedError, PermissionDeniedError, SealedError, StandbyError, UnsupportedOperationError,
} from './errors';
import { Backend, type PathMatch } from './framework/backend';
import type { EngineFactory } from './framework/engine';
import type { BackendRequest, BackendResponse, Caller, MountSettings, Operation, PathDefinition } from './framework/types';
import { createLogger, type Logger } from './logger';
import { BUILTIN_TYPES, DATA_PREFIX, type MountEntry, type MountTable, type TableKind } from './mounts/mount-table';
import { checkParameters } from './policy/acl';
import type { PolicyStore } from './policy-store';
import { NamespaceRegistry, type NamespaceView } from './namespaces/namespace-registry';
import type { ACL } from './policy/acl';
import { Barrier } from './seal/barrier';
import { AutoUnsealLoop } from './seal/auto-unseal-loop';
import { SEAL_STORAGE_KEYS, SealManager, type SealSetup } from './seal/seal-manager';
import { PrefixedStorage } from './storage/logical';
import { CachedStorage } from './storage/cached-storage';
import type { Storage } from './storage/storage';
import { systemPaths } from './system/paths';
import { TokenGeneration } from './system/root-generation';
import { tokenPaths } from './token/paths';
import type { TokenEntry } from './token/token-entry';
import { rootTokenFields, TokenStore } from './token/token-store';
import { AuditBroker } from './audit/broker';
import { auditAuthOf, auditErrorOf, auditResponseOf, auditWrapInfoOf } from './audit/from-core';
import type { AuditRequestInput } from './audit/types';
import { IdentityStore } from './identity/identity-store';
import { identityPaths } from './identity/paths';
import { issueLoginToken } from './login';
import { buildEnvelope } from './envelope';
import { describeChange, type LogicalChange } from './logical-change';
import { ResponseWrapper } from './wrapping';
import { ExpirationManager } from './expiration/expiration-manager';
import type { LeaseEntry } from './expiration/lease-entry';
import { scopeOf, type KeyScope } from './replication/key-scope';
import {
  checkForwardable, currentWriteScope, FORWARDED_CALLER, inWriteScope, isSharedWriteRefusal, LocalRequestNotForwarded, SharedWriteRefused, staysLocal,
  type ForwardedWrite, type WriteScope,
} from './replication/forwarding';
import { WriteGuard } from './storage/write-guard';
import { AUDIT_TABLE_KEY } from './audit/broker';
import { dataPrefix, NAMESPACE_RECORD_PREFIX } from './namespaces/namespace-registry';
import { ROOT_POLICY_PREFIX } from './policy-store';

/** Vault's defaults: 32 days for both the default and the maximum lease TTL. */
export const SYSTEM_DEFAULT_TTL = 32 * 24 * 3600;
export const SYSTEM_MAX_TTL = 32 * 24 * 3600;

export const VERSION = '1.17.0+strongroom.0.1.0';

export interface CoreOptions {
  storage: Storage;
  clock?: Clock;
  logger?: Logger;
  engines?: EngineFactory[];
  clusterName?: string;
  /** Reported by health and used as the storage type in seal status. */
  storageType?: string;
  /** Set when the storage is shared by a cluster: unseal then leaves the node a standby until `activate`. */
  ha?: HaHooks;
  /**
   * The commit feed of a storage that others also write (a cluster's): the cache forgets what
   * each committed change touched, but for this core's own writes still in flight.
   */
  commits?: CommitSubscription;
  /**
   * Features built on the core (the cluster's raft paths, automated snapshots...): more `sys/`
   * paths, and work that runs while this node is active. The one way to add either.
   */
  extensions?: Array<(core: Core) => CoreExtension>;
  /** An auto-unseal seal (and one left disabled for a migration); without one, Shamir unseal keys. */
  seals?: SealSetup;
}

/** What an extension adds: its `sys/` paths (matched after the built-in ones) and its background work. */
export interface CoreExtension {
  systemPaths?: PathDefinition[];
  /** Of its paths, the ones a sealed node, a node before init or a standby answers itself, like `sys/unseal`. */
  sealedPaths?: string[];
  service?: BackgroundService;
}

/** The replication roles of this node's cluster, as health and the DR secondary gate read them. */
export interface ReplicationRoles {
  drMode(): 'disabled' | 'primary' | 'secondary';
  performanceMode(): 'disabled' | 'primary' | 'secondary';
  /** Whether a DR secondary serves `path` (its own endpoints); every other path is refused there. */
  servesOnDrSecondary(path: string): boolean;
  /**
   * Set on a performance secondary: a request whose handler tried to write a shared key is
   * handed here (nothing of that write was stored) and its answer is the client's.
   */
  forwardWrite?(request: ForwardedWrite): Promise<CoreReply>;
}

/** Paths every DR secondary serves, besides the replication package's own. */
const DR_SECONDARY_PATHS = new Set(['sys/health', 'sys/seal-status', 'sys/unseal', 'sys/leader']);

/** Who leads the cluster, as `sys/leader` and health report it. */
export interface LeaderInfo {
  self: boolean;
  apiAddress: string;
  clusterAddress: string;
}

/**
 * How a clustered storage takes part in the core's lifecycle. With HA, only the node the storage
 * elects serves requests and runs background work (it is "active"); the others are standbys
 * that answer health, seal status and unseal, and leave the rest to the active node.
 */
export interface HaHooks {
  leader(): LeaderInfo | null;
  /** Runs before sys/init writes anything (a new cluster is created here). */
  beforeInit?(): Promise<void>;
  /** Runs when the shares rebuilt a root key, before the keyring is read (a pending join completes here). */
  beforeUnseal?(rootKey: Buffer): Promise<void>;
  /** The node is now an unsealed standby; the storage layer activates it if it leads. */
  unsealed?(): void;
}

/** A request as the HTTP layer hands it over: operation already mapped from the method. */
export interface CoreRequest {
  operation: Operation;
  /** Without `/v1/` and without a leading slash. */
  path: string;
  data: Record<string, unknown>;
  token?: string;
  remoteAddress?: string;
  headers?: Record<string, string | undefined>;
  /** Seconds: wrap the reply in a single-use token with this TTL. */
  wrapTtl?: number;
  /** A binary body, handed to the backend unread (snapshot uploads). */
  body?: Readable;
  /**
   * Filled in as the request is routed, for the caller's request metrics: the type of the mount
   * that serves it and the operation the ACL saw (a write resolved to create or update). Left
   * as given when the request never reached a mount.
   */
  route?: RequestRoute;
}

export interface RequestRoute {
  mountType: string;
  operation: Operation | '';
}

/** Work that runs only while this node is active: started on activation, stopped before it ends. */
export interface BackgroundService {
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface CoreReply {
  status: number;
  body: unknown;
}

/** How often mounts' background work runs (see `Backend.periodic`). */
export const PERIODIC_INTERVAL_MS = 60_000;

/** Paths that answer while sealed or before init, and on a standby; everything else is 503. */
const SEALED_PATHS = ['sys/init', 'sys/seal-status', 'sys/unseal', 'sys/health', 'sys/leader'];

/**
 * Paths of the server as a whole, which Vault serves outside its namespaces: they ignore
 * X-Vault-Namespace, so a client with VAULT_NAMESPACE set can still unseal, seal and check
 * health. (Under a namespace path prefix they are a different path, refused as restricted.)
 */
const NAMESPACE_FREE_PATHS = new Set([...SEALED_PATHS, 'sys/seal']);
/** A leading slash is rare: the HTTP layer strips it, so most paths skip the regex that removes it. */
const SLASH = 0x2f;

/** Where a mount is, as what it issued names it (tokens by auth path, leases by API path). */
interface MountedAt {
  kind: TableKind;
  /** In its table, without `auth/`. */
  path: string;
  /** With its namespace and `auth/` (`team/auth/names/`). */
  apiPath: string;
  namespaceId: string;
}

interface Routed {
  entry: MountEntry;
  kind: TableKind;
  backend: Backend;
  /** The mount's full API path (`secret/`, `auth/token/`). */
  apiPath: string;
  relative: string;
}

/**
 * The heart of the server: seal state, the mount tables, tokens and policies, and the request
 * pipeline (route to a mount, resolve the caller, check the ACL, run the backend, build the
 * envelope). It knows nothing of HTTP; the API layer maps methods and bodies onto `handle`.
 */
export class Core {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly barrier: Barrier;
  readonly seal: SealManager;
  readonly tokens: TokenStore;
  readonly namespaces: NamespaceRegistry;
  readonly audit: AuditBroker;
  readonly identity: IdentityStore;
  private readonly identityBackend: Backend;
  readonly clusterName: string;
  readonly storageType: string;
  /** Engines by kind, then type: a secrets engine and an auth method may share a type name (`cloud1`). */
  private readonly engines = { secret: new Map<string, EngineFactory>(), auth: new Map<string, EngineFactory>() };
  readonly wrapping = new ResponseWrapper(this, SYSTEM_MAX_TTL);
  readonly expiration: ExpirationManager;
  /** `sys/generate-root`: its attempt lives in memory on the active node and ends when it stops serving. */
  readonly rootGeneration: TokenGeneration;
  private readonly instances = new Map<string, Backend>();
  private readonly systemBackend: Backend;
  private readonly tokenBackend: Backend;
  clusterId = '';
  readonly ha: HaHooks | null;
  /** Set by the replication package: this cluster's roles. Without it, replication is disabled. */
  replication: ReplicationRoles | null = null;
  private readonly physical: CachedStorage;
  private readonly sealedPaths: Set<string>;
  private unsealedAt = 0;
  private ready = false;
  /** Activation and deactivation run one at a time, in the order asked. */
  private transition: Promise<void> = Promise.resolve();
  private periodicTimer: TimerHandle | null = null;
  private periodicRun: Promise<void> | null = null;
  private readonly services: BackgroundService[];
  private autoUnsealLoop: AutoUnsealLoop | null = null;
  /**
   * UUIDs of the mounts enabled with `local`, brought up to date on the first use after a table
   * changed. A disabled mount's UUID stays: its data is deleted after its entry, and stays local.
   */
  private readonly localMounts = new Set<string>();
  private localMountsStale = true;
  private readonly localStorageOf = (uuid: string): readonly string[] | undefined => this.instances.get(uuid)?.localStorage;
  /** `sharedChanged` reloads run one at a time, in order. */
  private reloads: Promise<void> = Promise.resolve();

  constructor(options: CoreOptions) {
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? createLogger({ name: 'core' });
    const physical = new CachedStorage(options.storage);
    this.physical = physical;
    options.commits?.subscribe((changes) => this.forgetChanged(changes));
    this.barrier = new Barrier(new WriteGuard(physical, {
      guarding: () => this.performanceSecondary,
      check: (key) => this.guardWrite(key),
    }));
    this.seal = new SealManager(physical, this.barrier, this.clock, options.seals ?? {});
    this.tokens = new TokenStore(this.barrier, this.clock, this.logger);
    this.namespaces = new NamespaceRegistry(this.barrier, () => {
      this.localMountsStale = true;
    });
    this.audit = new AuditBroker({
      storage: this.barrier, logger: this.logger, clock: this.clock, sharedTableIsForeign: () => this.performanceSecondary,
    });
    this.identity = new IdentityStore(new PrefixedStorage(this.barrier, 'sys/identity/'), {
      clock: this.clock,
      // An alias shows its auth method's current path, also after a remount.
      mounts: (accessor) => {
        for (const view of this.namespaces.all()) {
          const e = view.auths.all().find((m) => m.accessor === accessor);
          if (e) return { type: e.type, path: `${view.path}auth/${e.path}` };
        }
        return undefined;
      },
    });
    this.identityBackend = new Backend('identity', identityPaths(this.identity));
    this.clusterName = options.clusterName ?? 'strongroom-cluster';
    this.storageType = options.storageType ?? 'raft';
    for (const e of options.engines ?? []) this.engines[e.kind].set(e.type, e);
    this.expiration = new ExpirationManager(this.barrier, this.clock, this.logger, { resolve: (lease) => this.leaseTarget(lease) });
    this.tokens.onRevoked = (hash) => this.expiration.revokeByToken(hash);
    this.ha = options.ha ?? null;
    this.rootGeneration = new TokenGeneration({
      shares: this.seal, what: 'root token', rootToken: true,
      issue: async () => (await this.tokens.create(rootTokenFields(this.clock.now()))).id,
    });
    const extensions = (options.extensions ?? []).map((extend) => extend(this));
    this.sealedPaths = new Set([...SEALED_PATHS, ...extensions.flatMap((e) => e.sealedPaths ?? [])]);
    this.services = extensions.flatMap((e) => (e.service ? [e.service] : []));
    this.systemBackend = new Backend('system', [
      ...systemPaths(this), ...extensions.flatMap((e) => e.systemPaths ?? []),
    ]);
    this.tokenBackend = new Backend('token', tokenPaths(this));
  }

  /**
   * Without HA: sealed until the barrier is open and the tables, policies and tokens are loaded.
   * With HA: sealed until the barrier is open; an unsealed node that is not active is a standby.
   */
  get sealed(): boolean {
    return this.ha ? this.barrier.sealed : !this.ready;
  }

  /** Unsealed but not serving: another node is (or will be) active. */
  get standby(): boolean {
    return !this.sealed && !this.ready;
  }

  /** Serving requests and running background work. */
  get active(): boolean {
    return this.ready;
  }

  /**
   * Committed changes reach the cache here. A change this core's own write still awaits passes
   * through the cache with that write; any other (another leader's entry, a follower's apply, a
   * write whose caller gave up) was made behind its back.
   */
  private forgetChanged(changes: readonly CommittedChange[]): void {
    for (const change of changes) {
      if ('restored' in change) this.storageChanged();
      else if (!change.own) this.storageChanged(change.ops.map((op) => op.key));
    }
  }

  /**
   * Someone other than this core changed the physical storage (a restore, a node that now has
   * storage): forget the cached copies of `keys`, or of everything.
   */
  storageChanged(keys?: Iterable<string>): void {
    const list = keys ? [...keys] : undefined;
    this.physical.invalidate(list);
    // A migration on another node changes the seal under a sealed one.
    if (!list || list.some((k) => SEAL_STORAGE_KEYS.includes(k))) this.seal.forgetConfig();
  }

  /**
   * The logical reading of a committed change: whose data each write is, and what its engine
   * makes of it. Needs the barrier open and the mount tables loaded (the active node); a write
   * to a mount that no longer exists has no `mount`.
   */
  logicalChange(change: CommittedChange): LogicalChange {
    return describeChange(
      change,
      (uuid) => {
        for (const view of this.namespaces.all()) {
          for (const [kind, table] of [['secret', view.mounts], ['auth', view.auths]] as const) {
            const entry = table.byUuid(uuid);
            if (entry) return { namespace: view.path, entry, kind };
          }
        }
        return undefined;
      },
      (key, value) => this.barrier.decrypt(key, value),
      (kind, type) => this.engines[kind].get(type)?.describeChange,
    );
  }

  /** Paths a sealed node or a standby answers itself. */
  isLocalPath(path: string): boolean {
    return this.sealedPaths.has(path);
  }

  get activeSince(): number {
    return this.unsealedAt;
  }

  /** The root namespace's tables and policies. */
  get mounts(): MountTable {
    return this.namespaces.root.mounts;
  }

  get auths(): MountTable {
    return this.namespaces.root.auths;
  }

  get policies(): PolicyStore {
    return this.namespaces.root.policies;
  }

  /** The namespace a request runs in. */
  viewOf(req: BackendRequest): NamespaceView {
    const view = this.namespaces.byId(req.namespace.id);
    if (!view) throw new NotFoundError(`namespace "${req.namespace.path}" does not exist`);
    return view;
  }

  /** Adds the built-in mounts and policies every namespace has. */
  async setupNamespace(view: NamespaceView): Promise<void> {
    await view.mounts.add(builtinMount('sys/', 'system', 'system endpoints used for control, policy and debugging'), { builtin: true });
    await view.auths.add(builtinMount('token/', 'token', 'token based credentials'), { builtin: true });
    if (view.isRoot) await view.mounts.add(builtinMount('identity/', 'identity', 'identity store'), { builtin: true });
    await view.policies.setup();
    for (const [kind, table] of [['secret', view.mounts], ['auth', view.auths]] as const) {
      for (const entry of table.all()) this.instantiate(kind, entry);
    }
  }

  // ---- lifecycle ------------------------------------------------------------------------

  /**
   * Creates the root key, the built-in mounts and policies, and a root token; leaves it sealed
   * under Shamir, and unseals it through the auto seal when there is one (as Vault does).
   */
  async initialize(
    shares: number, threshold: number, rootTokenId?: string, recovery?: { shares?: number; threshold?: number },
  ): Promise<{ keys: Buffer[]; recoveryKeys: Buffer[]; rootToken: string }> {
    if (await this.seal.initialized()) throw new BadRequestError('server is already initialized');
    await this.ha?.beforeInit?.();
    const { keys, recoveryKeys } = await this.seal.initialize({
      secretShares: shares, secretThreshold: threshold,
      ...(recovery?.shares !== undefined ? { recoveryShares: recovery.shares } : {}),
      ...(recovery?.threshold !== undefined ? { recoveryThreshold: recovery.threshold } : {}),
    });
    let rootToken: string;
    try {
      await this.barrier.put('core/cluster', Buffer.from(JSON.stringify({ id: randomUUID(), name: this.clusterName })));
      await this.namespaces.root.load();
      await this.setupNamespace(this.namespaces.root);
      await this.tokens.setup();
      const { id } = await this.tokens.create(rootTokenFields(this.clock.now()), rootTokenId);
      await this.seal.commitInitialization();
      rootToken = id;
    } finally {
      this.tokens.stop();
      this.instances.clear();
      this.namespaces.clear();
      this.seal.seal();
    }
    if (this.seal.configuredAutoSeal) {
      // The init stands either way; an unseal that fails here is retried by the auto-unseal loop.
      await this.autoUnseal().catch((err: unknown) => this.logger.error('auto-unseal after init failed', { err: (err as Error).message }));
    }
    return { keys, recoveryKeys, rootToken };
  }

  /** Submits one unseal key share (the stored seal's, with `migrate`); when the threshold is met the server comes up. */
  async unseal(share: Buffer, migrate = false): Promise<void> {
    const wasSealed = this.barrier.sealed;
    const done = await this.seal.submitShare(share, this.ha?.beforeUnseal?.bind(this.ha), migrate);
    if (!done || !wasSealed) return;
    if (migrate) this.logger.info('seal migration done', { seal: (await this.seal.sealConfig())?.type });
    await this.afterUnseal();
  }

  /** Unseals through the configured auto seal; false when already unsealed. */
  async autoUnseal(): Promise<boolean> {
    const done = await this.seal.unsealWithAutoSeal(this.ha?.beforeUnseal?.bind(this.ha));
    if (!done) return false;
    this.logger.info('unsealed through the auto seal', { seal: this.seal.configuredAutoSeal?.type });
    await this.afterUnseal();
    return true;
  }

  private async afterUnseal(): Promise<void> {
    if (this.ha) {
      this.unsealedAt = 0;
      this.logger.info('unsealed as a standby');
      this.ha.unsealed?.();
      return;
    }
    await this.activate();
  }

  /**
   * Loads the tables, tokens and leases and starts serving and background work. With HA the
   * storage layer calls it when this node becomes the leader (and has applied everything
   * committed before); without HA, unseal does.
   */
  activate(): Promise<void> {
    const run = this.transition.then(() => (this.ready || this.barrier.sealed ? undefined : this.load()));
    this.transition = run.catch(() => undefined);
    return run;
  }

  /** Stops serving and background work and forgets what was loaded; the barrier stays open. */
  deactivate(): Promise<void> {
    const run = this.transition.then(async () => {
      if (!this.ready) return;
      await this.unload();
      this.logger.info('standby');
    });
    this.transition = run.catch(() => undefined);
    return run;
  }

  private async load(): Promise<void> {
    // Another node may have written everything (even the keyring) since this one last served.
    this.physical.invalidate();
    if (this.ha) await this.seal.reloadKeyring();
    try {
      const cluster = await this.barrier.get('core/cluster');
      this.clusterId = cluster ? (JSON.parse(cluster.toString('utf8')) as { id: string }).id : '';
      await this.namespaces.load();
      // Servers initialized before the identity store existed get its mount on first unseal.
      if (!this.mounts.get('identity/')) await this.mounts.add(builtinMount('identity/', 'identity', 'identity store'), { builtin: true });
      await this.policies.setup();
      await this.tokens.setup();
      for (const view of this.namespaces.all()) {
        for (const [kind, table] of [['secret', view.mounts], ['auth', view.auths]] as const) {
          for (const entry of table.all()) this.instantiate(kind, entry);
        }
      }
      await this.expiration.start();
      await this.audit.load();
      this.unsealedAt = this.clock.now();
      this.ready = true;
      this.schedulePeriodic();
      for (const service of this.services) await service.start();
      this.logger.info(this.ha ? 'active' : 'unsealed', { cluster_id: this.clusterId });
    } catch (err) {
      if (this.ha) await this.unload();
      else await this.sealNow();
      throw err;
    }
  }

  /** Stops serving and background work and forgets everything loaded; the barrier stays as it is. */
  private async unload(): Promise<void> {
    this.ready = false;
    this.rootGeneration.reset();
    for (const service of this.services) {
      await service.stop().catch((err: unknown) => this.logger.error('stopping a background service failed', { err }));
    }
    this.periodicTimer?.cancel();
    this.periodicTimer = null;
    await this.periodicRun;
    await this.audit.clear();
    this.expiration.stop();
    this.tokens.stop();
    this.instances.clear();
    this.namespaces.clear();
    this.physical.invalidate();
    this.unsealedAt = 0;
  }

  async sealNow(): Promise<void> {
    await this.transition;
    await this.unload();
    this.seal.seal();
    this.logger.info('sealed');
  }

  /**
   * Starts unsealing this node through its auto seal whenever it is sealed and can be (the
   * server calls it once storage is up); without an auto seal it does nothing.
   */
  startAutoUnseal(): void {
    if (!this.seal.configuredAutoSeal) return;
    this.autoUnsealLoop ??= new AutoUnsealLoop({
      due: () => this.seal.canAutoUnseal(), unseal: () => this.autoUnseal(), clock: this.clock, logger: this.logger,
    });
    this.autoUnsealLoop.start();
  }

  async close(): Promise<void> {
    await this.autoUnsealLoop?.stop();
    this.seal.close();
    if (!this.barrier.sealed) await this.sealNow();
    await this.barrier.physical.close();
  }

  // ---- mounts ---------------------------------------------------------------------------

  instantiate(kind: TableKind, entry: MountEntry): Backend {
    let backend: Backend;
    if (entry.type === 'system') backend = this.systemBackend;
    else if (entry.type === 'token') backend = this.tokenBackend;
    else if (entry.type === 'identity') backend = this.identityBackend;
    else {
      const factory = this.engineOf(kind, entry.type);
      if (!factory) throw new BadRequestError(`plugin not found in the catalog: ${entry.type}`);
      backend = factory.create({ clock: this.clock, logger: this.logger });
    }
    this.instances.set(entry.uuid, backend);
    return backend;
  }

  /** The engine that serves mounts of `type` in a table of `kind`, if there is one. */
  engineOf(kind: TableKind, type: string): EngineFactory | undefined {
    return this.engines[kind].get(type);
  }

  /** The backend serving the mount with this UUID, if it is mounted. */
  backendOf(uuid: string): Backend | undefined {
    return this.instances.get(uuid);
  }

  dropInstance(uuid: string): void {
    this.instances.delete(uuid);
  }

  mountStorage(kind: TableKind, entry: MountEntry): PrefixedStorage {
    if (entry.type === 'system' || entry.type === 'token') return new PrefixedStorage(this.barrier, '');
    return new PrefixedStorage(this.barrier, `${DATA_PREFIX[kind]}${entry.uuid}/`);
  }

  mountSettings(kind: TableKind, entry: MountEntry): MountSettings {
    return {
      path: kind === 'auth' ? `auth/${entry.path}` : entry.path,
      type: entry.type,
      accessor: entry.accessor,
      uuid: entry.uuid,
      // A mount tuned to a lower maximum than the system default TTL caps its default too.
      defaultLeaseTtl: Math.min(entry.config.default_lease_ttl || SYSTEM_DEFAULT_TTL, entry.config.max_lease_ttl || SYSTEM_MAX_TTL),
      maxLeaseTtl: entry.config.max_lease_ttl || SYSTEM_MAX_TTL,
      options: entry.options,
    };
  }

  /** A request context for work core starts itself (lease revocation, periodic work). */
  private internalRequest(view: NamespaceView, kind: TableKind, entry: MountEntry, path: string): BackendRequest {
    return {
      id: randomUUID(), operation: 'delete', path, mount: this.mountSettings(kind, entry),
      storage: this.mountStorage(kind, entry), data: {}, headers: {}, namespace: { id: view.id, path: view.path },
    };
  }

  /** The backend and a request context for a lease's mount, found by UUID (mounts can move). */
  private leaseTarget(lease: LeaseEntry): { backend: Backend; req: BackendRequest } | null {
    for (const view of this.namespaces.all()) {
      const table = lease.mountKind === 'auth' ? view.auths : view.mounts;
      const entry = table.byUuid(lease.mountUuid);
      const backend = entry ? this.instances.get(entry.uuid) : undefined;
      if (!entry || !backend) continue;
      return { backend, req: this.internalRequest(view, lease.mountKind, entry, lease.path) };
    }
    return null;
  }

  private schedulePeriodic(): void {
    this.periodicTimer = this.clock.setTimer(PERIODIC_INTERVAL_MS, () => {
      this.periodicRun = this.runPeriodic().finally(() => {
        this.periodicRun = null;
        if (this.ready) this.schedulePeriodic();
      });
    });
  }

  /**
   * Runs every mount's background work once; one mount's failure does not stop the others. A
   * performance secondary leaves replicated mounts' work to the primary, whose writes stream here.
   */
  async runPeriodic(): Promise<void> {
    for (const view of this.namespaces.all()) {
      for (const [kind, table] of [['secret', view.mounts], ['auth', view.auths]] as const) {
        for (const entry of table.all()) {
          const backend = this.instances.get(entry.uuid);
          if (!backend || !this.ready) continue;
          if (this.performanceSecondary && !entry.local && !BUILTIN_TYPES.has(entry.type)) continue;
          try {
            await backend.periodic(this.internalRequest(view, kind, entry, ''));
          } catch (err) {
            this.logger.error('periodic work of a mount failed', { mount: view.path + entry.path, err });
          }
        }
      }
    }
  }

  private route(view: NamespaceView, path: string): Routed | null {
    if (path.startsWith('auth/')) {
      const rest = path.slice(5);
      const entry = view.auths.find(rest);
      if (!entry) return null;
      const backend = this.instances.get(entry.uuid);
      if (!backend) return null;
      return { entry, kind: 'auth', backend, apiPath: `auth/${entry.path}`, relative: rest.slice(entry.path.length) };
    }
    const entry = view.mounts.find(path);
    if (!entry) return null;
    const backend = this.instances.get(entry.uuid);
    if (!backend) return null;
    return { entry, kind: 'secret', backend, apiPath: entry.path, relative: path.slice(entry.path.length) };
  }

  // ---- performance replication ----------------------------------------------------------

  /**
   * Whether a performance secondary gets `key` (shared) or each cluster keeps its own (local:
   * tokens, leases, cubbyholes, local mounts' table entries and data, what engines keep local).
   */
  replicationScope(key: string): KeyScope {
    if (this.localMountsStale) {
      this.localMountsStale = false;
      for (const view of this.namespaces.all()) {
        for (const table of [view.mounts, view.auths]) for (const e of table.all()) if (e.local) this.localMounts.add(e.uuid);
      }
    }
    return scopeOf(key, this.localMounts, this.localStorageOf);
  }

  private get performanceSecondary(): boolean {
    return this.replication?.performanceMode() === 'secondary';
  }

  /** On a performance secondary only the primary writes shared keys; a write holding one stores nothing. */
  private guardWrite(key: string): void {
    if (this.replicationScope(key).scope !== 'shared') return;
    const scope = currentWriteScope();
    if (scope) scope.refused = true;
    throw new SharedWriteRefused(key);
  }

  /**
   * On a performance secondary: the replication stream changed these shared keys below the
   * cache. Forgets them and brings what is held in memory up to date (namespaces, mount tables
   * and their backends, policies, the audit table) without ceasing to serve.
   */
  sharedChanged(keys: readonly string[]): Promise<void> {
    this.physical.invalidate(keys);
    const run = this.reloads.then(() => this.reloadShared(keys));
    this.reloads = run.catch(() => undefined);
    return run;
  }

  private async reloadShared(keys: readonly string[]): Promise<void> {
    if (!this.ready || keys.length === 0) return;
    if (keys.includes('core/keyring')) {
      try {
        await this.seal.reloadKeyring();
      } catch (err) {
        if (!(err instanceof SealedError)) throw err;
        // The primary's keyring arrived (a new secondary): only the primary's root key opens
        // it, so this node stops serving until it is unsealed with the primary's keys, or by
        // its auto seal, which its activation gave the primary's root key to wrap.
        this.logger.warn('sealing: the replicated keyring opens only with the primary\'s root key; an auto seal unseals this node again, otherwise unseal it with the primary\'s keys', {});
        await this.sealNow();
        return;
      }
    }
    // A namespace's tables that arrive before its record are read with the record.
    const tableKeys = new Set<string>();
    for (const view of this.namespaces.all()) {
      for (const table of [view.mounts, view.auths]) tableKeys.add(table.storageKeys.shared);
    }
    if (keys.some((k) => k.startsWith(NAMESPACE_RECORD_PREFIX) || tableKeys.has(k))) {
      const before = this.mountedByUuid();
      await this.namespaces.reload();
      this.syncInstances();
      await this.endRemovedMounts(before);
    }
    for (const view of this.namespaces.all()) {
      const prefix = view.isRoot ? ROOT_POLICY_PREFIX : `${dataPrefix(view.id)}policy/`;
      if (keys.some((k) => k.startsWith(prefix))) view.policies.clear();
    }
    if (keys.includes(AUDIT_TABLE_KEY)) await this.audit.load();
  }

  private mountedByUuid(): Map<string, MountedAt> {
    const mounted = new Map<string, MountedAt>();
    for (const view of this.namespaces.all()) {
      for (const [kind, table] of [['secret', view.mounts], ['auth', view.auths]] as const) {
        for (const e of table.all()) {
          mounted.set(e.uuid, { kind, path: e.path, namespaceId: view.id, apiPath: `${view.path}${kind === 'auth' ? 'auth/' : ''}${e.path}` });
        }
      }
    }
    return mounted;
  }

  /**
   * The primary disabled these mounts (or their namespace): what this cluster issued through
   * them ends here too, as a disable on the primary ends the primary's. Tokens of an auth
   * mount are revoked; leases are dropped without their backend, whose mount and configuration
   * the stream is removing (a disable sent from this cluster revoked them first).
   */
  private async endRemovedMounts(before: ReadonlyMap<string, MountedAt>): Promise<void> {
    const live = this.mountedByUuid();
    for (const [uuid, gone] of before) {
      if (live.has(uuid)) continue;
      try {
        if (gone.kind === 'auth') await this.tokens.revokeByPath(`auth/${gone.path}`, gone.namespaceId);
        await this.expiration.revokePrefix(gone.apiPath, { force: true });
      } catch (err) {
        this.logger.error('ending what a removed mount issued here failed', { mount: gone.apiPath, err: (err as Error).message });
      }
    }
  }

  /** Backends for mounts that appeared, none for those gone; existing ones keep running. */
  private syncInstances(): void {
    const live = new Set<string>();
    for (const view of this.namespaces.all()) {
      for (const [kind, table] of [['secret', view.mounts], ['auth', view.auths]] as const) {
        for (const entry of table.all()) {
          live.add(entry.uuid);
          if (this.instances.has(entry.uuid)) continue;
          try {
            this.instantiate(kind, entry);
          } catch (err) {
            this.logger.error('a replicated mount could not be started', { mount: view.path + entry.path, err: (err as Error).message });
          }
        }
      }
    }
    for (const uuid of [...this.instances.keys()]) if (!live.has(uuid)) this.instances.delete(uuid);
  }

  // ---- requests -------------------------------------------------------------------------

  /** A DR secondary serves nothing but its own endpoints until it is promoted. */
  get drSecondary(): boolean {
    return this.replication?.drMode() === 'secondary';
  }

  handle(request: CoreRequest): Promise<CoreReply> {
    return this.serve(request, false);
  }

  /**
   * On a performance primary: runs a write a performance secondary forwarded, on its behalf and
   * without a token (the secondary authorized it with its own tokens and ACL).
   */
  handleForwarded(request: ForwardedWrite): Promise<CoreReply> {
    const path = request.path.replace(/^\/+/, '');
    checkForwardable(path);
    return this.serve({
      operation: request.operation, path, data: request.data,
      headers: request.namespace ? { 'x-vault-namespace': request.namespace } : {},
      ...(request.remoteAddress ? { remoteAddress: request.remoteAddress } : {}),
    }, true);
  }

  /** What a performance secondary sends its primary for a request that wrote shared keys. */
  private async forward(request: CoreRequest, path: string): Promise<CoreReply> {
    const forwardWrite = this.replication?.forwardWrite?.bind(this.replication);
    if (!forwardWrite) throw new SharedWriteRefused(path);
    const namespace = request.headers?.['x-vault-namespace'];
    return forwardWrite({
      operation: request.operation, path, data: request.data,
      ...(namespace ? { namespace } : {}), ...(request.remoteAddress ? { remoteAddress: request.remoteAddress } : {}),
    });
  }

  /** The request pipeline; a `forwarded` request runs as the internal caller, past token and ACL. */
  private async serve(request: CoreRequest, forwarded: boolean): Promise<CoreReply> {
    const fullPath = request.path.charCodeAt(0) === SLASH ? request.path.replace(/^\/+/, '') : request.path;
    if (this.drSecondary && !DR_SECONDARY_PATHS.has(fullPath) && !this.replication?.servesOnDrSecondary(fullPath)) {
      throw new BadRequestError(`path disabled in replication DR secondary mode: ${fullPath}`);
    }
    const header = NAMESPACE_FREE_PATHS.has(fullPath) ? undefined : request.headers?.['x-vault-namespace'];
    if (!this.ready) {
      if (this.sealedPaths.has(fullPath) && !header) return this.handleSealed(fullPath, request);
      if (this.sealed) throw (await this.seal.initialized()) ? new SealedError() : new NotInitializedError();
      throw new StandbyError();
    }
    // Tokens, policies and mount tables answer from memory: the storage must first confirm that
    // this node still serves the cluster's latest state (a clustered storage's leadership check).
    const barrier = this.physical.readBarrier();
    if (barrier) await barrier;
    const op = request.operation;
    const { view, rest: path } = this.namespaces.resolve(header, fullPath);
    const routed = this.route(view, path);
    if (!routed) {
      if (!forwarded) await this.requirePermitted(request, view, path, op);
      throw new NotFoundError(`no handler for route "${fullPath}": no mount serves this path`);
    }
    const { backend, entry, kind } = routed;
    if (request.route) request.route.mountType = entry.type;
    // System paths take a trailing slash on writes (the vault CLI enables mounts that way).
    if ((op === 'update' || op === 'create' || op === 'patch') && path.endsWith('/') && entry.type !== 'system') {
      if (!forwarded) await this.requirePermitted(request, view, path, op);
      throw new BadRequestError("cannot write to a path ending in '/'");
    }
    const match = backend.match(routed.relative);
    if (!match) {
      if (!forwarded) await this.requirePermitted(request, view, path, op);
      throw new NotFoundError(`unsupported path: ${path}`);
    }
    if (!view.isRoot && backend.isRestricted(match)) {
      throw new BadRequestError(`operation only available in the root namespace: ${path}`);
    }
    // A login's token would be the primary's, which a secondary's clients cannot use there.
    const local = staysLocal(entry, routed.relative) || (kind === 'auth' && backend.isUnauthenticated(match, op));
    if (forwarded && local) {
      throw new BadRequestError(`invalid value for "path": ${fullPath} is served by each cluster for itself and cannot be forwarded`);
    }

    const req: BackendRequest = {
      id: randomUUID(),
      operation: op,
      path: routed.relative,
      mount: this.mountSettings(kind, entry),
      storage: this.mountStorage(kind, entry),
      data: request.data,
      headers: request.headers ?? {},
      namespace: { id: view.id, path: view.path },
    };
    if (request.remoteAddress) req.remoteAddress = request.remoteAddress;
    if (request.wrapTtl) req.wrapTtl = request.wrapTtl;
    if (request.body) req.body = request.body;
    if (op === 'update' || op === 'create') {
      const resolved = backend.resolveWrite(match, req);
      req.operation = typeof resolved === 'string' ? resolved : await resolved;
    }
    if (request.route) request.route.operation = req.operation;
    if (!backend.supports(match, req.operation)) {
      if (!forwarded && !backend.isUnauthenticated(match, req.operation)) await this.requirePermitted(request, view, path, req.operation);
      throw new UnsupportedOperationError();
    }

    // Vault serves these outside its router, so they never reach its audit log (health checks would flood it).
    // With no audit device the input is not even built: the common case pays nothing for audit.
    const auditInput: AuditRequestInput | null = this.sealedPaths.has(fullPath) || !this.audit.recording ? null : {
      request: {
        id: req.id, operation: req.operation, path: fullPath, mountPoint: routed.apiPath, mountType: entry.type,
        mountAccessor: entry.accessor, clientToken: request.token, remoteAddress: request.remoteAddress, data: request.data,
        namespace: view.isRoot ? { id: 'root' } : { id: view.id, path: view.path }, wrapTtl: request.wrapTtl,
        nonHmacKeys: entry.config.audit_non_hmac_request_keys,
      },
    };
    if (forwarded) {
      req.caller = FORWARDED_CALLER;
    } else if (!backend.isUnauthenticated(match, req.operation)) {
      try {
        const authorized = this.authorize(request, view, path, req, backend, match);
        const { caller, token } = authorized instanceof Promise ? await authorized : authorized;
        req.caller = caller;
        if (auditInput) {
          auditInput.auth = auditAuthOf(caller, request.token, token);
          auditInput.request.clientTokenAccessor = caller.accessor;
        }
      } catch (err) {
        if (auditInput) await this.audit.logRequest({ ...auditInput, error: auditErrorOf(err) });
        throw err;
      }
    }
    // A request no audit device could record is refused before it runs (the broker throws a 500).
    if (auditInput) await this.audit.logRequest(auditInput);
    // Only the built-in backends see the raw token: they look tokens up and check ACLs themselves.
    if ((entry.type === 'token' || entry.type === 'system') && request.token) req.clientToken = request.token;
    // On a performance secondary a write of shared keys is refused by the storage and the
    // request goes to the primary instead, after this node authorized it.
    const scope: WriteScope = { refused: false };
    const out: ExecutionOutcome = { resp: null };
    let reply: CoreReply | null = null;
    const secondary = !forwarded && this.performanceSecondary;
    try {
      try {
        reply = secondary && op !== 'read' && op !== 'list'
          ? await inWriteScope(scope, () => this.runHandler(backend, match, req, view, routed, out))
          : await this.runHandler(backend, match, req, view, routed, out);
      } catch (err) {
        if (secondary && isSharedWriteRefusal(err)) scope.refused = true;
        if (!scope.refused) throw err;
      }
      if (scope.refused && local) throw new LocalRequestNotForwarded(fullPath);
      if (scope.refused || !reply) {
        out.resp = null;
        delete out.leaseId;
        reply = await this.forward(request, fullPath);
      }
      const wrappable = scope.refused || (out.resp !== null && !out.resp.raw);
      if (request.wrapTtl && wrappable && reply.status === 200) {
        reply = await this.wrapping.wrap(reply, fullPath, request.wrapTtl, out.resp?.auth?.accessor);
      }
    } catch (err) {
      if (auditInput) await this.audit.logResponse({ ...auditInput, response: auditResponseOf(out.resp), error: auditErrorOf(err) });
      throw err;
    }
    if (auditInput) await this.audit.logResponse({
      ...auditInput,
      response: {
        ...auditResponseOf(out.resp, { status: reply.status, leaseId: out.leaseId, wrapInfo: request.wrapTtl ? auditWrapInfoOf(reply.body) : null }),
        nonHmacKeys: entry.config.audit_non_hmac_response_keys,
      },
    });
    return reply;
  }

  /** Runs a routed request's handler, then what its answer asks of core (a login's token, a lease), into the envelope. */
  private async runHandler(
    backend: Backend, match: PathMatch, req: BackendRequest, view: NamespaceView, routed: Routed, out: ExecutionOutcome,
  ): Promise<CoreReply> {
    const { kind, entry } = routed;
    let resp = await backend.execute(match, req);
    out.resp = resp;
    if (resp?.login && kind === 'auth') {
      const { auth, warnings } = await issueLoginToken(this, view, entry, req, resp.login);
      resp = { ...resp, auth, warnings: [...(resp.warnings ?? []), ...warnings] };
      out.resp = resp;
    }
    let lease;
    if (resp?.secret) {
      const registered = await this.expiration.register({
        req, secret: resp.secret, mountApiPath: view.path + routed.apiPath, mountKind: kind, tokenHash: req.caller?.tokenHash ?? '',
      });
      lease = { leaseId: registered.leaseId, renewable: registered.renewable, duration: Math.round((registered.expireTime - registered.issueTime) / 1000) };
      out.leaseId = lease.leaseId;
    }
    return buildEnvelope(req, resp, entry.type, lease);
  }

  private async handleSealed(path: string, request: CoreRequest): Promise<CoreReply> {
    if (request.route) request.route.mountType = 'system';
    const match = this.systemBackend.match(path.slice('sys/'.length));
    if (!match) throw new NotFoundError();
    const req: BackendRequest = {
      id: randomUUID(), operation: request.operation === 'create' ? 'update' : request.operation, path: path.slice(4),
      mount: { path: 'sys/', type: 'system', accessor: '', uuid: '', defaultLeaseTtl: 0, maxLeaseTtl: 0, options: {} },
      storage: this.barrier, data: request.data, headers: request.headers ?? {}, namespace: { id: 'root', path: '' },
    };
    if (!this.systemBackend.supports(match, req.operation)) throw new UnsupportedOperationError();
    return buildEnvelope(req, await this.systemBackend.execute(match, req), 'system');
  }

  /**
   * For paths that authenticate inside their handler: checks that `token` may perform `op` on
   * `path` (bound CIDRs and ACL) and counts a use.
   */
  async authorizeToken(token: string | undefined, remoteAddress: string | undefined, view: NamespaceView, path: string, op: Operation): Promise<TokenEntry> {
    const entry = token ? await this.tokens.lookup(token) : null;
    if (!entry || !this.tokens.addressAllowed(entry, remoteAddress)) throw new PermissionDeniedError();
    const { acl, aclPath } = await this.aclFor(entry, view, path);
    if (!acl.allowed(aclPath, op).allowed) throw new PermissionDeniedError();
    return this.tokens.use(entry);
  }

  /**
   * The ACL a token acts under in a namespace, and the path its policies see. A token works in
   * its own namespace and below; its policies name paths relative to its own namespace, so a
   * root token's policy reaches `team/secret/x` in namespace `team/` as `team/secret/x`.
   */
  async aclFor(entry: TokenEntry, view: NamespaceView, path: string): Promise<{ acl: ACL; aclPath: string }> {
    const home = this.namespaces.byId(entry.namespace);
    if (!home || !view.path.startsWith(home.path)) throw new PermissionDeniedError();
    const policies = [...entry.policies, ...(await this.identityPolicies(entry))];
    return { acl: await home.policies.acl(policies), aclPath: view.path.slice(home.path.length) + path };
  }

  /**
   * The policies a token's entity adds on top of the token's own (Vault's identity policies).
   * A disabled entity's tokens are refused without being revoked, so enabling it restores them.
   */
  async identityPolicies(entry: TokenEntry): Promise<string[]> {
    if (!entry.entityId) return [];
    const entity = await this.identity.get(entry.entityId);
    if (entity?.disabled) throw new PermissionDeniedError();
    return entity ? entity.policies.filter((p) => !entry.policies.includes(p)) : [];
  }

  /**
   * Before telling a caller that a path is not served (or not that way): it must hold a token
   * that may `op` it, as Vault checks the token before it routes. Otherwise anyone could learn
   * which mounts exist from the 404s. Counts no use, as nothing runs.
   */
  private async requirePermitted(request: CoreRequest, view: NamespaceView, path: string, op: Operation): Promise<void> {
    const entry = request.token ? await this.tokens.lookup(request.token) : null;
    if (!entry || !this.tokens.addressAllowed(entry, request.remoteAddress)) throw new PermissionDeniedError();
    const { acl, aclPath } = await this.aclFor(entry, view, path);
    if (!acl.allowed(aclPath, op).allowed) throw new PermissionDeniedError();
  }

  /**
   * Resolves the token, checks bound CIDRs, the ACL, sudo and parameter rules; counts a use.
   * Answers without awaiting when the token, its ancestors and its ACL are in memory and its
   * uses are not counted, as for most requests: there the awaits would cost only promises.
   */
  private authorize(
    request: CoreRequest, view: NamespaceView, path: string, req: BackendRequest, backend: Backend, match: PathMatch,
  ): Authorized | Promise<Authorized> {
    const entry = request.token ? this.tokens.lookupCached(request.token) : null;
    if (entry === undefined) return this.authorizeFromStorage(request, view, path, req, backend, match);
    if (!entry) throw new PermissionDeniedError();
    if (!this.tokens.addressAllowed(entry, request.remoteAddress)) throw new PermissionDeniedError();
    // An entity's policies come from the identity store, read with an await.
    const home = entry.entityId ? undefined : this.namespaces.byId(entry.namespace);
    const acl = home && view.path.startsWith(home.path) ? home.policies.cachedAcl(entry.policies) : undefined;
    if (!home || !acl) return this.authorizeFromStorage(request, view, path, req, backend, match);
    const sudo = this.checkGrant(request, req, backend, match, acl, view.path.slice(home.path.length) + path);
    const used = this.tokens.use(entry);
    if (used instanceof Promise) return used.then((token) => ({ caller: callerOf(token, sudo), token }));
    return { caller: callerOf(used, sudo), token: used };
  }

  private async authorizeFromStorage(
    request: CoreRequest, view: NamespaceView, path: string, req: BackendRequest, backend: Backend, match: PathMatch,
  ): Promise<Authorized> {
    const entry = request.token ? await this.tokens.lookup(request.token) : null;
    if (!entry) throw new PermissionDeniedError();
    if (!this.tokens.addressAllowed(entry, request.remoteAddress)) throw new PermissionDeniedError();
    const { acl, aclPath } = await this.aclFor(entry, view, path);
    const sudo = this.checkGrant(request, req, backend, match, acl, aclPath);
    const used = await this.tokens.use(entry);
    return { caller: callerOf(used, sudo), token: used };
  }

  /** The ACL's verdict on the request: refuses it (403, or 400 for wrapping) or answers whether it has sudo. */
  private checkGrant(request: CoreRequest, req: BackendRequest, backend: Backend, match: PathMatch, acl: ACL, aclPath: string): boolean {
    const result = acl.allowed(aclPath, req.operation);
    if (!result.allowed) throw new PermissionDeniedError();
    if (backend.needsSudo(match, req.operation) && !result.sudo) throw new PermissionDeniedError();
    checkWrapTtl(result.rule?.minWrappingTtl, result.rule?.maxWrappingTtl, request.wrapTtl);
    // Vault applies parameter constraints to the operations that carry parameters only.
    if (!result.root && req.operation !== 'list' && req.operation !== 'delete') {
      const problem = checkParameters(result.rule, req.data);
      if (problem) throw new PermissionDeniedError(problem);
    }
    return result.sudo;
  }

  async rotateKeyring(): Promise<void> {
    await this.seal.rotate(this.barrier.keyring());
  }

  keyringStatus() {
    return this.barrier.keyring().activeTerm;
  }
}

/** What a request's handler answered, kept for the audit log and wrapping whatever happens after. */
interface ExecutionOutcome {
  resp: BackendResponse | null;
  leaseId?: string;
}

interface Authorized {
  caller: Caller;
  token: TokenEntry;
}

/** Policies may demand that replies on a path be wrapped, within a TTL range. */
function checkWrapTtl(min: number | undefined, max: number | undefined, ttl: number | undefined): void {
  if (min && !ttl) throw new BadRequestError('response wrapping is required by policy for this path (set X-Vault-Wrap-TTL)');
  if (min && ttl && ttl < min) throw new BadRequestError(`wrapping TTL ${ttl}s is below the minimum of ${min}s allowed by policy`);
  if (max && ttl && ttl > max) throw new BadRequestError(`wrapping TTL ${ttl}s is above the maximum of ${max}s allowed by policy`);
}

export function callerOf(entry: TokenEntry, sudo: boolean): Caller {
  return {
    sudo,
    accessor: entry.accessor,
    policies: entry.policies,
    displayName: entry.displayName,
    entityId: entry.entityId,
    isRoot: entry.policies.includes('root'),
    tokenHash: entry.hash,
    tokenType: entry.type,
    metadata: entry.meta,
  };
}

function builtinMount(path: string, type: string, description: string): Omit<MountEntry, 'accessor' | 'uuid'> {
  return {
    path, type, description, local: false, seal_wrap: false, external_entropy_access: false, options: {},
    config: { default_lease_ttl: 0, max_lease_ttl: 0, force_no_cache: false },
  };
}
