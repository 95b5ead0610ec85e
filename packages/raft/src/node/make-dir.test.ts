import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeDir } from './make-dir';

describe('makeDir', () => {
  let dir: string;
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'make-dir-')); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates every missing level with the mode asked for, and accepts one that exists', async () => {
    const deep = join(dir, 'a', 'b', 'c');
    await makeDir(deep, 0o700);
    expect(statSync(deep).isDirectory()).toBe(true);
    expect(statSync(join(dir, 'a')).mode & 0o777).toBe(0o700);
    await makeDir(deep);
  });

  it('fails with ENOTDIR when a part of the path is a file', async () => {
    writeFileSync(join(dir, 'file'), '');
    await expect(makeDir(join(dir, 'file', 'x', 'y'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });

  it('fails at once under /proc, where recursive mkdir never settles', async () => {
    await expect(makeDir('/proc/strongroom-no-such-dir/data')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
