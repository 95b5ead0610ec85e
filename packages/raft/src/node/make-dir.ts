import { mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Creates `dir` and any missing parents, like `mkdir -p`.
 *
 * Node's own `mkdir(..., { recursive: true })` never settles under a pseudo-filesystem such as
 * /proc, where creating a child of an existing directory fails with ENOENT: it takes that as a
 * missing parent and climbs back down, forever, on a thread-pool thread. Here each level is
 * created once, from the deepest existing ancestor down, and the first failure is thrown with
 * the system's code (ENOENT, EACCES, ENOTDIR, EROFS...).
 */
export async function makeDir(dir: string, mode?: number): Promise<void> {
  const missing: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    const kind = await stat(at).then((s) => (s.isDirectory() ? 'dir' : 'other'), (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return 'missing';
      throw err;
    });
    if (kind === 'dir') break;
    if (kind === 'other') throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${dir}'`), { code: 'ENOTDIR', path: at });
    missing.push(at);
    if (dirname(at) === at) break;
  }
  for (const at of missing.reverse()) {
    await mkdir(at, mode === undefined ? {} : { mode }).catch((err: NodeJS.ErrnoException) => {
      // Another process may have made it in between; anything else is final.
      if (err.code !== 'EEXIST') throw err;
    });
  }
}
