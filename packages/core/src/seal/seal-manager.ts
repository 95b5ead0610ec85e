import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock';
import { BadRequestError, SealedError, StandbyError } from '../errors';
import { deleteTree } from '../storage/logical';
import type { Storage } from '../storage/storage';
import type { AutoSeal } from './auto-seal';
import type { Barrier } from './barrier';
import { open as aeadOpen, seal as aeadSeal } from './aead';
import { Keyring } from './keyring';
import { makeRecoveryCheck, opensRecoveryCheck } from './recovery-key';
import { combineShares, splitRootKey, validateShareCounts } from './shamir';

/**
 * As stored (and sent to a joining node). With an auto seal (`transit`) the secret shares are
 * one stored key, and the recovery shares are what an operator holds.
 */
export interface SealConfig {
  type: 'shamir' | 'transit';
  secret_shares: number;
  secret_threshold: number;
  recovery_shares?: number;
  recovery_threshold?: number;
}

export interface SealStatus {
  type: string;
  initialized: boolean;
  sealed: boolean;
  t: number;
  n: number;
  progress: number;
  nonce: string;
  recoverySeal: boolean;
  migration: boolean;
}

export interface InitRequest {
  secretShares: number;
  secretThreshold: number;
  recoveryShares?: number;
  recoveryThreshold?: number;
}

/** The seals the configuration names: the one in use, and one marked disabled that a migration leaves. */
export interface SealSetup {
  autoSeal?: AutoSeal;
  disabledSeal?: AutoSeal;
}

/**
 * `to-auto`: stored Shamir, configured auto seal. `to-shamir`: stored auto seal, configured
 * only as disabled. Both wait for `migrate` with the stored seal's keys.
 */
export type Migration = 'to-auto' | 'to-shamir';

const ROOT_KEY_BYTES = 32;

/** A single share is the root key itself; a Shamir share carries one extra byte (its x coordinate). */
export function shareLength(config: SealConfig): number {
  return config.secret_shares === 1 ? ROOT_KEY_BYTES : ROOT_KEY_BYTES + 1;
}

/** Readable before unseal, so stored outside the barrier: neither holds anything secret. */
const SEAL_CONFIG_KEY = 'core/seal-config';
const KEYRING_KEY = 'core/keyring';
/**
 * The root key as the auto seal wrapped it: only the auto seal's holder can unwrap it. Each
 * cluster of a replication set keeps its own (each has its own seal), so it never replicates.
 */
export const WRAPPED_ROOT_KEY = 'core/wrapped-root-key';
/** Proves a recovery key without storing anything it could be derived from. */
const RECOVERY_CHECK_KEY = 'core/recovery-check';

export const SEAL_STORAGE_KEYS = [SEAL_CONFIG_KEY, KEYRING_KEY, WRAPPED_ROOT_KEY, RECOVERY_CHECK_KEY];

interface WrappedRootKey {
  type: string;
  ciphertext: string;
}

/**
 * Owns the root key: creates it at init, rebuilds it from unseal key shares, and hands the
 * keyring it protects to the barrier. Shares being collected live only in memory.
 */
export class SealManager {
  private config: SealConfig | null = null;
  private pending: Buffer[] = [];
  private nonce = '';
  private rootKey: Buffer | null = null;
  /** Set while an init is writing its initial state, before it is committed. */
  private pendingConfig: SealConfig | null = null;
  private rotation: Promise<void> = Promise.resolve();
  /** What a joining node learned from the leader: the wrapped root key, before its own storage has it. */
  private joinWrapped: WrappedRootKey | null = null;
  /** Sealed by an operator (sys/seal): the node stays sealed until restarted, as Vault's does. */
  private heldSealed = false;
  private readonly autoSeal: AutoSeal | null;
  private readonly disabledSeal: AutoSeal | null;

  constructor(private readonly physical: Storage, private readonly barrier: Barrier, private readonly clock: Clock, seals: SealSetup = {}) {
    this.autoSeal = seals.autoSeal ?? null;
    this.disabledSeal = seals.disabledSeal ?? null;
  }

  /** The auto seal the configuration uses, if any. */
  get configuredAutoSeal(): AutoSeal | null {
    return this.autoSeal;
  }

  async sealConfig(): Promise<SealConfig | null> {
    if (this.config) return this.config;
    const raw = await this.physical.get(SEAL_CONFIG_KEY);
    this.config = raw ? (JSON.parse(raw.toString('utf8')) as SealConfig) : null;
    return this.config;
  }

  async initialized(): Promise<boolean> {
    return (await this.sealConfig()) !== null;
  }

  /**
   * Creates the root key and the first keyring term and leaves the barrier unsealed so the
   * caller can write the initial state (root token, tables). The server only counts as
   * initialized once the caller runs `commitInitialization`, so an init that dies halfway can
   * simply be run again: whatever an unfinished init left is unreadable and is wiped first.
   */
  async initialize(request: InitRequest): Promise<{ keys: Buffer[]; recoveryKeys: Buffer[] }> {
    const auto = this.autoSeal;
    let config: SealConfig;
    if (auto) {
      const shares = request.recoveryShares;
      const threshold = request.recoveryThreshold;
      if (shares === undefined) throw new BadRequestError(`missing required field "recovery_shares": the ${auto.type} seal unseals the server itself, and recovery keys are made instead of unseal keys`);
      if (threshold === undefined) throw new BadRequestError('missing required field "recovery_threshold"');
      validateShareCounts(shares, threshold, 'recovery_shares', 'recovery_threshold');
      config = { type: auto.type as SealConfig['type'], secret_shares: 1, secret_threshold: 1, recovery_shares: shares, recovery_threshold: threshold };
    } else {
      if (request.recoveryShares !== undefined || request.recoveryThreshold !== undefined) {
        throw new BadRequestError('invalid value for "recovery_shares": recovery keys are only made with an auto-unseal seal; this server uses Shamir unseal keys (secret_shares)');
      }
      validateShareCounts(request.secretShares, request.secretThreshold);
      config = { type: 'shamir', secret_shares: request.secretShares, secret_threshold: request.secretThreshold };
    }
    if (await this.initialized()) throw new BadRequestError('server is already initialized');
    if (this.pendingConfig) throw new BadRequestError('initialization is already in progress');
    this.pendingConfig = config;
    try {
      const rootKey = randomBytes(ROOT_KEY_BYTES);
      // Wrapped first: an unsealer that cannot be reached fails the init before anything is written.
      const wrapped = auto ? { type: auto.type, ciphertext: await auto.wrap(rootKey) } : null;
      await deleteTree(this.physical, '');
      const keyring = Keyring.create(new Date(this.clock.now()));
      let keys: Buffer[] = [];
      let recoveryKeys: Buffer[] = [];
      if (wrapped) {
        const recoveryKey = randomBytes(ROOT_KEY_BYTES);
        recoveryKeys = await splitRootKey(recoveryKey, config.recovery_shares as number, config.recovery_threshold as number);
        await this.physical.put(WRAPPED_ROOT_KEY, Buffer.from(JSON.stringify(wrapped)));
        await this.physical.put(RECOVERY_CHECK_KEY, makeRecoveryCheck(recoveryKey));
        recoveryKey.fill(0);
      } else {
        keys = await splitRootKey(rootKey, config.secret_shares, config.secret_threshold);
      }
      await this.physical.put(KEYRING_KEY, keyring.seal(rootKey));
      this.rootKey = rootKey;
      this.barrier.unseal(keyring);
      return { keys, recoveryKeys };
    } catch (err) {
      this.pendingConfig = null;
      throw err;
    }
  }

  /** Marks the server initialized; the seal configuration is the marker. */
  async commitInitialization(): Promise<void> {
    const config = this.pendingConfig;
    if (!config) throw new Error('no initialization in progress');
    await this.physical.put(SEAL_CONFIG_KEY, Buffer.from(JSON.stringify(config)));
    this.config = config;
  }

  async status(): Promise<SealStatus> {
    const config = await this.sealConfig();
    const recoverySeal = config !== null && config.type !== 'shamir';
    // A stored seal the configuration does not name is reported by unseal, not here: status always answers.
    const migration = config ? await this.migration().catch(() => null) : null;
    return {
      type: config?.type ?? this.autoSeal?.type ?? 'shamir',
      initialized: config !== null,
      sealed: this.barrier.sealed,
      t: (recoverySeal ? config.recovery_threshold : config?.secret_threshold) ?? 0,
      n: (recoverySeal ? config.recovery_shares : config?.secret_shares) ?? 0,
      progress: this.pending.length,
      nonce: this.nonce,
      recoverySeal,
      migration: migration !== null && this.barrier.sealed,
    };
  }

  /**
   * Whether the configured seal differs from the stored one. A stored auto seal that the
   * configuration names nowhere (not even as disabled) cannot be unsealed: that is an error
   * here, not a migration.
   */
  async migration(): Promise<Migration | null> {
    const config = await this.sealConfig();
    if (!config) return null;
    if (config.type === 'shamir') return this.autoSeal ? 'to-auto' : null;
    if (this.autoSeal) {
      if (this.autoSeal.type !== config.type) throw new BadRequestError(`the stored seal is "${config.type}" and the configuration names "${this.autoSeal.type}": only migrations between Shamir and an auto seal are supported`);
      return null;
    }
    if (this.disabledSeal?.type === config.type) return 'to-shamir';
    throw new BadRequestError(`this server's root key is wrapped by its "${config.type}" seal, which the configuration does not name; add the seal "${config.type}" stanza back (with disabled = "true" to migrate to Shamir unseal keys)`);
  }

  /**
   * The one check generate-root (and anything else Vault lets unseal keys authorize) needs: does
   * this combined key stand for the operators' keys? Under Shamir it is the root key; under an
   * auto seal it is the recovery key.
   */
  async checkCombinedKey(combined: Buffer): Promise<boolean> {
    const config = await this.sealConfig();
    if (!config) throw new BadRequestError('server is not initialized');
    if (config.type === 'shamir') {
      const sealed = await this.physical.get(KEYRING_KEY);
      if (!sealed) return false;
      try {
        Keyring.open(combined, sealed).wipe();
        return true;
      } catch {
        return false;
      }
    }
    const check = await this.physical.get(RECOVERY_CHECK_KEY);
    return check !== null && opensRecoveryCheck(combined, check);
  }

  /** How many key shares operators hold and how many authorize: the recovery shares under an auto seal. */
  async keyShareConfig(): Promise<{ shares: number; threshold: number; recovery: boolean } | null> {
    const config = await this.sealConfig();
    if (!config) return null;
    if (config.type === 'shamir') return { shares: config.secret_shares, threshold: config.secret_threshold, recovery: false };
    return { shares: config.recovery_shares ?? 0, threshold: config.recovery_threshold ?? 0, recovery: true };
  }

  resetProgress(): void {
    for (const s of this.pending) s.fill(0);
    this.pending = [];
    this.nonce = '';
  }

  /**
   * Adds one key share. Returns true when this share completed the threshold and the barrier is
   * now unsealed. A set of shares that does not open the keyring clears the progress. With
   * `migrate`, the shares are the stored seal's (unseal keys, or recovery keys of an auto seal)
   * and the seal becomes the configured one once they check out.
   */
  async submitShare(share: Buffer, beforeKeyring?: (rootKey: Buffer) => Promise<void>, migrate = false): Promise<boolean> {
    const config = await this.sealConfig();
    if (!config) throw new BadRequestError('server is not initialized');
    if (!this.barrier.sealed) return true;
    const migration = await this.migration();
    if (migration && !migrate) {
      throw new BadRequestError('a seal migration is pending: give the keys with "migrate": true (operator unseal -migrate)');
    }
    if (!migration && migrate) throw new BadRequestError('invalid value for "migrate": no seal migration is pending (the configured seal is the stored one)');
    if (!migration && config.type !== 'shamir') {
      throw new BadRequestError(`this server unseals itself through its ${config.type} seal; recovery keys do not unseal it (restart it, or check the seal's address and token)`);
    }
    const recovery = config.type !== 'shamir';
    const shares = (recovery ? config.recovery_shares : config.secret_shares) ?? 1;
    const threshold = (recovery ? config.recovery_threshold : config.secret_threshold) ?? 1;
    const expected = shares === 1 ? ROOT_KEY_BYTES : ROOT_KEY_BYTES + 1;
    if (share.length !== expected) {
      throw new BadRequestError(`invalid value for "key": ${recovery ? 'a recovery key share' : 'an unseal key share'} of this server is ${expected} bytes, this one is ${share.length}`);
    }
    if (this.pending.some((p) => p.length === share.length && timingSafeEqual(p, share))) return false;
    if (this.pending.length === 0) this.nonce = randomUUID();
    this.pending.push(Buffer.from(share));
    if (this.pending.length < threshold) return false;

    const given = this.pending;
    this.pending = [];
    this.nonce = '';
    const wrong = `unseal failed: the key shares given do not reconstruct the ${recovery ? 'recovery' : 'root'} key; progress was reset`;
    let combined: Buffer;
    try {
      combined = await combineShares(given);
    } catch {
      throw new BadRequestError(wrong);
    } finally {
      for (const s of given) s.fill(0);
    }
    let rootKey = combined;
    if (recovery) {
      // Only a migration gets here: the recovery key proves the operators, the disabled seal gives the root key.
      if (!(await this.checkCombinedKey(combined))) {
        combined.fill(0);
        throw new BadRequestError(wrong);
      }
      rootKey = await this.unwrapStored(this.disabledSeal as AutoSeal);
    }
    if (!migration) await beforeKeyring?.(rootKey);
    const keyring = await this.openKeyring(rootKey, wrong);
    if (migration === 'to-auto') rootKey = await this.migrateToAuto(keyring, rootKey, config);
    else if (migration === 'to-shamir') rootKey = await this.migrateToShamir(keyring, rootKey, combined, config);
    this.rootKey = rootKey;
    this.barrier.unseal(keyring);
    return true;
  }

  /** Whether this node would unseal itself now: an auto seal in use, a wrapped root key to hand it, and no operator holding it sealed. */
  async canAutoUnseal(): Promise<boolean> {
    if (!this.autoSeal || !this.barrier.sealed || this.heldSealed) return false;
    const config = await this.sealConfig();
    if (!config || config.type !== this.autoSeal.type) return false;
    return this.joinWrapped !== null || (await this.physical.get(WRAPPED_ROOT_KEY)) !== null;
  }

  /** Unseals with the root key the auto seal unwraps; `beforeKeyring` as in `submitShare`. */
  async unsealWithAutoSeal(beforeKeyring?: (rootKey: Buffer) => Promise<void>): Promise<boolean> {
    const auto = this.autoSeal;
    if (!auto) throw new BadRequestError('this server has no auto-unseal seal configured');
    if (!this.barrier.sealed) return false;
    const rootKey = await this.unwrapStored(auto);
    await beforeKeyring?.(rootKey);
    const keyring = await this.openKeyring(rootKey, `the root key the ${auto.type} seal unwrapped does not open this server's keyring (is the seal's key the one this cluster was initialized with?)`);
    if (!this.barrier.sealed) {
      keyring.wipe();
      rootKey.fill(0);
      return false;
    }
    this.rootKey = rootKey;
    this.barrier.unseal(keyring);
    this.joinWrapped = null;
    return true;
  }

  /** Stops the seals' background work (token renewal). */
  close(): void {
    this.autoSeal?.close();
    this.disabledSeal?.close();
  }

  /** sys/seal: an operator's seal holds until the process restarts (as Vault's does with an auto seal). */
  holdSealed(): void {
    this.heldSealed = true;
  }

  private async unwrapStored(seal: AutoSeal): Promise<Buffer> {
    let wrapped = this.joinWrapped;
    if (!wrapped) {
      const raw = await this.physical.get(WRAPPED_ROOT_KEY);
      if (!raw) throw new SealedError('the wrapped root key is missing from storage');
      wrapped = JSON.parse(raw.toString('utf8')) as WrappedRootKey;
    }
    const rootKey = await seal.unwrap(wrapped.ciphertext);
    if (rootKey.length !== ROOT_KEY_BYTES) throw new SealedError(`the ${seal.type} seal unwrapped a root key of the wrong length`);
    return rootKey;
  }

  private async openKeyring(rootKey: Buffer, wrong: string): Promise<Keyring> {
    try {
      const sealedKeyring = await this.physical.get(KEYRING_KEY);
      if (!sealedKeyring) throw new Error('keyring missing');
      return Keyring.open(rootKey, sealedKeyring);
    } catch {
      rootKey.fill(0);
      throw new BadRequestError(wrong);
    }
  }

  /**
   * The unseal keys become the recovery keys (as in Vault); a new root key, wrapped by the auto
   * seal, takes over the keyring, so the old unseal keys open nothing stored any more. One
   * transaction: storage holds either the old seal or the new one.
   */
  private async migrateToAuto(keyring: Keyring, oldRoot: Buffer, config: SealConfig): Promise<Buffer> {
    const auto = this.autoSeal as AutoSeal;
    const newRoot = randomBytes(ROOT_KEY_BYTES);
    try {
      const wrapped: WrappedRootKey = { type: auto.type, ciphertext: await auto.wrap(newRoot) };
      const next: SealConfig = {
        type: auto.type as SealConfig['type'], secret_shares: 1, secret_threshold: 1,
        recovery_shares: config.secret_shares, recovery_threshold: config.secret_threshold,
      };
      await this.migrationTxn([
        { type: 'put', key: KEYRING_KEY, value: keyring.seal(newRoot) },
        { type: 'put', key: WRAPPED_ROOT_KEY, value: Buffer.from(JSON.stringify(wrapped)) },
        { type: 'put', key: RECOVERY_CHECK_KEY, value: makeRecoveryCheck(oldRoot) },
        { type: 'put', key: SEAL_CONFIG_KEY, value: Buffer.from(JSON.stringify(next)) },
      ], next);
    } catch (err) {
      newRoot.fill(0);
      keyring.wipe();
      throw err;
    } finally {
      oldRoot.fill(0);
    }
    return newRoot;
  }

  /** The recovery keys become the unseal keys (as in Vault): the recovery key is the new root key. */
  private async migrateToShamir(keyring: Keyring, oldRoot: Buffer, recoveryKey: Buffer, config: SealConfig): Promise<Buffer> {
    const next: SealConfig = { type: 'shamir', secret_shares: config.recovery_shares ?? 1, secret_threshold: config.recovery_threshold ?? 1 };
    try {
      await this.migrationTxn([
        { type: 'put', key: KEYRING_KEY, value: keyring.seal(recoveryKey) },
        { type: 'delete', key: WRAPPED_ROOT_KEY },
        { type: 'delete', key: RECOVERY_CHECK_KEY },
        { type: 'put', key: SEAL_CONFIG_KEY, value: Buffer.from(JSON.stringify(next)) },
      ], next);
    } catch (err) {
      recoveryKey.fill(0);
      keyring.wipe();
      throw err;
    } finally {
      oldRoot.fill(0);
    }
    return recoveryKey;
  }

  private async migrationTxn(ops: Parameters<Storage['txn']>[0], next: SealConfig): Promise<void> {
    try {
      await this.physical.txn(ops);
    } catch (err) {
      if (err instanceof StandbyError) {
        throw new BadRequestError('the seal migration must run on the node that leads the cluster (its Raft leader); nothing was changed, give the keys there', { cause: err });
      }
      throw err;
    }
    this.config = next;
  }

  /**
   * Reopens the stored keyring (another node of the cluster may have rotated it) and makes it
   * the barrier's. Only the root key this node was unsealed with can open it.
   */
  async reloadKeyring(): Promise<void> {
    const rootKey = this.rootKey;
    if (!rootKey || this.barrier.sealed) throw new SealedError();
    const sealed = await this.physical.get(KEYRING_KEY);
    if (!sealed) throw new SealedError('the keyring is missing from storage');
    const live = this.barrier.keyring();
    let next: Keyring;
    try {
      next = Keyring.open(rootKey, sealed);
    } catch {
      // A snapshot taken with other keys was restored: this node's root key is no longer the cluster's.
      throw new SealedError('the stored keyring does not open with the key this node was unsealed with (a snapshot taken with other keys was restored?); unseal with the keys it was taken with');
    }
    if (next.activeTerm.term === live.activeTerm.term) {
      next.wipe();
      return;
    }
    this.barrier.unseal(next);
    live.wipe();
  }

  /**
   * A node joining a cluster learns the seal configuration from the leader before its own
   * storage holds it, so that unseal knows how many shares to wait for.
   */
  useJoinConfig(config: SealConfig, wrappedRootKey?: string): void {
    this.config = config;
    this.joinWrapped = wrappedRootKey && config.type !== 'shamir' ? { type: config.type, ciphertext: wrappedRootKey } : null;
  }

  /**
   * The root key, for the activation of a secondary cluster when this one is auto-sealed: the
   * secondary's own seal wraps it (see `wrapForThisCluster`), since no key share can rebuild it
   * there. Null under Shamir, where the secondary is unsealed with this cluster's key shares.
   */
  async rootKeyForSecondary(): Promise<Buffer | null> {
    if (!this.rootKey || this.barrier.sealed) throw new SealedError();
    const config = await this.sealConfig();
    if (!config || config.type === 'shamir') return null;
    return Buffer.from(this.rootKey);
  }

  /**
   * On a secondary with an auto seal: stores the primary's root key wrapped by this cluster's
   * own seal (the wrapped root key never replicates), so that once the primary's keyring has
   * arrived every node of this cluster unseals itself with it. False without an auto seal.
   */
  async wrapForThisCluster(rootKey: Buffer): Promise<boolean> {
    const auto = this.autoSeal;
    if (!auto) return false;
    const wrapped: WrappedRootKey = { type: auto.type, ciphertext: await auto.wrap(rootKey) };
    await this.physical.put(WRAPPED_ROOT_KEY, Buffer.from(JSON.stringify(wrapped)));
    return true;
  }

  /** What a joining node with the same auto seal needs to unseal itself; null under Shamir. */
  async wrappedRootKey(): Promise<string | null> {
    const raw = await this.physical.get(WRAPPED_ROOT_KEY);
    return raw ? (JSON.parse(raw.toString('utf8')) as WrappedRootKey).ciphertext : null;
  }

  /**
   * Encrypts for whoever holds the root key, such as a node joining the cluster: it can read
   * the result only after it was unsealed with this cluster's key shares. `purpose` binds the
   * ciphertext to one use.
   */
  sealForRootKeyHolder(plaintext: Buffer, purpose: string): Buffer {
    if (!this.rootKey || this.barrier.sealed) throw new SealedError();
    return aeadSeal(this.rootKey, plaintext, Buffer.from(purpose));
  }

  /** Whether `sealedKeyring` (as stored at core/keyring) opens with this node's root key. */
  opensKeyring(sealedKeyring: Buffer): boolean {
    if (!this.rootKey) throw new SealedError();
    try {
      Keyring.open(this.rootKey, sealedKeyring).wipe();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Whether the stored keyring opens with the root key this node holds. On a DR secondary it
   * stops doing so once the primary's keyring has arrived, until the node holds the primary's key.
   */
  async holdsStoredRootKey(): Promise<boolean> {
    const sealed = await this.physical.get(KEYRING_KEY);
    return sealed !== null && this.rootKey !== null && this.opensKeyring(sealed);
  }

  /**
   * Makes `rootKey` this node's, if the stored keyring opens with it: a DR secondary takes the
   * primary's root key (rebuilt from the primary's shares) before it serves as a primary.
   */
  async adoptRootKey(rootKey: Buffer): Promise<boolean> {
    if (this.barrier.sealed) throw new SealedError();
    const sealed = await this.physical.get(KEYRING_KEY);
    if (!sealed) return false;
    let keyring: Keyring;
    try {
      keyring = Keyring.open(rootKey, sealed);
    } catch {
      return false;
    }
    this.rootKey?.fill(0);
    this.rootKey = Buffer.from(rootKey);
    this.config = null;
    const live = this.barrier.keyring();
    this.barrier.unseal(keyring);
    live.wipe();
    return true;
  }

  /**
   * With an auto seal: takes the root key it unwraps from storage, if that opens the stored
   * keyring. A running DR secondary needs it before it serves: since its activation, storage
   * holds the primary's keyring and the primary's root key wrapped by this cluster's seal, while
   * memory still holds the root key it was unsealed with. Recovery keys rebuild no root key.
   */
  async adoptAutoSealedRootKey(): Promise<boolean> {
    const auto = this.autoSeal;
    if (!auto || this.barrier.sealed) return false;
    let rootKey: Buffer;
    try {
      rootKey = await this.unwrapStored(auto);
    } catch {
      return false;
    }
    try {
      return await this.adoptRootKey(rootKey);
    } finally {
      rootKey.fill(0);
    }
  }

  /** Forgets the cached seal configuration (after a snapshot restore replaced storage). */
  forgetConfig(): void {
    this.config = null;
    this.joinWrapped = null;
  }

  seal(): void {
    this.pendingConfig = null;
    this.resetProgress();
    this.rootKey?.fill(0);
    this.rootKey = null;
    this.barrier.seal();
  }

  /**
   * Adds a keyring term (sys/rotate): new writes use it, old data stays readable. The new term
   * is stored before any write can use it (data written under a term the stored keyring lacks
   * would be unreadable after a restart), and rotations run one at a time so a slower write of
   * an older keyring never replaces a newer one. It always starts from the barrier's live
   * keyring when it runs; `_live` is what the caller saw and is not needed.
   */
  rotate(_live?: Keyring): Promise<void> {
    const run = this.rotation.then(() => this.rotateNow());
    this.rotation = run.catch(() => undefined);
    return run;
  }

  private async rotateNow(): Promise<void> {
    const rootKey = this.rootKey;
    if (!rootKey || this.barrier.sealed) throw new SealedError();
    const live = this.barrier.keyring();
    const next = Keyring.open(rootKey, live.seal(rootKey));
    next.rotate(new Date(this.clock.now()));
    const sealed = next.seal(rootKey);
    try {
      await this.physical.put(KEYRING_KEY, sealed);
    } catch (err) {
      next.wipe();
      throw err;
    }
    if (this.barrier.sealed || this.barrier.keyring() !== live) {
      // Sealed while the keyring was being stored: the stored one is complete; do not unseal.
      next.wipe();
      return;
    }
    this.barrier.unseal(next);
    live.wipe();
  }
}

/** Opens what `sealForRootKeyHolder` made; throws unless `rootKey` and `purpose` match. */
export function openWithRootKey(rootKey: Buffer, sealed: Buffer, purpose: string): Buffer {
  return aeadOpen(rootKey, sealed, Buffer.from(purpose));
}
