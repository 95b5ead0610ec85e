import { createHash, randomBytes, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { NodeId, SnapshotMeta } from '../core/types';
import { makeDir } from './make-dir';

/**
 * Snapshot file, version 1:
 *   "SRSNAP" (6 bytes), version (u16), headerLen (u32), header (UTF-8 JSON: SnapshotHeader),
 *   records: keyLen (u32), valueLen (u32), key, value, ...
 *   end: keyLen = 0xFFFFFFFF,
 *   trailer: SHA-256 of every byte before it (32 bytes).
 * Integers are big-endian. Keys are the state machine's own keys (see state-machine.ts), in
 * LevelDB order. Not compressed: values are barrier ciphertext, which does not compress.
 */
export interface SnapshotHeader extends SnapshotMeta {
  /** Cluster addresses of the members as of `index`, so a node restored from it can reach its peers. */
  addresses: Record<NodeId, string>;
}

const MAGIC = Buffer.from('SRSNAP');
const VERSION = 1;
const END = 0xffff_ffff;
const FLUSH_BYTES = 1 << 20;
const BATCH_RECORDS = 1024;

export class SnapshotFormatError extends Error {}

/** Reads a snapshot stream front to back, verifying the trailer once every record has been read. */
export class SnapshotReader {
  private readonly source: AsyncIterator<Uint8Array>;
  private buf: Buffer = Buffer.alloc(0);
  private pos = 0;
  private readonly hash: Hash = createHash('sha256');
  private headerValue: SnapshotHeader | undefined;

  constructor(source: AsyncIterable<Uint8Array>) {
    this.source = source[Symbol.asyncIterator]();
  }

  async header(): Promise<SnapshotHeader> {
    if (this.headerValue) return this.headerValue;
    await this.need(12);
    const magic = this.take(6);
    if (!magic.equals(MAGIC)) throw new SnapshotFormatError('not a Strongroom Raft snapshot');
    const version = this.take(2).readUInt16BE(0);
    if (version !== VERSION) throw new SnapshotFormatError(`unsupported snapshot version ${version}`);
    const len = this.take(4).readUInt32BE(0);
    await this.need(len);
    let parsed: SnapshotHeader;
    try {
      parsed = JSON.parse(this.take(len).toString('utf8')) as SnapshotHeader;
    } catch (err) {
      throw new SnapshotFormatError('snapshot header is not valid JSON', { cause: err });
    }
    if (typeof parsed.index !== 'number' || typeof parsed.term !== 'number' || !parsed.conf || !Array.isArray(parsed.conf.voters)) {
      throw new SnapshotFormatError('snapshot header lacks index, term or conf');
    }
    this.headerValue = { index: parsed.index, term: parsed.term, conf: parsed.conf, addresses: parsed.addresses ?? {} };
    return this.headerValue;
  }

  /**
   * Yields the records in batches (views into the read buffers, never modified afterwards).
   * Throws SnapshotFormatError after the last batch when the stream is truncated, has trailing
   * bytes, or fails its checksum: a caller must not commit what it wrote until this returns.
   */
  async *records(): AsyncGenerator<Array<[Buffer, Buffer]>> {
    await this.header();
    let batch: Array<[Buffer, Buffer]> = [];
    let bytes = 0;
    for (;;) {
      if (this.buf.length - this.pos < 8 && batch.length > 0) {
        yield batch;
        batch = [];
        bytes = 0;
      }
      await this.need(4);
      const keyLen = this.take(4).readUInt32BE(0);
      if (keyLen === END) break;
      await this.need(4);
      const valueLen = this.take(4).readUInt32BE(0);
      if (this.buf.length - this.pos < keyLen + valueLen && batch.length > 0) {
        yield batch;
        batch = [];
        bytes = 0;
      }
      await this.need(keyLen + valueLen);
      batch.push([this.take(keyLen), this.take(valueLen)]);
      bytes += keyLen + valueLen;
      if (batch.length >= BATCH_RECORDS || bytes >= FLUSH_BYTES) {
        yield batch;
        batch = [];
        bytes = 0;
      }
    }
    if (batch.length > 0) yield batch;
    this.hash.update(this.buf.subarray(0, this.pos));
    this.buf = this.buf.subarray(this.pos);
    this.pos = 0;
    const digest = this.hash.digest();
    await this.need(32);
    if (!this.take(32).equals(digest)) throw new SnapshotFormatError('snapshot checksum mismatch');
    if (this.buf.length > this.pos || !(await this.source.next()).done) throw new SnapshotFormatError('trailing bytes after the snapshot');
  }

  /** Reads to the end, checking the whole stream. */
  async verify(): Promise<SnapshotHeader> {
    const header = await this.header();
    for await (const batch of this.records()) void batch;
    return header;
  }

  /** Makes `n` unread bytes available, hashing the consumed ones as they are dropped. */
  private async need(n: number): Promise<void> {
    let available = this.buf.length - this.pos;
    if (available >= n) return;
    const parts: Buffer[] = [this.buf.subarray(this.pos)];
    // Never after the digest: the trailer is read with pos reset to 0.
    if (this.pos > 0) this.hash.update(this.buf.subarray(0, this.pos));
    while (available < n) {
      const next = await this.source.next();
      if (next.done) throw new SnapshotFormatError('snapshot is truncated');
      const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
      parts.push(chunk);
      available += chunk.length;
    }
    this.buf = Buffer.concat(parts);
    this.pos = 0;
  }

  private take(n: number): Buffer {
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }
}

/**
 * Makes the bytes of the format, front to back, hashing each piece as it is made: the file a
 * node keeps and the stream an operator downloads come out of the same code, so they cannot differ.
 */
export class SnapshotEncoder {
  private readonly hash: Hash = createHash('sha256');

  /** Magic, version, header length and the JSON header. */
  head(header: SnapshotHeader): Buffer {
    const json = Buffer.from(JSON.stringify(header), 'utf8');
    const out = Buffer.allocUnsafe(12 + json.length);
    MAGIC.copy(out, 0);
    out.writeUInt16BE(VERSION, 6);
    out.writeUInt32BE(json.length, 8);
    json.copy(out, 12);
    return this.hashed(out);
  }

  /** A batch of records in one buffer, not three pieces each. A string key is written as UTF-8. */
  records(records: ReadonlyArray<readonly [SnapshotKey, Uint8Array]>): Buffer {
    let size = 0;
    // A UTF-16 code unit takes at most 3 bytes of UTF-8: room enough without measuring each key.
    for (const [key, value] of records) size += 8 + (typeof key === 'string' ? key.length * 3 : key.byteLength) + value.byteLength;
    const out = Buffer.allocUnsafe(size);
    let at = 0;
    for (const [key, value] of records) {
      let keyLen: number;
      if (typeof key === 'string') {
        keyLen = writeUtf8(out, key, at + 8);
      } else {
        out.set(key, at + 8);
        keyLen = key.byteLength;
      }
      out.writeUInt32BE(keyLen, at);
      out.writeUInt32BE(value.byteLength, at + 4);
      out.set(value, at + 8 + keyLen);
      at += 8 + keyLen + value.byteLength;
    }
    return this.hashed(out.subarray(0, at));
  }

  /** The end marker and the trailer; nothing may follow. */
  end(): Buffer {
    const out = Buffer.allocUnsafe(4 + 32);
    out.writeUInt32BE(END, 0);
    this.hash.update(out.subarray(0, 4));
    this.hash.digest().copy(out, 4);
    return out;
  }

  private hashed(bytes: Buffer): Buffer {
    this.hash.update(bytes);
    return bytes;
  }
}

/** A record's key: its bytes, or a string whose UTF-8 encoding they are. */
export type SnapshotKey = string | Uint8Array;

/** Writes `key` as UTF-8 at `at`, returning the bytes written; keys are mostly ASCII, done here without a call into C++. */
function writeUtf8(out: Buffer, key: string, at: number): number {
  const n = key.length;
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x80) return out.write(key, at, 'utf8');
    out[at + i] = c;
  }
  return n;
}

/**
 * A snapshot as a stream, straight from a state view's batches: one buffer per batch, read only
 * as fast as the consumer takes them, so at most a batch or two is in memory whatever the size.
 * Destroying the stream ends the iteration (and so releases the view).
 */
export function snapshotStream(header: SnapshotHeader, records: AsyncIterable<ReadonlyArray<readonly [SnapshotKey, Uint8Array]>>): Readable {
  const encoder = new SnapshotEncoder();
  return Readable.from((async function* () {
    yield encoder.head(header);
    for await (const batch of records) if (batch.length > 0) yield encoder.records(batch);
    yield encoder.end();
  })(), { objectMode: false, highWaterMark: FLUSH_BYTES });
}

/** Writes one snapshot file; nothing is visible under the final name until `finish`. */
export class SnapshotWriter {
  private parts: Buffer[] = [];
  private pending = 0;
  private readonly encoder = new SnapshotEncoder();

  private constructor(
    private readonly fh: FileHandle,
    private readonly tempPath: string,
  ) {}

  static async create(tempPath: string, header: SnapshotHeader): Promise<SnapshotWriter> {
    const writer = new SnapshotWriter(await open(tempPath, 'w'), tempPath);
    writer.push(writer.encoder.head(header));
    return writer;
  }

  /** Appends records (a state view's batch). */
  async add(records: ReadonlyArray<readonly [SnapshotKey, Uint8Array]>): Promise<void> {
    this.push(this.encoder.records(records));
    if (this.pending >= FLUSH_BYTES) await this.flush();
  }

  /** Ends the file, makes it durable and renames it to `path`. */
  async finish(path: string): Promise<void> {
    this.push(this.encoder.end());
    await this.flush();
    await this.fh.sync();
    await this.fh.close();
    await rename(this.tempPath, path);
  }

  async abort(): Promise<void> {
    await this.fh.close().catch(() => undefined);
    await rm(this.tempPath, { force: true });
  }

  private push(bytes: Buffer): void {
    this.parts.push(bytes);
    this.pending += bytes.length;
  }

  private async flush(): Promise<void> {
    if (this.pending === 0) return;
    const data = this.parts.length === 1 ? this.parts[0] as Buffer : Buffer.concat(this.parts, this.pending);
    this.parts = [];
    this.pending = 0;
    await this.fh.write(data);
  }
}

export interface SnapshotFile {
  header: SnapshotHeader;
  path: string;
}

/**
 * The snapshot files of one node: `snapshot-<index, 16 digits>-<term>.snap` under one directory,
 * plus `*.part` files being written (removed on open). Keeps the newest `keep` files and any
 * pinned one (the snapshot the log store records, which a restart may need).
 */
export class SnapshotDir {
  private files: SnapshotFile[] = [];

  private constructor(readonly dir: string, private readonly keep: number) {}

  static async open(dir: string, keep = 2): Promise<SnapshotDir> {
    await makeDir(dir);
    const snapshots = new SnapshotDir(dir, keep);
    for (const name of await readdir(dir)) {
      const path = join(dir, name);
      if (name.endsWith('.part')) {
        await rm(path, { force: true });
        continue;
      }
      if (!name.endsWith('.snap')) continue;
      const reader = new SnapshotReader(createReadStream(path));
      try {
        snapshots.files.push({ header: await reader.header(), path });
      } catch {
        // A file that cannot even be read is useless: a snapshot is renamed into place only when complete.
        await rm(path, { force: true });
      }
    }
    snapshots.sort();
    return snapshots;
  }

  latest(): SnapshotFile | undefined {
    return this.files[this.files.length - 1];
  }

  find(index: number, term: number): SnapshotFile | undefined {
    return this.files.find((f) => f.header.index === index && f.header.term === term);
  }

  tempPath(): string {
    return join(this.dir, `${randomBytes(8).toString('hex')}.part`);
  }

  pathFor(meta: SnapshotMeta): string {
    return join(this.dir, `snapshot-${String(meta.index).padStart(16, '0')}-${meta.term}.snap`);
  }

  /** Records a file that a writer has just renamed to `pathFor(header)`, then makes the rename durable. */
  async added(header: SnapshotHeader): Promise<SnapshotFile> {
    await syncDir(this.dir);
    const file = { header, path: this.pathFor(header) };
    this.files = this.files.filter((f) => f.path !== file.path);
    this.files.push(file);
    this.sort();
    return file;
  }

  /** Stores a snapshot streamed from a leader; resolves once it is verified and durable. */
  async receive(data: AsyncIterable<Uint8Array>): Promise<SnapshotFile> {
    const temp = this.tempPath();
    const fh = await open(temp, 'w');
    try {
      for await (const chunk of data) await fh.write(chunk);
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => undefined);
      await rm(temp, { force: true });
      throw err;
    }
    await fh.close();
    let header: SnapshotHeader;
    try {
      header = await new SnapshotReader(createReadStream(temp)).verify();
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    await rename(temp, this.pathFor(header));
    return this.added(header);
  }

  /** Deletes all but the newest `keep` files, sparing `pinned`. */
  async prune(pinned: SnapshotMeta | undefined): Promise<void> {
    const excess = this.files.slice(0, Math.max(0, this.files.length - this.keep));
    for (const f of excess) {
      if (pinned && f.header.index === pinned.index && f.header.term === pinned.term) continue;
      this.files = this.files.filter((x) => x !== f);
      await rm(f.path, { force: true });
    }
  }

  private sort(): void {
    this.files.sort((a, b) => a.header.index - b.header.index || a.header.term - b.header.term);
  }
}

export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
