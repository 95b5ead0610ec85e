import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../clock';
import { BadRequestError, InternalError } from '../errors';
import type { Logger } from '../logger';
import { normalizeMountPath } from '../mounts/mount-table';
import { getJson, type LogicalStorage } from '../storage/logical';
import type { TxnOp } from '../storage/storage';
import { fileAuditDevice } from './file-device';
import { hmacOf } from './format';
import type { AuditDevice, AuditDeviceFactory, AuditDeviceInfo, AuditRequestInput, AuditResponseInput } from './types';

/** Where the table of enabled devices lives, beside the mount tables. */
export const AUDIT_TABLE_KEY = 'core/audit';
/**
 * The devices enabled with `local`, apart as local mounts are: a performance secondary receives
 * the shared table and keeps its own local devices, as the primary keeps its own.
 */
export const LOCAL_AUDIT_TABLE_KEY = 'core/local-audit';

interface StoredDevice extends AuditDeviceInfo {
  /** Base64 HMAC key; a new one per enable, so hashes never carry over to a re-enabled device. */
  salt: string;
}

/** A device in memory, and whether it was read from the shared table (written before local devices had their own). */
interface Loaded extends StoredDevice {
  inSharedTable?: true;
}

export interface AuditBrokerOptions {
  /** The barrier (or any view of it): the salts are secrets and must only be stored encrypted. */
  storage: LogicalStorage;
  logger: Logger;
  clock?: Clock;
  /** Device types besides `file`; a type given here replaces a built-in one of the same name. */
  factories?: readonly AuditDeviceFactory[];
  /**
   * Whether the shared table is another cluster's (a performance secondary's is its primary's):
   * its local devices, in a table written before they had their own key, are not this one's.
   */
  sharedTableIsForeign?: () => boolean;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The enabled audit devices and the fan-out to them. Once any device is enabled, a request is
 * only served if at least one device recorded it: an unrecorded request is worse than a
 * refused one.
 */
export class AuditBroker {
  private entries: Loaded[] = [];
  private readonly devices = new Map<string, AuditDevice>();
  private readonly factories = new Map<string, AuditDeviceFactory>();
  private readonly storage: LogicalStorage;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly sharedTableIsForeign: () => boolean;
  /** Table changes run one at a time, each writing the whole table (as MountTable does). */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: AuditBrokerOptions) {
    this.storage = options.storage;
    this.logger = options.logger;
    this.clock = options.clock ?? systemClock;
    this.sharedTableIsForeign = options.sharedTableIsForeign ?? (() => false);
    for (const f of [fileAuditDevice, ...(options.factories ?? [])]) this.factories.set(f.type, f);
  }

  /** Whether any device is listening; without one, logging is skipped entirely. */
  get active(): boolean {
    return this.devices.size > 0;
  }

  private exclusive<T>(change: () => Promise<T>): Promise<T> {
    const run = this.queue.then(change);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async openDevice(entry: StoredDevice): Promise<AuditDevice> {
    const factory = this.factories.get(entry.type);
    if (!factory) throw new BadRequestError(`invalid value for "type": audit device type "${entry.type}" is not supported`);
    return factory.create({
      path: entry.path, options: { ...entry.options }, salt: Buffer.from(entry.salt, 'base64'), clock: this.clock, logger: this.logger,
    });
  }

  /**
   * Reads the table and opens every device, after unseal. A device that cannot be opened is
   * skipped with an error in the log; if none can be, this throws, so the server does not come
   * up serving requests that nothing records.
   */
  load(): Promise<void> {
    return this.exclusive(async () => {
      await this.closeAll();
      const shared = (await getJson<StoredDevice[]>(this.storage, AUDIT_TABLE_KEY)) ?? [];
      const local = (await getJson<StoredDevice[]>(this.storage, LOCAL_AUDIT_TABLE_KEY)) ?? [];
      const foreign = this.sharedTableIsForeign();
      const entries: Loaded[] = [
        ...shared.filter((e) => !e.local || !foreign).map((e): Loaded => (e.local ? { ...e, inSharedTable: true } : e)),
        ...local.map((e) => ({ ...e, local: true })),
      ];
      this.entries = entries;
      for (const entry of entries) {
        try {
          this.devices.set(entry.path, await this.openDevice(entry));
        } catch (err) {
          this.logger.error('audit: cannot open audit device', { path: entry.path, type: entry.type, error: messageOf(err) });
        }
      }
      if (entries.length > 0 && this.devices.size === 0) {
        throw new InternalError('audit: none of the enabled audit devices could be opened');
      }
    });
  }

  /**
   * Closes every device and forgets the table, on seal. It waits for a table change under way,
   * which would otherwise open a device after the broker was cleared.
   */
  clear(): Promise<void> {
    return this.exclusive(() => this.closeAll());
  }

  private async closeAll(): Promise<void> {
    const open = [...this.devices.entries()];
    this.devices.clear();
    this.entries = [];
    await Promise.all(open.map(async ([path, device]) => {
      try {
        await device.close();
      } catch (err) {
        this.logger.warn('audit: closing audit device failed', { path, error: messageOf(err) });
      }
    }));
  }

  list(): AuditDeviceInfo[] {
    return this.entries
      .map(({ path, type, description, options, local }) => ({ path, type, description, options: { ...options }, local }))
      .sort((a, b) => a.path.localeCompare(b.path));
  }

  async enable(rawPath: string, type: string, description: string, options: Record<string, string>, local: boolean): Promise<AuditDeviceInfo> {
    const path = normalizeMountPath('path', rawPath);
    return this.exclusive(async () => {
      // Overlapping paths would make `sys/audit-hash/<path>` ambiguous, so Vault refuses them.
      const clash = this.entries.find((e) => e.path.startsWith(path) || path.startsWith(e.path));
      if (clash) throw new BadRequestError(`invalid value for "path": path is already in use at "${clash.path}"`);
      this.factories.get(type)?.checkNewOptions?.(options);
      const entry: StoredDevice = { path, type, description, options: { ...options }, local, salt: randomBytes(32).toString('base64') };
      const device = await this.openDevice(entry);
      const next = [...this.entries, entry];
      try {
        await this.save(next, local);
      } catch (err) {
        await device.close().catch(() => undefined);
        throw err;
      }
      this.entries = next;
      this.devices.set(path, device);
      return { path, type, description, options: { ...options }, local };
    });
  }

  /** Answers whether a device was there; disabling nothing is not an error, as in Vault. */
  async disable(rawPath: string): Promise<boolean> {
    const path = normalizeMountPath('path', rawPath);
    return this.exclusive(async () => {
      const gone = this.entries.find((e) => e.path === path);
      if (!gone) return false;
      const next = this.entries.filter((e) => e.path !== path);
      await this.save(next, gone.local);
      this.entries = next;
      const device = this.devices.get(path);
      this.devices.delete(path);
      if (device) {
        await device.close().catch((err: unknown) => this.logger.warn('audit: closing audit device failed', { path, error: messageOf(err) }));
      }
      return true;
    });
  }

  /**
   * Writes the table a change touched: the local one, or the shared one (local devices still
   * in it move to the local table in the same transaction). A performance secondary so enables
   * a local device without writing the shared table, which only its primary writes.
   */
  private async save(next: Loaded[], local: boolean): Promise<void> {
    const stored = (list: Loaded[]) => Buffer.from(JSON.stringify(list.map(({ inSharedTable: _, ...e }) => e)));
    const locals = next.filter((e) => e.local);
    const ops: TxnOp[] = [];
    if (!local || locals.some((e) => e.inSharedTable)) {
      ops.push({ type: 'put', key: AUDIT_TABLE_KEY, value: stored(next.filter((e) => !e.local)) });
    }
    if (local || locals.some((e) => e.inSharedTable)) ops.push({ type: 'put', key: LOCAL_AUDIT_TABLE_KEY, value: stored(locals) });
    await this.storage.txn(ops);
    for (const e of next) delete e.inSharedTable;
  }

  /** What `sys/audit-hash/<path>` answers: the input as that device's entries would show it. */
  hash(rawPath: string, input: string): string {
    const path = normalizeMountPath('path', rawPath);
    const device = this.devices.get(path);
    if (device) return device.hash(input);
    // A device that could not be reopened still has its old entries to search through.
    const entry = this.entries.find((e) => e.path === path);
    if (entry) return hmacOf(Buffer.from(entry.salt, 'base64'), input);
    throw new BadRequestError(`invalid value for "path": no audit device is enabled at "${path}"`);
  }

  /** Whether any device is enabled, so a request need not assemble entries nobody records. */
  get recording(): boolean {
    return this.devices.size > 0;
  }

  logRequest(input: AuditRequestInput): Promise<void> {
    return this.fanOut('request', (d) => d.logRequest(input));
  }

  logResponse(input: AuditResponseInput): Promise<void> {
    return this.fanOut('response', (d) => d.logResponse(input));
  }

  private async fanOut(kind: 'request' | 'response', write: (d: AuditDevice) => Promise<void>): Promise<void> {
    const targets = [...this.devices.entries()];
    if (targets.length === 0) return;
    const results = await Promise.allSettled(targets.map(([, device]) => Promise.resolve().then(() => write(device))));
    let ok = 0;
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') {
        ok++;
        return;
      }
      const path = targets[i]?.[0];
      this.logger.warn(`audit: device failed to record the ${kind}`, { path, error: messageOf(result.reason) });
    });
    if (ok === 0) {
      this.logger.error(`audit: no audit device recorded the ${kind}; refusing the request`, { devices: targets.map(([p]) => p) });
      throw new InternalError(`audit: no audit device recorded the ${kind}`);
    }
  }
}
