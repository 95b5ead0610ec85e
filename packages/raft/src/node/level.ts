import { ClassicLevel } from 'classic-level';
import { makeDir } from './make-dir';

/**
 * Opens (creating if needed) a LevelDB with Buffer values; `keys` picks the key encoding.
 * Without block compression: the values are ciphertext, which Snappy cannot shrink, so it only
 * cost CPU on every flush and compaction (keys are prefix-compressed within blocks either way).
 */
export async function openLevel<K extends string | Buffer>(
  dir: string, keys: 'utf8' | 'buffer', options: { writeBufferSize?: number } = {},
): Promise<ClassicLevel<K, Buffer>> {
  await makeDir(dir);
  const db = new ClassicLevel<K, Buffer>(dir, { keyEncoding: keys, valueEncoding: 'buffer', compression: false, ...options });
  try {
    await db.open();
  } catch (err) {
    // LevelDB's errors come from the main realm, so check the code rather than the class.
    const code = (err as { cause?: { code?: unknown } } | undefined)?.cause?.code ?? (err as { code?: unknown } | undefined)?.code;
    const why = code === 'LEVEL_LOCKED' ? 'it is locked by another process or another open node' : String((err as Error).message);
    throw new Error(`could not open ${dir}: ${why}`, { cause: err });
  }
  return db;
}
