import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { LevelLogStore } from './level-log-store';
import type { LogStore } from './log-store';
import { WalLogStore, exists, type WalOptions } from './wal-log-store';

/**
 * Opens the node's log in `<dataDir>/wal`. A data directory from an earlier release keeps its
 * log in a LevelDB at `<dataDir>/raft`: it is copied into a new write-ahead log (which appears
 * whole or not at all), and removed only once the copy is in place, so a crash at any point
 * leaves one complete log to open next time.
 */
export async function openLogStore(dataDir: string, options: WalOptions = {}): Promise<LogStore> {
  const walDir = join(dataDir, 'wal');
  const levelDir = join(dataDir, 'raft');
  if (!(await exists(walDir)) && (await exists(join(levelDir, 'CURRENT')))) {
    const old = await LevelLogStore.open(levelDir);
    try {
      await WalLogStore.create(walDir, await old.load());
    } finally {
      await old.close();
    }
  }
  const store = await WalLogStore.open(walDir, options);
  await rm(levelDir, { recursive: true, force: true });
  return store;
}
