import { randomBytes, randomUUID } from 'node:crypto';
import { BadRequestError } from '../errors';
import { checkPathName } from '../path-names';
import type { Barrier } from '../seal/barrier';

export interface MountConfig {
  default_lease_ttl: number;
  max_lease_ttl: number;
  force_no_cache: boolean;
  listing_visibility?: string;
  audit_non_hmac_request_keys?: string[];
  audit_non_hmac_response_keys?: string[];
  passthrough_request_headers?: string[];
  allowed_response_headers?: string[];
}

export interface MountEntry {
  /** With a trailing slash, without the `auth/` prefix for auth mounts (as Vault shows it). */
  path: string;
  type: string;
  description: string;
  accessor: string;
  uuid: string;
  config: MountConfig;
  local: boolean;
  seal_wrap: boolean;
  external_entropy_access: boolean;
  options: Record<string, string>;
}

export type TableKind = 'secret' | 'auth';

/** The root namespace's tables: shared ones, and local ones that each replicated cluster keeps for itself. */
export const TABLE_KEYS: Record<TableKind, { shared: string; local: string }> = {
  secret: { shared: 'core/mounts', local: 'core/local-mounts' },
  auth: { shared: 'core/auth', local: 'core/local-auth' },
};
/** Where each table's mounts keep their data, under the mount's UUID. */
export const DATA_PREFIX: Record<TableKind, string> = { secret: 'logical/', auth: 'auth/' };

const RESERVED: Record<TableKind, string[]> = {
  secret: ['sys/', 'auth/', 'cubbyhole/', 'identity/'],
  auth: ['token/'],
};

/** Mount types that every server has and no one enables, disables or moves. */
export const BUILTIN_TYPES: ReadonlySet<string> = new Set(['system', 'token', 'identity']);

export function normalizeMountPath(field: string, raw: string): string {
  checkPathName(field, raw);
  let path = raw.trim().replace(/^\/+/, '');
  if (path === '' || path === '/') throw new BadRequestError(`invalid value for "${field}": the path must not be empty`);
  if (!path.endsWith('/')) path += '/';
  if (path.split('/').some((seg, i, all) => seg === '..' || seg === '.' || (seg === '' && i !== all.length - 1))) {
    throw new BadRequestError(`invalid value for "${field}": "${raw}" is not a clean path`);
  }
  return path;
}

export function newAccessor(type: string): string {
  return `${type.replace(/[^a-z0-9-]/gi, '')}_${randomBytes(4).toString('hex')}`;
}

/**
 * Longest path first so `find` returns the most specific mount. Stored tables keep this order
 * too, so that a table compares equal to what was read when its entries did not change.
 */
function bySpecificity(entries: MountEntry[]): MountEntry[] {
  return [...entries].sort((a, b) => b.path.length - a.path.length || a.path.localeCompare(b.path));
}

/** Where a table keeps its entries: shared ones, and those of mounts enabled with `local`. */
export interface TableKeys {
  shared: string;
  local: string;
}

/**
 * One table of mounts (secret engines, or auth methods), persisted through the barrier. Mounts
 * enabled with `local` are stored apart so that replication can send the shared table without
 * them; the two are one table to everything else.
 */
export class MountTable {
  private entries: MountEntry[] = [];
  /**
   * Changes run one at a time: each computes the next table from the current one and stores it
   * whole, so two overlapping changes would otherwise both start from the same table and the
   * later write would drop the earlier change.
   */
  private queue: Promise<unknown> = Promise.resolve();
  /** What each stored table holds, so a change writes only the table it changed. */
  private stored = { shared: '[]', local: '[]' };

  private readonly keys: TableKeys;

  /** `keys` default to the root namespace's tables; other namespaces keep their own. */
  constructor(readonly kind: TableKind, private readonly barrier: Barrier, keys?: TableKeys, private readonly changed: () => void = () => {}) {
    this.keys = keys ?? TABLE_KEYS[kind];
  }

  get storageKeys(): TableKeys {
    return this.keys;
  }

  /** Reads both tables; also rereads them while serving, after they changed underneath. */
  load(): Promise<void> {
    return this.exclusive(async () => {
      const read = async (key: string) => {
        const raw = await this.barrier.get(key);
        return raw ? bySpecificity(JSON.parse(raw.toString('utf8')) as MountEntry[]) : [];
      };
      const shared = await read(this.keys.shared);
      const local = await read(this.keys.local);
      this.stored = { shared: JSON.stringify(shared), local: JSON.stringify(local) };
      this.entries = bySpecificity([...shared, ...local]);
      this.changed();
    });
  }

  /**
   * Writes the tables this change touched. A local entry found in the shared table (stored
   * before local tables existed) moves to the local one with the first change.
   */
  private async persist(unsorted: MountEntry[]): Promise<void> {
    const next = bySpecificity(unsorted);
    const shared = JSON.stringify(next.filter((e) => !e.local));
    const local = JSON.stringify(next.filter((e) => e.local));
    const ops = [];
    if (local !== this.stored.local) ops.push({ type: 'put' as const, key: this.keys.local, value: Buffer.from(local) });
    if (shared !== this.stored.shared) ops.push({ type: 'put' as const, key: this.keys.shared, value: Buffer.from(shared) });
    if (ops.length > 0) await this.barrier.txn(ops);
    this.stored = { shared, local };
    this.entries = next;
    this.changed();
  }

  all(): MountEntry[] {
    return [...this.entries].sort((a, b) => a.path.localeCompare(b.path));
  }

  /** The mount with this UUID: without the copy and sort of `all()`, as the commit feed asks for every write. */
  byUuid(uuid: string): MountEntry | undefined {
    return this.entries.find((e) => e.uuid === uuid);
  }

  get(path: string): MountEntry | undefined {
    return this.entries.find((e) => e.path === path);
  }

  /** The mount serving `path` (relative to this table's root), if any. */
  find(path: string): MountEntry | undefined {
    for (const e of this.entries) {
      if (path.startsWith(e.path) || path + '/' === e.path) return e;
    }
    return undefined;
  }

  private checkFree(path: string, ignore?: MountEntry): void {
    if (RESERVED[this.kind].some((r) => path.startsWith(r) || r.startsWith(path))) {
      throw new BadRequestError(`cannot mount at "${path}": the path is reserved`);
    }
    for (const e of this.entries) {
      if (e === ignore) continue;
      if (path.startsWith(e.path) || e.path.startsWith(path)) {
        throw new BadRequestError(`cannot mount at "${path}": path is already in use at ${e.path}`);
      }
    }
  }

  private exclusive<T>(change: () => Promise<T>): Promise<T> {
    const run = this.queue.then(change);
    this.queue = run.catch(() => undefined);
    return run;
  }

  add(entry: Omit<MountEntry, 'accessor' | 'uuid'> & { accessor?: string; uuid?: string }, opts: { builtin?: boolean } = {}): Promise<MountEntry> {
    return this.exclusive(async () => {
      if (!opts.builtin) this.checkFree(entry.path);
      else if (this.get(entry.path)) throw new BadRequestError(`path is already in use at ${entry.path}`);
      const full: MountEntry = { ...entry, accessor: entry.accessor ?? newAccessor(entry.type), uuid: entry.uuid ?? randomUUID() };
      await this.persist([...this.entries, full]);
      return full;
    });
  }

  /** Removes the mount at `path`; answers what was removed, or undefined if nothing was there. */
  remove(path: string): Promise<MountEntry | undefined> {
    return this.exclusive(async () => {
      const entry = this.get(path);
      if (!entry) return undefined;
      await this.persist(this.entries.filter((e) => e !== entry));
      return entry;
    });
  }

  update(path: string, change: (e: MountEntry) => MountEntry): Promise<MountEntry> {
    return this.exclusive(async () => {
      const entry = this.get(path);
      if (!entry) throw new BadRequestError(`no mount at "${path}"`);
      const next = change(structuredClone(entry));
      if (next.path !== entry.path) this.checkFree(next.path, entry);
      await this.persist(this.entries.map((e) => (e === entry ? next : e)));
      return next;
    });
  }

  clear(): void {
    this.entries = [];
    this.stored = { shared: '[]', local: '[]' };
    this.changed();
  }
}
