import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { MerkleTree, type MerkleIndexer } from './merkle';
import { openMerkleDb, type MerkleDb } from './merkle/store';
import { merkleAdapters } from './merkle-adapters';

describe('the Merkle index as the primary answers a diff', () => {
  let dir: string;
  let db: MerkleDb;
  let adapters: ReturnType<typeof merkleAdapters>;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-merkle-adapters-'));
    db = await openMerkleDb(join(dir, 'merkle'));
    const tree = await MerkleTree.open(db);
    tree.apply(1, [{ type: 'put', key: 'logical/a', value: Buffer.from('1') }]);
    adapters = merkleAdapters({ tree } as unknown as MerkleIndexer);
  });
  afterEach(async () => {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers a summary of the wrong size or a page past the last leaf as the caller\'s mistake', async () => {
    const full = adapters.summary();
    await expect(adapters.diff({ trees: [{ tree: 'replicated', leafHashes: [Buffer.alloc(32)] }] })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT, message: expect.stringMatching(/replicated hashes must be 4096 hashes/),
    });
    await expect(adapters.diff({ ...full, page: { from: 2 * 4096 + 1, maxBytes: 1024 } })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    // A page where the answer ends is empty, and says so.
    expect(await adapters.diff({ ...full, page: { from: 2 * 4096, maxBytes: 1024 } })).toEqual({ leaves: [], next: null });
  });
});
