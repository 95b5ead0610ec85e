import { createHash } from 'node:crypto';
import type { Clock, TimerHandle } from '../clock';
import { KeyedMutex } from '../keyed-mutex';
import { BadRequestError } from '../errors';
import type { Backend } from '../framework/backend';
import type { BackendRequest, SecretResult } from '../framework/types';
import type { Logger } from '../logger';
import type { TableKind } from '../mounts/mount-table';
import { collectKeys, type LogicalStorage } from '../storage/logical';
import { randomBase62 } from '../token/token-id';
import type { LeaseEntry } from './lease-entry';
import { MinHeap } from './min-heap';

const ID_PREFIX = 'sys/expire/id/';
const TOKEN_PREFIX = 'sys/expire/token/';
const MAX_BACKOFF_MS = 3600_000;

/** How core lets the manager reach the backend that issued a lease. */
export interface LeaseResolver {
  /** The backend and a request for the lease's mount, or null if the mount is gone. */
  resolve(entry: LeaseEntry): { backend: Backend; req: BackendRequest } | null;
}

export interface RegisterInput {
  req: BackendRequest;
  secret: SecretResult;
  /** The mount's API path (`cloud1/`, `auth/x/`), which starts every lease ID. */
  mountApiPath: string;
  mountKind: TableKind;
  tokenHash: string;
}

function tokenIndexKey(tokenHash: string, leaseId: string): string {
  return `${TOKEN_PREFIX}${tokenHash}/${createHash('sha256').update(leaseId).digest('hex')}`;
}

/**
 * Leases: every secret with a lifetime, its owner token and its expiry, kept in storage so that
 * schedules survive restarts. One timer watches the earliest expiry; at expiry the issuing
 * backend's `revoke` runs, and a revocation that fails is retried with exponential backoff and
 * never dropped (only `revoke-force` removes a lease without the backend's consent).
 */
export class ExpirationManager {
  private readonly heap = new MinHeap<string>();
  /** Expiry per lease as scheduled, so stale heap items are recognised and skipped. */
  private readonly due = new Map<string, number>();
  private readonly locks = new KeyedMutex();
  private timer: TimerHandle | null = null;
  private timerAt = 0;
  private running = false;
  private sweeping: Promise<void> | null = null;

  constructor(
    private readonly storage: LogicalStorage,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly resolver: LeaseResolver,
  ) {}

  /** Loads every lease's schedule after unseal; leases that expired meanwhile are due at once. */
  async start(): Promise<void> {
    this.running = true;
    for (const key of await collectKeys(this.storage, ID_PREFIX)) {
      const entry = await this.read(key.slice(ID_PREFIX.length));
      if (entry) this.schedule(entry.leaseId, entry.expireTime);
    }
  }

  stop(): void {
    this.running = false;
    this.timer?.cancel();
    this.timer = null;
    this.timerAt = 0;
    this.heap.clear();
    this.due.clear();
  }

  /** Serializes work on one lease (expiry, renew and revoke may race). */
  private locked<T>(leaseId: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(leaseId, fn);
  }

  private async read(leaseId: string): Promise<LeaseEntry | null> {
    const raw = await this.storage.get(ID_PREFIX + leaseId);
    return raw ? (JSON.parse(raw.toString('utf8')) as LeaseEntry) : null;
  }

  private async write(entry: LeaseEntry): Promise<void> {
    await this.storage.put(ID_PREFIX + entry.leaseId, Buffer.from(JSON.stringify(entry)));
  }

  async register(input: RegisterInput): Promise<LeaseEntry> {
    const { req, secret } = input;
    const now = this.clock.now();
    const ttl = Math.min(secret.ttl > 0 ? secret.ttl : req.mount.defaultLeaseTtl, req.mount.maxLeaseTtl);
    const entry: LeaseEntry = {
      leaseId: `${input.mountApiPath}${req.path}/${randomBase62(24)}`,
      mountKind: input.mountKind, mountUuid: req.mount.uuid, path: req.path, secretType: secret.type,
      internal: secret.internal, tokenHash: input.tokenHash, issueTime: now, expireTime: now + ttl * 1000,
      lastRenewalTime: 0, renewable: secret.renewable, revokeAttempts: 0,
    };
    const ops = [{ type: 'put' as const, key: ID_PREFIX + entry.leaseId, value: Buffer.from(JSON.stringify(entry)) }];
    if (entry.tokenHash) ops.push({ type: 'put', key: tokenIndexKey(entry.tokenHash, entry.leaseId), value: Buffer.from(entry.leaseId) });
    await this.storage.txn(ops);
    this.schedule(entry.leaseId, entry.expireTime);
    return entry;
  }

  async lookup(leaseId: string): Promise<LeaseEntry> {
    const entry = await this.read(leaseId);
    if (!entry) throw new BadRequestError('invalid lease: no lease with this ID');
    return entry;
  }

  /** Lease IDs (or sub-folders) directly under `prefix`, as `sys/leases/lookup/<prefix>` lists them. */
  list(prefix: string): Promise<string[]> {
    return this.storage.list(ID_PREFIX + prefix);
  }

  /**
   * Extends a lease by `increment` seconds (or the mount's default TTL), never beyond the
   * mount's maximum counted from issue. The backend may shorten it or refuse.
   */
  async renew(leaseId: string, increment: number): Promise<{ entry: LeaseEntry; warnings: string[] }> {
    return this.locked(leaseId, async () => {
      const entry = await this.read(leaseId);
      const now = this.clock.now();
      if (!entry) throw new BadRequestError('invalid lease: no lease with this ID');
      if (entry.expireTime <= now) throw new BadRequestError('lease expired');
      if (!entry.renewable) throw new BadRequestError('lease is not renewable');
      const target = this.resolver.resolve(entry);
      if (!target) throw new BadRequestError('the mount that issued this lease no longer exists');
      const type = target.backend.secretTypes[entry.secretType];
      const result = type?.renew ? await type.renew(target.req, entry.internal, increment) : undefined;
      const wanted = result && typeof result.ttl === 'number' ? result.ttl : increment || target.req.mount.defaultLeaseTtl;
      const max = entry.issueTime + target.req.mount.maxLeaseTtl * 1000;
      const warnings: string[] = [];
      let expire = now + wanted * 1000;
      if (expire > max) {
        expire = max;
        warnings.push(`TTL of ${wanted}s exceeded the effective max_ttl; it was capped at the mount's maximum lease TTL`);
      }
      const updated: LeaseEntry = { ...entry, expireTime: expire, lastRenewalTime: now };
      await this.write(updated);
      this.schedule(leaseId, expire);
      return { entry: updated, warnings };
    });
  }

  /**
   * Revokes a lease now: the backend undoes the secret, then the lease is deleted. Throws when
   * the backend fails (the lease stays and is retried); `force` skips the backend.
   */
  async revoke(leaseId: string, options: { force?: boolean } = {}): Promise<void> {
    await this.locked(leaseId, () => this.revokeUnlocked(leaseId, options.force === true));
  }

  private async revokeUnlocked(leaseId: string, force: boolean): Promise<void> {
    const entry = await this.read(leaseId);
    if (!entry) return;
    if (!force) {
      const target = this.resolver.resolve(entry);
      const type = target?.backend.secretTypes[entry.secretType];
      if (target && type) await type.revoke(target.req, entry.internal);
      else if (target) throw new Error(`backend of ${entry.leaseId} has no secret type "${entry.secretType}"`);
    }
    const ops: { type: 'delete'; key: string }[] = [{ type: 'delete', key: ID_PREFIX + leaseId }];
    if (entry.tokenHash) ops.push({ type: 'delete', key: tokenIndexKey(entry.tokenHash, leaseId) });
    await this.storage.txn(ops);
    this.due.delete(leaseId);
  }

  /** Revokes every lease under a prefix; throws listing what could not be revoked. */
  async revokePrefix(prefix: string, options: { force?: boolean } = {}): Promise<number> {
    const keys = await collectKeys(this.storage, ID_PREFIX + prefix);
    const failures: string[] = [];
    for (const key of keys) {
      const leaseId = key.slice(ID_PREFIX.length);
      try {
        await this.revoke(leaseId, options);
      } catch (err) {
        failures.push(`${leaseId}: ${(err as Error).message}`);
      }
    }
    if (failures.length > 0) {
      throw new BadRequestError(`failed to revoke ${failures.length} of ${keys.length} leases under "${prefix}"`, { details: failures.slice(0, 10) });
    }
    return keys.length;
  }

  /**
   * When a token is revoked its leases end too. They are marked due now (durably) and revoked by
   * the expiry loop, so a slow or failing backend cannot hold up the token's revocation.
   */
  async revokeByToken(tokenHash: string): Promise<void> {
    const now = this.clock.now();
    for (const child of await this.storage.list(`${TOKEN_PREFIX}${tokenHash}/`)) {
      const raw = await this.storage.get(`${TOKEN_PREFIX}${tokenHash}/${child}`);
      if (!raw) continue;
      const leaseId = raw.toString('utf8');
      await this.locked(leaseId, async () => {
        const entry = await this.read(leaseId);
        if (!entry || entry.expireTime <= now) return;
        await this.write({ ...entry, expireTime: now });
      });
      this.schedule(leaseId, now);
    }
  }

  /** Revokes leases whose owning token no longer exists (`sys/leases/tidy`). */
  async tidy(tokenExists: (hash: string) => Promise<boolean>): Promise<number> {
    let count = 0;
    for (const hash of await this.storage.list(TOKEN_PREFIX)) {
      const tokenHash = hash.replace(/\/$/, '');
      if (await tokenExists(tokenHash)) continue;
      await this.revokeByToken(tokenHash);
      count++;
    }
    return count;
  }

  private schedule(leaseId: string, at: number): void {
    if (!this.running) return;
    this.due.set(leaseId, at);
    this.heap.push(at, leaseId);
    this.arm();
  }

  private arm(): void {
    const next = this.heap.peek();
    if (!next || !this.running) return;
    if (this.timer && this.timerAt <= next.key) return;
    this.timer?.cancel();
    this.timerAt = next.key;
    this.timer = this.clock.setTimer(next.key - this.clock.now(), () => {
      this.timer = null;
      this.timerAt = 0;
      this.sweeping ??= this.expireDue().finally(() => {
        this.sweeping = null;
        this.arm();
      });
    });
  }

  /** Waits for any expiry pass in progress (tests and shutdown). */
  async settled(): Promise<void> {
    while (this.sweeping) await this.sweeping;
  }

  private async expireDue(): Promise<void> {
    for (;;) {
      const next = this.heap.peek();
      if (!next || !this.running || next.key > this.clock.now()) return;
      this.heap.pop();
      if (this.due.get(next.value) !== next.key) continue; // rescheduled since
      this.due.delete(next.value);
      await this.expireOne(next.value);
    }
  }

  private async expireOne(leaseId: string): Promise<void> {
    try {
      await this.revoke(leaseId);
    } catch (err) {
      const entry = await this.read(leaseId);
      if (!entry) return;
      const attempts = entry.revokeAttempts + 1;
      const retryAt = this.clock.now() + Math.min(1000 * 2 ** (attempts - 1), MAX_BACKOFF_MS);
      await this.write({ ...entry, revokeAttempts: attempts, lastError: (err as Error).message, expireTime: retryAt });
      this.logger.warn('lease revocation failed; will retry', { lease_id: leaseId, attempt: attempts, retry_in_ms: retryAt - this.clock.now(), err });
      this.schedule(leaseId, retryAt);
    }
  }
}
