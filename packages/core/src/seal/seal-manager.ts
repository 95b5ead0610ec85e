import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock';
import { BadRequestError, SealedError } from '../errors';
import { deleteTree } from '../storage/logical';
import type { Storage } from '../storage/storage';
import type { Barrier } from './barrier';
import { open as aeadOpen, seal as aeadSeal } from './aead';
import { Keyring } from './keyring';
import { combineShares, splitRootKey, validateShareCounts } from './shamir';

export interface SealConfig {
  type: 'shamir';
  secret_shares: number;
  secret_threshold: number;
}

export interface SealStatus {
  initialized: boolean;
  sealed: boolean;
  t: number;
  n: number;
  progress: number;
  nonce: string;
}

const ROOT_KEY_BYTES = 32;

/** A single share is the root key itself; a Shamir share carries one extra byte (its x coordinate). */
export function shareLength(config: SealConfig): number {
  return config.secret_shares === 1 ? ROOT_KEY_BYTES : ROOT_KEY_BYTES + 1;
}

/** Readable before unseal, so stored outside the barrier: neither holds anything secret. */
const SEAL_CONFIG_KEY = 'core/seal-config';
const KEYRING_KEY = 'core/keyring';

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

  constructor(private readonly physical: Storage, private readonly barrier: Barrier, private readonly clock: Clock) {}

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
  async initialize(shares: number, threshold: number): Promise<Buffer[]> {
    validateShareCounts(shares, threshold);
    if (await this.initialized()) throw new BadRequestError('server is already initialized');
    if (this.pendingConfig) throw new BadRequestError('initialization is already in progress');
    const config: SealConfig = { type: 'shamir', secret_shares: shares, secret_threshold: threshold };
    this.pendingConfig = config;
    try {
      await deleteTree(this.physical, '');
      const rootKey = randomBytes(ROOT_KEY_BYTES);
      const keyring = Keyring.create(new Date(this.clock.now()));
      const keyShares = await splitRootKey(rootKey, shares, threshold);
      await this.physical.put(KEYRING_KEY, keyring.seal(rootKey));
      this.rootKey = rootKey;
      this.barrier.unseal(keyring);
      return keyShares;
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
    return {
      initialized: config !== null,
      sealed: this.barrier.sealed,
      t: config?.secret_threshold ?? 0,
      n: config?.secret_shares ?? 0,
      progress: this.pending.length,
      nonce: this.nonce,
    };
  }

  resetProgress(): void {
    for (const s of this.pending) s.fill(0);
    this.pending = [];
    this.nonce = '';
  }

  /**
   * Adds one key share. Returns true when this share completed the threshold and the barrier is
   * now unsealed. A set of shares that does not open the keyring clears the progress.
   */
  async submitShare(share: Buffer, beforeKeyring?: (rootKey: Buffer) => Promise<void>): Promise<boolean> {
    const config = await this.sealConfig();
    if (!config) throw new BadRequestError('server is not initialized');
    if (!this.barrier.sealed) return true;
    const expected = shareLength(config);
    if (share.length !== expected) {
      throw new BadRequestError(`invalid value for "key": an unseal key share of this server is ${expected} bytes, this one is ${share.length}`);
    }
    if (this.pending.some((p) => p.length === share.length && timingSafeEqual(p, share))) return false;
    if (this.pending.length === 0) this.nonce = randomUUID();
    this.pending.push(Buffer.from(share));
    if (this.pending.length < config.secret_threshold) return false;

    const shares = this.pending;
    this.pending = [];
    this.nonce = '';
    let rootKey: Buffer;
    try {
      rootKey = await combineShares(shares);
    } catch {
      throw new BadRequestError('unseal failed: the key shares given do not reconstruct the root key; progress was reset');
    } finally {
      for (const s of shares) s.fill(0);
    }
    // A joining node gets the keyring from the cluster only once it proves it holds the root key.
    await beforeKeyring?.(rootKey);
    let keyring: Keyring;
    try {
      const sealedKeyring = await this.physical.get(KEYRING_KEY);
      if (!sealedKeyring) throw new Error('keyring missing');
      keyring = Keyring.open(rootKey, sealedKeyring);
    } catch {
      rootKey.fill(0);
      throw new BadRequestError('unseal failed: the key shares given do not reconstruct the root key; progress was reset');
    }
    this.rootKey = rootKey;
    this.barrier.unseal(keyring);
    return true;
  }

  /**
   * Whether `rootKey` opens the keyring in storage: the proof that a set of key shares is this
   * server's, for work that needs the shares without unsealing (root token generation). It
   * reads only storage, so it also answers on a standby and on a DR secondary, whose stored
   * keyring is its primary's.
   */
  async isRootKey(rootKey: Buffer): Promise<boolean> {
    const sealed = await this.physical.get(KEYRING_KEY);
    if (!sealed) return false;
    try {
      Keyring.open(rootKey, sealed).wipe();
      return true;
    } catch {
      return false;
    }
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
  useJoinConfig(config: SealConfig): void {
    this.config = config;
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

  /** Forgets the cached seal configuration (after a snapshot restore replaced storage). */
  forgetConfig(): void {
    this.config = null;
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
