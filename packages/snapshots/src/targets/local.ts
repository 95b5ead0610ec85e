import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import type { LocalSettings } from '../config';
import { ByteCounter, STREAM_BUFFER_BYTES, type SnapshotTarget, type StoredSnapshot } from './target';

export class NotEnoughSpaceError extends Error {}

/**
 * Snapshots as files in a directory. A snapshot is written to a hidden temporary file, synced,
 * and renamed into place, so a crash or an error never leaves a partial `.snap` behind.
 * `local_max_space` caps every file starting with the file prefix, the new one included.
 */
export class LocalTarget implements SnapshotTarget {
  private readonly dir: string;

  constructor(dir: string, private readonly filePrefix: string, private readonly settings: LocalSettings) {
    this.dir = resolve(dir);
  }

  url(name: string): string {
    return pathToFileURL(join(this.dir, name)).href;
  }

  async write(name: string, data: Readable, signal: AbortSignal): Promise<number> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const used = (await this.list()).reduce((sum, s) => sum + s.size, 0);
    const max = this.settings.local_max_space;
    const left = max - used;
    const tooBig = (): Error => new NotEnoughSpaceError(
      `not enough space: the snapshots with prefix "${this.filePrefix}" already use ${used} of local_max_space ${max} bytes, and this snapshot needs more than the ${Math.max(0, left)} left`,
    );
    if (left <= 0) {
      data.destroy();
      throw tooBig();
    }
    await this.removeLeftovers();
    const temp = join(this.dir, `.${name}.partial`);
    // The file stream gathers what arrives while a write is in flight into one writev call.
    const counter = new ByteCounter(left, tooBig);
    try {
      await pipeline(data, counter, createWriteStream(temp, { flags: 'wx', mode: 0o600, highWaterMark: STREAM_BUFFER_BYTES }), { signal });
      await syncPath(temp);
      await rename(temp, join(this.dir, name));
    } catch (err) {
      await unlink(temp).catch(() => undefined);
      throw err;
    }
    await syncPath(this.dir);
    return counter.bytes;
  }

  /** Temporary files of attempts a crash cut short: hidden, never counted, but taking space. */
  private async removeLeftovers(): Promise<void> {
    for (const name of await readdir(this.dir)) {
      if (name.startsWith(`.${this.filePrefix}-`) && name.endsWith('.snap.partial')) await unlink(join(this.dir, name)).catch(() => undefined);
    }
  }

  async list(): Promise<StoredSnapshot[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: StoredSnapshot[] = [];
    for (const name of names) {
      if (!name.startsWith(this.filePrefix)) continue;
      const st = await stat(join(this.dir, name)).catch(() => null);
      if (st?.isFile()) out.push({ name, size: st.size });
    }
    return out;
  }

  async remove(name: string): Promise<void> {
    await unlink(join(this.dir, name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  close(): void {}
}

/** fsync of a file, or of a directory to make a rename in it durable. */
async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
