import { runStorageConformance } from '@strongroom/base';
import { MemoryStorage } from './memory-storage';

runStorageConformance('MemoryStorage', async () => ({ storage: new MemoryStorage() }));
