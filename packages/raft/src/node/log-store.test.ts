import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelLogStore } from './level-log-store';
import { MemoryLogStore } from './log-store';
import { runLogStoreConformance } from './test-support/log-store-conformance';

runLogStoreConformance('MemoryLogStore', async () => {
  const store = new MemoryLogStore();
  return { store, reopen: async () => store };
});

runLogStoreConformance('LevelLogStore', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'strongroom-log-'));
  let current = await LevelLogStore.open(join(dir, 'raft'));
  return {
    store: current,
    reopen: async () => {
      await current.close();
      current = await LevelLogStore.open(join(dir, 'raft'));
      return current;
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});
