import { BadRequestError, NotFoundError } from '../errors';
import { checkPathName } from '../path-names';
import { BUILTIN_TYPES, MountTable } from '../mounts/mount-table';
import { PolicyStore } from '../policy-store';
import type { Barrier } from '../seal/barrier';
import { deleteTree } from '../storage/logical';
import { randomBase62 } from '../token/token-id';

export const ROOT_NAMESPACE_ID = 'root';

export interface NamespaceInfo {
  id: string;
  /** '' for the root namespace, otherwise like `team/app/` (always ending with '/'). */
  path: string;
  customMetadata: Record<string, string>;
}

/** One namespace and what belongs to it: its mount tables and its policies. */
export class NamespaceView {
  readonly mounts: MountTable;
  readonly auths: MountTable;
  readonly policies: PolicyStore;

  constructor(readonly info: NamespaceInfo, barrier: Barrier, tablesChanged?: () => void) {
    const root = info.id === ROOT_NAMESPACE_ID;
    const prefix = dataPrefix(info.id);
    // The root namespace keeps the storage keys it had before namespaces existed.
    this.mounts = new MountTable('secret', barrier, root ? undefined : { shared: `${prefix}mounts`, local: `${prefix}local-mounts` }, tablesChanged);
    this.auths = new MountTable('auth', barrier, root ? undefined : { shared: `${prefix}auth`, local: `${prefix}local-auth` }, tablesChanged);
    this.policies = root ? new PolicyStore(barrier) : new PolicyStore(barrier, `${dataPrefix(info.id)}policy/`);
  }

  get id(): string {
    return this.info.id;
  }

  get path(): string {
    return this.info.path;
  }

  get isRoot(): boolean {
    return this.info.id === ROOT_NAMESPACE_ID;
  }

  async load(): Promise<void> {
    await this.mounts.load();
    await this.auths.load();
  }

  clear(): void {
    this.mounts.clear();
    this.auths.clear();
    this.policies.clear();
  }
}

export const NAMESPACE_RECORD_PREFIX = 'sys/namespaces/';
const RECORD_PREFIX = NAMESPACE_RECORD_PREFIX;
const NAME = /^[A-Za-z0-9_.-]+$/;
/** Names that would be read as something else at the start of a path. */
const RESERVED_NAMES = new Set(['root', 'sys', 'auth', 'identity', 'cubbyhole', '.', '..']);

export function dataPrefix(id: string): string {
  return `core/namespaces/${id}/`;
}

/** Joins an `X-Vault-Namespace` header value into a clean namespace path (`a/b/`). */
export function normalizeNamespacePath(raw: string): string {
  // Most requests name no namespace: nothing to split.
  if (raw === '') return '';
  const segs = raw.split('/').filter((s) => s !== '');
  return segs.length === 0 ? '' : `${segs.join('/')}/`;
}

/**
 * Every namespace by path and ID. The root always exists; others are stored as records under
 * `sys/namespaces/<id>` with their tables and policies under their own prefix.
 */
export class NamespaceRegistry {
  readonly root: NamespaceView;
  private readonly byPath = new Map<string, NamespaceView>();
  private readonly byIdMap = new Map<string, NamespaceView>();

  /** `tablesChanged` hears of every change to any namespace's mount tables (loads included). */
  constructor(private readonly barrier: Barrier, private readonly tablesChanged?: () => void) {
    this.root = new NamespaceView({ id: ROOT_NAMESPACE_ID, path: '', customMetadata: {} }, barrier, tablesChanged);
    this.index(this.root);
  }

  private index(view: NamespaceView): void {
    this.byPath.set(view.path, view);
    this.byIdMap.set(view.id, view);
  }

  async load(): Promise<void> {
    this.clear();
    await this.root.load();
    for (const id of await this.barrier.list(RECORD_PREFIX)) {
      const raw = await this.barrier.get(RECORD_PREFIX + id);
      if (!raw) continue;
      const view = new NamespaceView(JSON.parse(raw.toString('utf8')) as NamespaceInfo, this.barrier, this.tablesChanged);
      await view.load();
      this.index(view);
    }
  }

  /**
   * Rereads the records and every table while serving, after storage changed underneath (a
   * replication stream): views that still exist are kept and reloaded, new ones added, gone
   * ones dropped. Answers the views that were dropped.
   */
  async reload(): Promise<NamespaceView[]> {
    const ids = new Set(await this.barrier.list(RECORD_PREFIX));
    const dropped: NamespaceView[] = [];
    for (const view of this.all()) {
      if (view.isRoot || ids.has(view.id)) continue;
      this.byPath.delete(view.path);
      this.byIdMap.delete(view.id);
      view.clear();
      dropped.push(view);
    }
    await this.root.load();
    for (const id of ids) {
      const raw = await this.barrier.get(RECORD_PREFIX + id);
      if (!raw) continue;
      const info = JSON.parse(raw.toString('utf8')) as NamespaceInfo;
      let view = this.byIdMap.get(id);
      if (view) {
        view.info.customMetadata = info.customMetadata;
      } else {
        view = new NamespaceView(info, this.barrier, this.tablesChanged);
        this.index(view);
      }
      await view.load();
    }
    return dropped;
  }

  clear(): void {
    for (const view of this.byPath.values()) view.clear();
    this.byPath.clear();
    this.byIdMap.clear();
    this.index(this.root);
  }

  all(): NamespaceView[] {
    return [...this.byPath.values()];
  }

  byId(id: string): NamespaceView | undefined {
    return this.byIdMap.get(id);
  }

  byPathName(path: string): NamespaceView | undefined {
    return this.byPath.get(path);
  }

  /** Direct children of `parent`. */
  children(parent: NamespaceView): NamespaceView[] {
    return this.all().filter((v) => v !== parent && v.path.startsWith(parent.path) && !v.path.slice(parent.path.length, -1).includes('/'));
  }

  /**
   * The namespace a request addresses: the `X-Vault-Namespace` header, then as many leading
   * path segments as name existing child namespaces. Returns the rest of the path.
   */
  resolve(header: string | undefined, path: string): { view: NamespaceView; rest: string } {
    const base = normalizeNamespacePath(header ?? '');
    let view = this.byPath.get(base);
    if (!view) throw new NotFoundError(`namespace "${base}" does not exist`);
    let rest = path;
    // With the root namespace alone no path segment can name a child.
    if (this.byPath.size === 1) return { view, rest };
    for (;;) {
      const slash = rest.indexOf('/');
      if (slash <= 0) break;
      const next = this.byPath.get(`${view.path}${rest.slice(0, slash)}/`);
      if (!next) break;
      view = next;
      rest = rest.slice(slash + 1);
    }
    return { view, rest };
  }

  /** Creates `name` (one or more segments) under `parent`; every ancestor must exist. */
  async create(parent: NamespaceView, name: string, customMetadata: Record<string, string>, setup: (view: NamespaceView) => Promise<void>): Promise<NamespaceView> {
    checkPathName('path', name);
    const segs = name.split('/').filter((s) => s !== '');
    if (segs.length === 0) throw new BadRequestError('invalid value for "path": the namespace path must not be empty');
    for (const seg of segs) {
      if (!NAME.test(seg) || RESERVED_NAMES.has(seg)) {
        throw new BadRequestError(`invalid value for "path": "${seg}" is not a usable namespace name (letters, digits, '_', '-', '.'; not a reserved word)`);
      }
    }
    const path = `${parent.path}${segs.join('/')}/`;
    const parentPath = `${parent.path}${segs.slice(0, -1).join('/')}${segs.length > 1 ? '/' : ''}`;
    if (!this.byPath.has(parentPath)) throw new BadRequestError(`invalid value for "path": parent namespace "${parentPath}" does not exist`);
    if (this.byPath.has(path)) throw new BadRequestError(`namespace "${path}" already exists`);
    let id = randomBase62(5);
    while (this.byIdMap.has(id)) id = randomBase62(5);
    const view = new NamespaceView({ id, path, customMetadata }, this.barrier, this.tablesChanged);
    await view.load();
    await setup(view);
    await this.barrier.put(RECORD_PREFIX + id, Buffer.from(JSON.stringify(view.info)));
    this.index(view);
    return view;
  }

  async updateMetadata(view: NamespaceView, customMetadata: Record<string, string>): Promise<void> {
    view.info.customMetadata = customMetadata;
    await this.barrier.put(RECORD_PREFIX + view.id, Buffer.from(JSON.stringify(view.info)));
  }

  /** Removes an empty namespace (only built-in mounts, no children) and all it stored. */
  async delete(view: NamespaceView): Promise<void> {
    if (view.isRoot) throw new BadRequestError('the root namespace cannot be deleted');
    const children = this.children(view);
    if (children.length > 0) {
      throw new BadRequestError(`namespace "${view.path}" still has child namespaces (${children.map((c) => c.path).join(', ')}); delete them first`);
    }
    const mounts = [...view.mounts.all(), ...view.auths.all()].filter((m) => !BUILTIN_TYPES.has(m.type));
    if (mounts.length > 0) {
      throw new BadRequestError(`namespace "${view.path}" still has mounts (${mounts.map((m) => m.path).join(', ')}); disable them first`);
    }
    await this.barrier.delete(RECORD_PREFIX + view.id);
    await deleteTree(this.barrier, dataPrefix(view.id));
    this.byPath.delete(view.path);
    this.byIdMap.delete(view.id);
    view.clear();
  }
}
