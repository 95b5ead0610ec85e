import { mkdir } from 'node:fs/promises';
import { ClassicLevel } from 'classic-level';
import type { Storage, TxnOp } from '@strongroom/core';

/**
 * Every write passes `sync: true` so that a resolved promise means the data is on disk. LevelDB
 * does not merge concurrent synced writes, so each one pays its own fsync; group commit (one batch
 * for many waiting writers) is the fix when throughput matters.
 */
const SYNC = { sync: true } as const;

/**
 * Keys are read in batches that start at one after every seek and double while only leaves come
 * back: a folder that sits right after a seek costs one read, and the keys read past a folder we
 * are about to skip are never more than the leaves already returned, so listing stays
 * proportional to its output. The cap keeps one native call from blocking the thread for long.
 */
const MAX_BATCH = 1024;

/** Physical storage on LevelDB, one database directory per server. */
export class LevelStorage implements Storage {
  private constructor(
    private readonly db: ClassicLevel<string, Buffer>,
    readonly dir: string,
  ) {}

  /** Opens (creating if needed) the database in `dir`. Fails if another process or instance holds it. */
  static async open(dir: string): Promise<LevelStorage> {
    await mkdir(dir, { recursive: true });
    const db = new ClassicLevel<string, Buffer>(dir, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
    try {
      await db.open();
    } catch (err) {
      if (isLocked(err)) {
        throw new Error(
          `storage directory ${dir} is locked: another Strongroom server (or another storage in this process) may be using it`,
          { cause: err },
        );
      }
      throw new Error(`could not open storage directory ${dir}: ${explain(err)}`, { cause: err });
    }
    return new LevelStorage(db, dir);
  }

  async get(key: string): Promise<Buffer | null> {
    // classic-level decodes each value into a fresh Buffer, so callers cannot alias stored data.
    const value = await this.db.get(key);
    return value === undefined ? null : value;
  }

  async put(key: string, value: Buffer): Promise<void> {
    await this.db.put(key, value, SYNC);
  }

  async delete(key: string): Promise<void> {
    await this.db.del(key, SYNC);
  }

  async list(prefix: string): Promise<string[]> {
    const out: string[] = [];
    const it = this.db.keys(prefix.endsWith('/') ? { gte: prefix, lt: siblingAfter(prefix) } : { gte: prefix });
    try {
      let size = 1;
      scan: for (;;) {
        const keys = await it.nextv(size);
        if (keys.length === 0) break;
        for (const key of keys) {
          // Only a prefix not ending in '/' has no upper bound; its range ends here.
          if (!key.startsWith(prefix)) break scan;
          const rest = key.slice(prefix.length);
          const slash = rest.indexOf('/');
          if (slash === -1) {
            out.push(rest);
            continue;
          }
          const folder = prefix + rest.slice(0, slash + 1);
          out.push(rest.slice(0, slash + 1));
          it.seek(siblingAfter(folder));
          size = 1;
          continue scan;
        }
        size = Math.min(size * 2, MAX_BATCH);
      }
    } finally {
      await it.close();
    }
    // LevelDB orders by UTF-8 bytes, which differs from JavaScript's UTF-16 order once astral
    // characters meet U+E000..U+FFFF; sort so every Storage lists in the same order.
    return out.sort();
  }

  async txn(ops: TxnOp[]): Promise<void> {
    await this.db.batch(
      ops.map((op) =>
        op.type === 'put' ? { type: 'put' as const, key: op.key, value: op.value } : { type: 'del' as const, key: op.key },
      ),
      SYNC,
    );
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

/**
 * The smallest key greater than every key that starts with `folder` (which ends in '/'). '0' is
 * the byte after '/', and both are single bytes in UTF-8, so this holds in LevelDB's byte order
 * whatever characters precede them; a high sentinel such as '\uffff' would not, since astral
 * characters encode to larger bytes.
 */
function siblingAfter(folder: string): string {
  return folder.slice(0, -1) + '0';
}

// Duck-typed rather than `instanceof Error`: LevelDB's native errors come from the main realm,
// which differs from the caller's under Jest's sandbox.
function causeOf(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { cause?: unknown }).cause : undefined;
}

function isLocked(err: unknown): boolean {
  for (let e = err, depth = 0; e !== undefined && depth < 5; e = causeOf(e), depth++) {
    if (typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'LEVEL_LOCKED') return true;
  }
  return false;
}

function explain(err: unknown): string {
  const parts: string[] = [];
  for (let e = err, depth = 0; e !== undefined && depth < 5; e = causeOf(e), depth++) {
    const message = typeof e === 'object' && e !== null ? (e as { message?: unknown }).message : e;
    parts.push(String(message));
  }
  return parts.join(': ');
}
