import { MemoryStorage } from './memory-storage';
import { runStorageConformance } from './storage-conformance';

runStorageConformance('MemoryStorage', async () => ({ storage: new MemoryStorage() }));
