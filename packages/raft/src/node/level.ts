import { resolve } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { makeDir } from './make-dir';

/** Locations open in this process with `shared`: LevelDB hands a second such open the same database. */
const sharedOpen = new Set<string>();

/**
 * Opens (creating if needed) a LevelDB with Buffer values; `keys` picks the key encoding.
 * Without block compression: the values are ciphertext, which Snappy cannot shrink, so it only
 * cost CPU on every flush and compaction (keys are prefix-compressed within blocks either way).
 *
 * `shared` lets worker threads of this process open the same location (they then share this
 * database). LevelDB no longer refuses a second open of it in this process then, so that is
 * refused here, as it is for a database that is not shared: two nodes must never share a state.
 */
export async function openLevel<K extends string | Buffer>(
  dir: string, keys: 'utf8' | 'buffer', options: { writeBufferSize?: number; shared?: boolean } = {},
): Promise<ClassicLevel<K, Buffer>> {
  await makeDir(dir);
  const { shared = false, ...tuning } = options;
  const location = resolve(dir);
  if (shared) {
    if (sharedOpen.has(location)) throw new Error(`could not open ${dir}: ${LOCKED}`);
    sharedOpen.add(location);
  }
  const db = new ClassicLevel<K, Buffer>(dir, { keyEncoding: keys, valueEncoding: 'buffer', compression: false, multithreading: shared, ...tuning });
  try {
    await db.open();
  } catch (err) {
    if (shared) sharedOpen.delete(location);
    // LevelDB's errors come from the main realm, so check the code rather than the class.
    const code = (err as { cause?: { code?: unknown } } | undefined)?.cause?.code ?? (err as { code?: unknown } | undefined)?.code;
    const why = code === 'LEVEL_LOCKED' ? LOCKED : String((err as Error).message);
    throw new Error(`could not open ${dir}: ${why}`, { cause: err });
  }
  if (shared) db.once('closed', () => sharedOpen.delete(location));
  return db;
}

const LOCKED = 'it is locked by another process or another open node';
