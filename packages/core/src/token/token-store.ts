import { createSecretKey, type KeyObject } from 'node:crypto';
import type { Clock, TimerHandle } from '../clock';
import { KeyedMutex } from '../keyed-mutex';
import { BadRequestError, PermissionDeniedError } from '../errors';
import type { Logger } from '../logger';
import type { Barrier } from '../seal/barrier';
import type { TxnOp } from '../storage/storage';
import { addressAllowed } from './cidr';
import { isExpired, type TokenEntry } from './token-entry';
import { hashToken, newAccessor, newSalt, newServiceTokenId } from './token-id';

const SALT_KEY = 'sys/token/salt';
const ID_PREFIX = 'sys/token/id/';
const ACCESSOR_PREFIX = 'sys/token/accessor/';
const PARENT_PREFIX = 'sys/token/parent/';
/** Data that lives exactly as long as one token (a wrapped response), deleted with it. */
const CUBBYHOLE_PREFIX = 'sys/token/cubbyhole/';
const BATCH_PREFIX = 'hvb.';
const BATCH_AAD = 'sys/token/batch';
const CACHE_LIMIT = 10_000;
const SPENT_LIMIT = 1_000;

export type NewToken = Omit<TokenEntry, 'hash' | 'accessor'>;

/** A root token as init and root token generation make it: policy root, no TTL, no parent. */
export function rootTokenFields(now: number): NewToken {
  return {
    policies: ['root'], path: 'auth/token/root', meta: {}, displayName: 'root', numUses: 0, creationTime: now,
    creationTtl: 0, expireTime: 0, explicitMaxTtl: 0, period: 0, renewable: false, type: 'service', boundCidrs: [],
    entityId: '', namespace: 'root',
  };
}

/**
 * Tokens, stored only under the salted hash of their ID. A token is valid while it exists, has
 * not expired and (unless it is an orphan) every ancestor is valid too: checking the chain on
 * lookup makes children die with their parent at the parent's expiry, across restarts. A timer
 * revokes expired trees so their entries do not linger.
 */
export class TokenStore {
  private salt: Buffer | null = null;
  private saltKey: KeyObject | null = null;
  private readonly hashes = new Map<string, string>();
  private readonly cache = new Map<string, TokenEntry>();
  private expiryTimer: TimerHandle | null = null;
  private nextExpiry = 0;
  private stopped = true;
  /** Told about every revoked token, so what it owns (leases) ends with it. */
  onRevoked: ((hash: string) => Promise<void>) | null = null;
  /** Tail of each token's queue of read-modify-write sections (see `locked`). */
  private readonly locks = new KeyedMutex();
  /**
   * Tokens whose last use has been spent: they are already revoked, but the requests they
   * authorized still run (a one-use token may look itself up or revoke itself), so their
   * handlers may still fetch the entry through `lookupCaller`. Bounded; cleared on seal.
   */
  private readonly spent = new Map<string, TokenEntry>();

  constructor(private readonly barrier: Barrier, private readonly clock: Clock, private readonly logger: Logger) {}

  /** Creates the salt at init; loads it and schedules expiry after unseal. */
  async setup(): Promise<void> {
    const stored = await this.barrier.get(SALT_KEY);
    if (stored) this.salt = stored;
    else {
      this.salt = newSalt();
      await this.barrier.put(SALT_KEY, this.salt);
    }
    this.saltKey = createSecretKey(this.salt);
    this.stopped = false;
    await this.scheduleExpiry();
  }

  stop(): void {
    this.stopped = true;
    this.expiryTimer?.cancel();
    this.expiryTimer = null;
    this.nextExpiry = 0;
    this.cache.clear();
    this.spent.clear();
    this.salt?.fill(0);
    this.salt = null;
    this.saltKey = null;
    this.hashes.clear();
  }

  hash(id: string): string {
    if (!this.saltKey) throw new Error('token store is not set up');
    // Every request hashes its token; recent ones are remembered (cleared on seal) to skip the HMAC.
    const known = this.hashes.get(id);
    if (known !== undefined) return known;
    const hash = hashToken(this.saltKey, id);
    if (this.hashes.size >= CACHE_LIMIT) this.hashes.clear();
    this.hashes.set(id, hash);
    return hash;
  }

  /** Stores a new token and returns its ID, the only time the ID exists outside the client. */
  async create(fields: NewToken, explicitId?: string): Promise<{ id: string; entry: TokenEntry }> {
    if (fields.type === 'batch') {
      const entry: TokenEntry = { ...fields, hash: '', accessor: '' };
      const sealed = this.barrier.encrypt(BATCH_AAD, Buffer.from(JSON.stringify(entry)));
      return { id: BATCH_PREFIX + sealed.toString('base64url'), entry };
    }
    // `lookup` reads any ID with the batch prefix as a batch token, so a service token with such
    // an ID could never be used.
    if (explicitId?.startsWith(BATCH_PREFIX)) {
      throw new BadRequestError(`invalid value for "id": a token ID must not start with "${BATCH_PREFIX}", the batch token prefix`);
    }
    const id = explicitId ?? newServiceTokenId();
    const entry: TokenEntry = { ...fields, hash: this.hash(id), accessor: newAccessor() };
    await this.locked(entry.hash, async () => {
      // A chosen ID may name an existing token; writing over it would hand its holder the new
      // token's policies and leave the old accessor pointing at the new entry.
      if (explicitId !== undefined && (await this.readEntry(entry.hash))) {
        throw new BadRequestError('invalid value for "id": a token with this ID already exists');
      }
      const ops: TxnOp[] = [
        { type: 'put', key: ID_PREFIX + entry.hash, value: Buffer.from(JSON.stringify(entry)) },
        { type: 'put', key: ACCESSOR_PREFIX + this.hash(entry.accessor), value: Buffer.from(JSON.stringify({ hash: entry.hash })) },
      ];
      if (entry.parent) ops.push({ type: 'put', key: `${PARENT_PREFIX}${entry.parent}/${entry.hash}`, value: Buffer.alloc(0) });
      await this.barrier.txn(ops);
      this.remember(entry);
    });
    if (entry.expireTime !== 0) this.noteExpiry(entry.expireTime);
    return { id, entry };
  }

  /**
   * Runs `fn` once every earlier section holding `hash`'s lock has finished. Every write of an
   * existing token entry goes through here, so that a read-modify-write (spending a use,
   * renewing) neither loses a concurrent update nor brings back a token revoked meanwhile.
   */
  private locked<T>(hash: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(hash, fn);
  }

  private remember(entry: TokenEntry): void {
    if (this.cache.size >= CACHE_LIMIT) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(entry.hash, entry);
  }

  private async readEntry(hash: string): Promise<TokenEntry | null> {
    const cached = this.cache.get(hash);
    if (cached) return cached;
    const raw = await this.barrier.get(ID_PREFIX + hash);
    if (!raw) return null;
    const entry = JSON.parse(raw.toString('utf8')) as TokenEntry;
    this.remember(entry);
    return entry;
  }

  /** Whether the token and all its ancestors exist and have not expired. */
  private async chainValid(entry: TokenEntry, now: number): Promise<boolean> {
    if (isExpired(entry, now)) return false;
    let parent = entry.parent;
    for (let depth = 0; parent && depth < 256; depth++) {
      const p = await this.readEntry(parent);
      if (!p || isExpired(p, now)) return false;
      parent = p.parent;
    }
    return true;
  }

  /** Finds a valid token by its ID; null for unknown, expired, or orphaned-by-expiry tokens. */
  /** A valid token by the hash of its ID (for owners recorded by hash, such as leases). */
  async lookupByHash(hash: string): Promise<TokenEntry | null> {
    const entry = await this.readEntry(hash);
    return entry && (await this.chainValid(entry, this.clock.now())) ? entry : null;
  }

  async lookup(id: string): Promise<TokenEntry | null> {
    if (!id) return null;
    const now = this.clock.now();
    if (id.startsWith(BATCH_PREFIX)) {
      let entry: TokenEntry;
      try {
        entry = JSON.parse(this.barrier.decrypt(BATCH_AAD, Buffer.from(id.slice(BATCH_PREFIX.length), 'base64url')).toString('utf8')) as TokenEntry;
      } catch {
        return null;
      }
      return (await this.chainValid(entry, now)) ? entry : null;
    }
    const entry = await this.readEntry(this.hash(id));
    if (!entry) return null;
    return (await this.chainValid(entry, now)) ? entry : null;
  }

  /**
   * `lookup` answered from memory: undefined when the answer needs storage (an entry or an
   * ancestor not cached, a batch token), and the caller then awaits `lookup`. Most requests come
   * from tokens already cached, and skipping the awaits spares each of them several promises.
   */
  lookupCached(id: string): TokenEntry | null | undefined {
    if (!id) return null;
    if (!this.saltKey || id.startsWith(BATCH_PREFIX)) return undefined;
    const entry = this.cache.get(this.hash(id));
    if (!entry) return undefined;
    const now = this.clock.now();
    if (isExpired(entry, now)) return null;
    let parent = entry.parent;
    for (let depth = 0; parent && depth < 256; depth++) {
      const p = this.cache.get(parent);
      if (!p) return undefined;
      if (isExpired(p, now)) return null;
      parent = p.parent;
    }
    return entry;
  }

  /**
   * The token of the request being handled, looked up by its ID. Like `lookup`, except that a
   * token whose last use was spent is still found when it is the request's own caller (its
   * `tokenHash`): a request the token was allowed to make runs to completion, as in Vault.
   * Only `authorize` sets the caller, and it refuses a token whose uses are all spent, so no
   * later request can reach the entry this way.
   */
  async lookupCaller(id: string, callerHash: string | undefined): Promise<TokenEntry | null> {
    const live = await this.lookup(id);
    if (live || !id || !callerHash || id.startsWith(BATCH_PREFIX) || this.hash(id) !== callerHash) return live;
    return this.spent.get(callerHash) ?? null;
  }

  async lookupByAccessor(accessor: string): Promise<TokenEntry | null> {
    if (!accessor) return null;
    const raw = await this.barrier.get(ACCESSOR_PREFIX + this.hash(accessor));
    if (!raw) return null;
    const { hash } = JSON.parse(raw.toString('utf8')) as { hash: string };
    const entry = await this.readEntry(hash);
    if (!entry) return null;
    return (await this.chainValid(entry, this.clock.now())) ? entry : null;
  }

  /**
   * The accessors of the valid tokens of one namespace, sorted. Accessors are indexed only by
   * their salted hash, so this reads every token: a full scan, for an operator's listing.
   */
  async accessors(namespaceId: string): Promise<string[]> {
    const found: string[] = [];
    for (const hash of await this.barrier.list(ID_PREFIX)) {
      const entry = await this.lookupByHash(hash);
      if (entry && entry.namespace === namespaceId && entry.accessor) found.push(entry.accessor);
    }
    return found.sort();
  }

  /** Whether the caller's address may use the token (token_bound_cidrs). */
  addressAllowed(entry: TokenEntry, address: string | undefined): boolean {
    return addressAllowed(entry.boundCidrs, address);
  }

  /**
   * Counts one use of a limited-use token. Returns the entry as the request should see it; the
   * token is revoked when its last use is spent. Refuses (403) a token whose uses concurrent
   * requests have spent, or that was revoked, since the caller looked it up. A token without a
   * use limit is answered at once, without a promise.
   */
  use(entry: TokenEntry): TokenEntry | Promise<TokenEntry> {
    if (entry.numUses <= 0 || entry.type === 'batch') return entry;
    return this.countUse(entry);
  }

  private async countUse(entry: TokenEntry): Promise<TokenEntry> {
    // Read the count again under the lock: concurrent requests must each see what the previous
    // one left, or a token could be used more times than it allows.
    const updated = await this.locked(entry.hash, async () => {
      const fresh = await this.readEntry(entry.hash);
      if (!fresh) return null;
      const next = { ...fresh, numUses: fresh.numUses - 1 };
      if (next.numUses > 0) await this.write(next);
      else await this.removeUnlocked(fresh);
      return next;
    });
    if (!updated) throw new PermissionDeniedError();
    if (updated.numUses > 0) return updated;
    if (this.spent.size >= SPENT_LIMIT) {
      const oldest = this.spent.keys().next().value;
      if (oldest !== undefined) this.spent.delete(oldest);
    }
    this.spent.set(entry.hash, updated);
    // The token itself is gone; its descendants go with it.
    await this.revokeTree(entry.hash);
    return { ...updated, numUses: -1 };
  }

  /**
   * Rewrites a stored token from its current entry (renewal). Returns the entry written, or
   * null when the token no longer exists: a revoked token is never brought back.
   */
  async update(hash: string, change: (current: TokenEntry) => TokenEntry): Promise<TokenEntry | null> {
    return this.locked(hash, async () => {
      const current = await this.readEntry(hash);
      if (!current) return null;
      const next = change(current);
      await this.write(next);
      return next;
    });
  }

  /** Writes an entry; callers hold its lock and have checked that it still exists. */
  private async write(entry: TokenEntry): Promise<void> {
    await this.barrier.put(ID_PREFIX + entry.hash, Buffer.from(JSON.stringify(entry)));
    this.remember(entry);
    if (entry.expireTime !== 0) this.noteExpiry(entry.expireTime);
  }

  private async children(hash: string): Promise<string[]> {
    return this.barrier.list(`${PARENT_PREFIX}${hash}/`);
  }

  private async removeOne(entry: TokenEntry): Promise<void> {
    await this.locked(entry.hash, () => this.removeUnlocked(entry));
  }

  private async removeUnlocked(entry: TokenEntry): Promise<void> {
    const ops: TxnOp[] = [
      { type: 'delete', key: ID_PREFIX + entry.hash },
      { type: 'delete', key: ACCESSOR_PREFIX + this.hash(entry.accessor) },
    ];
    if (entry.parent) ops.push({ type: 'delete', key: `${PARENT_PREFIX}${entry.parent}/${entry.hash}` });
    ops.push({ type: 'delete', key: CUBBYHOLE_PREFIX + entry.hash });
    await this.barrier.txn(ops);
    this.cache.delete(entry.hash);
    if (this.onRevoked) await this.onRevoked(entry.hash);
  }

  /** Stores data that is deleted together with the token (in the same transaction). */
  async putTokenData(hash: string, value: Buffer): Promise<void> {
    await this.barrier.put(CUBBYHOLE_PREFIX + hash, value);
  }

  async readTokenData(hash: string): Promise<Buffer | null> {
    return this.barrier.get(CUBBYHOLE_PREFIX + hash);
  }

  /** Revokes a token and every descendant; children go first so no orphan is left behind. */
  async revokeTree(hash: string): Promise<void> {
    const stack = [hash];
    const order: string[] = [];
    while (stack.length > 0) {
      const h = stack.pop() as string;
      order.push(h);
      for (const child of await this.children(h)) stack.push(child);
    }
    for (const h of order.reverse()) {
      const raw = await this.barrier.get(ID_PREFIX + h);
      if (raw) await this.removeOne(JSON.parse(raw.toString('utf8')) as TokenEntry);
      else this.cache.delete(h);
    }
  }

  /** Revokes one token and makes its children orphans. */
  async revokeOrphan(hash: string): Promise<void> {
    for (const child of await this.children(hash)) {
      await this.locked(child, async () => {
        const entry = await this.readEntry(child);
        if (!entry) return;
        const { parent: _dropped, ...orphan } = entry;
        await this.barrier.txn([
          { type: 'put', key: ID_PREFIX + child, value: Buffer.from(JSON.stringify(orphan)) },
          { type: 'delete', key: `${PARENT_PREFIX}${hash}/${child}` },
        ]);
        this.remember(orphan);
      });
    }
    const raw = await this.barrier.get(ID_PREFIX + hash);
    if (raw) await this.removeOne(JSON.parse(raw.toString('utf8')) as TokenEntry);
  }

  /** Revokes every token issued through an auth mount (when the mount is disabled). */
  async revokeByPath(prefix: string, namespaceId: string): Promise<void> {
    await this.revokeWhere((entry) => entry.namespace === namespaceId && entry.path.startsWith(prefix));
  }

  /** Revokes every token (with its tree) that `test` picks; a full scan, for rare admin actions. */
  async revokeWhere(test: (entry: TokenEntry) => boolean): Promise<void> {
    for (const hash of await this.barrier.list(ID_PREFIX)) {
      const entry = await this.readEntry(hash);
      if (entry && test(entry)) await this.revokeTree(hash);
    }
  }

  private noteExpiry(at: number): void {
    if (this.stopped) return;
    if (this.nextExpiry !== 0 && this.nextExpiry <= at) return;
    this.expiryTimer?.cancel();
    this.nextExpiry = at;
    this.expiryTimer = this.clock.setTimer(at - this.clock.now(), () => {
      this.nextExpiry = 0;
      this.expiryTimer = null;
      this.sweep().catch((err: unknown) => this.logger.error('token expiry sweep failed', { err }));
    });
  }

  /** Revokes every expired token (with its tree) and schedules the next expiry. */
  async sweep(): Promise<void> {
    if (this.stopped) return;
    const now = this.clock.now();
    for (const hash of await this.barrier.list(ID_PREFIX)) {
      const entry = await this.readEntry(hash);
      if (entry && isExpired(entry, now)) await this.revokeTree(hash);
    }
    await this.scheduleExpiry();
  }

  private async scheduleExpiry(): Promise<void> {
    let earliest = 0;
    for (const hash of await this.barrier.list(ID_PREFIX)) {
      const raw = await this.barrier.get(ID_PREFIX + hash);
      if (!raw) continue;
      const { expireTime } = JSON.parse(raw.toString('utf8')) as TokenEntry;
      if (expireTime !== 0 && (earliest === 0 || expireTime < earliest)) earliest = expireTime;
    }
    if (earliest !== 0) this.noteExpiry(earliest);
  }
}
