import { Transform, type Readable } from 'node:stream';

/** A stored snapshot as a destination lists it. */
export interface StoredSnapshot {
  /** The file or object name, without the path prefix. */
  name: string;
  size: number;
}

/**
 * One configuration's destination. A snapshot becomes visible under its name only once it is
 * whole: a failed or aborted write leaves nothing that could pass for a complete snapshot.
 */
export interface SnapshotTarget {
  /** Where a snapshot of this name is (or will be) stored, as the status reports it. */
  url(name: string): string;
  /** Streams `data` to the destination; resolves with the bytes written. */
  write(name: string, data: Readable, signal: AbortSignal): Promise<number>;
  /** Everything in the destination whose name starts with the file prefix. */
  list(): Promise<StoredSnapshot[]>;
  remove(name: string): Promise<void>;
  close(): void;
}

/** Buffering between the snapshot source and a writer: bounded, and large enough for big writes. */
export const STREAM_BUFFER_BYTES = 1024 * 1024;

/** Counts the bytes that pass; `limit` turns an overlong stream into an error. */
export class ByteCounter extends Transform {
  bytes = 0;

  constructor(private readonly limit = Infinity, private readonly overLimit: () => Error = () => new Error('too large')) {
    // Room for a few of the snapshot's chunks, so a slow write does not stall the source at once.
    super({ highWaterMark: STREAM_BUFFER_BYTES });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null, data?: Buffer) => void): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limit) done(this.overLimit());
    else done(null, chunk);
  }
}

/** `data` through a counter, for SDKs that take a stream: a failing source fails the counter too. */
export function counted(data: Readable): ByteCounter {
  const counter = new ByteCounter();
  data.on('error', (err) => counter.destroy(err));
  return data.pipe(counter);
}

/** An object key: the prefix (a "directory", "/" added when missing) and the name. */
export function objectKey(prefix: string, name: string): string {
  const dir = prefix.replace(/^\/+/, '');
  if (dir === '') return name;
  return dir.endsWith('/') ? dir + name : `${dir}/${name}`;
}
