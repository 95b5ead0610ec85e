import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runStorageConformance } from '@strongroom/base';
import { MemoryNetwork, RaftNode } from '@strongroom/raft';
import { RaftStorage } from './raft-storage';

const FAST = { tickMs: 10, electionTicks: 10, heartbeatTicks: 1 } as const;
const tempDir = () => mkdtemp(join(tmpdir(), 'strongroom-raft-storage-'));

runStorageConformance('RaftStorage on a single-node cluster', async () => {
  const dir = await tempDir();
  const node = await RaftNode.open({
    id: 'solo',
    dataDir: join(dir, 'solo'),
    transport: new MemoryNetwork().transport('solo'),
    bootstrap: { voters: ['solo'], learners: [] },
    ...FAST,
  });
  return { storage: new RaftStorage(node, { ownsNode: true }), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

describe('RaftStorage', () => {
  it('checks and sets', async () => {
    const dir = await tempDir();
    const node = await RaftNode.open({
      id: 'solo', dataDir: dir, transport: new MemoryNetwork().transport('solo'), bootstrap: { voters: ['solo'], learners: [] }, ...FAST,
    });
    const s = new RaftStorage(node, { ownsNode: true });
    try {
      expect(await s.checkAndSet([{ key: 'lock', value: null }], [{ type: 'put', key: 'lock', value: Buffer.from('me') }])).toBe(true);
      expect(await s.checkAndSet([{ key: 'lock', value: null }], [{ type: 'put', key: 'lock', value: Buffer.from('you') }])).toBe(false);
      expect(await s.checkAndSet([{ key: 'lock', value: Buffer.from('me') }], [{ type: 'delete', key: 'lock' }])).toBe(true);
      expect(await s.get('lock')).toBeNull();
    } finally {
      await s.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
