import type { LogicalStorage } from '@strongroom/core';

type KeyWrite = { type: 'put' | 'delete'; key: string };

/** Where secrets point back at their associations: accessor, secret, then destination type and name. */
export const SECRET_INDEX_PREFIX = 'sys/sync/secret-index/';

/** The accessor an index key is under, or undefined for any other key. */
function accessorOf(key: string): string | undefined {
  if (!key.startsWith(SECRET_INDEX_PREFIX)) return undefined;
  const end = key.indexOf('/', SECRET_INDEX_PREFIX.length);
  return end < 0 ? undefined : decodeURIComponent(key.slice(SECRET_INDEX_PREFIX.length, end));
}

/**
 * Which mounts (by accessor) have associations, so that a KV change under a mount with none costs
 * no storage read: listing a secret's associations opens a storage iterator, which costs far more
 * than the write it follows when, as for most writes, there is nothing to find. It may name a
 * mount that has none left (a removal is confirmed against storage on the next lookup), never
 * miss one that has: every index write is noted before it commits, and the set is read again
 * from storage whenever what it was built from may have been replaced (the service starting on a
 * node, a restore).
 */
export class AssociationIndex {
  /** null: not built, so every lookup goes to storage. */
  private known: Set<string> | null = null;
  /** Mounts that lost an association since storage was last asked whether they have any left. */
  private readonly removed = new Set<string>();
  /** Bumped by every noted write of a mount's entries: an answer read from storage meanwhile may be old. */
  private readonly changes = new Map<string, number>();
  private loading: Set<string> | null = null;

  constructor(private readonly storage: LogicalStorage) {}

  /** Reads which mounts have associations from storage, replacing what was known. */
  async load(): Promise<void> {
    const during = new Set<string>();
    this.loading = during;
    try {
      const dirs = await this.storage.list(SECRET_INDEX_PREFIX);
      const known = new Set(dirs.filter((d) => d.endsWith('/')).map((d) => decodeURIComponent(d.slice(0, -1))));
      for (const accessor of during) known.add(accessor);
      this.known = known;
    } finally {
      if (this.loading === during) this.loading = null;
    }
  }

  /** Notes writes about to commit (puts) or just committed (deletes); other keys are ignored. */
  note(ops: readonly KeyWrite[], phase: 'before' | 'after'): void {
    for (const op of ops) {
      const accessor = accessorOf(op.key);
      if (accessor === undefined || (op.type === 'delete') !== (phase === 'after')) continue;
      this.changes.set(accessor, (this.changes.get(accessor) ?? 0) + 1);
      if (op.type === 'delete') {
        this.removed.add(accessor);
      } else {
        this.known?.add(accessor);
        this.loading?.add(accessor);
        this.removed.delete(accessor);
      }
    }
  }

  /** Notes a change from the commit feed: a write made elsewhere (another node, replication), in the order it committed. */
  noteCommitted(op: KeyWrite): void {
    this.note([op], op.type === 'put' ? 'before' : 'after');
  }

  /** False only when the mount certainly has no association. */
  async mayHave(accessor: string): Promise<boolean> {
    const known = this.known;
    if (!known) return true;
    if (known.has(accessor) && this.removed.has(accessor)) {
      const seen = this.changes.get(accessor);
      const left = await this.storage.list(`${SECRET_INDEX_PREFIX}${encodeURIComponent(accessor)}/`);
      if (this.known === known && this.changes.get(accessor) === seen) {
        this.removed.delete(accessor);
        if (left.length === 0) known.delete(accessor);
      }
    }
    return known.has(accessor);
  }
}
