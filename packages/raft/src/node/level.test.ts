import { readdirSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { openLevel } from './level';
import { tempDir } from './test-support/cluster';

describe('openLevel', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await tempDir('strongroom-level-');
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('stores blocks uncompressed, since the values it holds are ciphertext', async () => {
    const db = await openLevel<string>(join(dir, 'db'), 'utf8');
    // Compressible on purpose: a compressed table would be a small fraction of this.
    const value = Buffer.alloc(1000, 'a');
    await db.batch(Array.from({ length: 500 }, (_, i) => ({ type: 'put' as const, key: `k${i}`, value })));
    await db.compactRange('k', 'l');
    await db.close();
    const tables = readdirSync(join(dir, 'db')).filter((n) => n.endsWith('.ldb'));
    const bytes = tables.reduce((sum, n) => sum + statSync(join(dir, 'db', n)).size, 0);
    expect(bytes).toBeGreaterThan(500 * 1000);
  });
});
