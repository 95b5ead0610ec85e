import { close as closeFd, constants, fdatasync, ftruncate, open as openFd, write } from 'node:fs';
import { readFile, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Entry, HardState, SnapshotMeta } from '../core/types';
import { rangeAfterSave, type LogStore, type StoredLog } from './log-store';
import { makeDir } from './make-dir';
import { syncDir } from './snapshot-file';
import { encodeFrame, readFrame, type Frame } from './wal-frame';

export interface WalOptions {
  /** A new segment file is started once the current one reaches this size (64 MiB by default). */
  segmentBytes?: number;
  /** Zeros written ahead of the newest segment's last frame, this many bytes at a time (1 MiB by default; 0 for none). */
  preallocateBytes?: number;
}

interface Segment {
  seq: number;
  path: string;
  /** The highest entry index written to this segment (0 for none): at or below a compaction's cut, it can go. */
  maxIndex: number;
}

/** What replaying the segments in order leaves. */
interface Replayed {
  hardState?: HardState;
  snapshot?: SnapshotMeta;
  /** Every stored entry, including those at or below the snapshot that a compaction kept. */
  entries: Entry[];
}

const SEGMENT_NAME = /^([0-9a-f]{16})\.wal$/;
const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
const DEFAULT_PREALLOCATE_BYTES = 1024 * 1024;
// Where the platform has it, each write is its own fdatasync: one trip to the thread pool per save.
const DSYNC = constants.O_DSYNC ?? 0;
// Every write names its offset: frames go at the end of the log, which is not the end of the file
// once zeros are written ahead of it.
const WRITE_FLAGS = constants.O_WRONLY | DSYNC;
/** Read only, shared by every store's zero-filling writes. */
let zeros: Buffer | undefined;

const segmentName = (seq: number): string => `${seq.toString(16).padStart(16, '0')}.wal`;

function openFile(path: string, flags: number): Promise<number> {
  return new Promise((resolve, reject) => openFd(path, flags, 0o600, (err, fd) => (err ? reject(err) : resolve(fd))));
}

function closeFile(fd: number): Promise<void> {
  return new Promise((resolve, reject) => closeFd(fd, (err) => (err ? reject(err) : resolve())));
}

/** Writes all of `buf` at `position` in the file; durable when it resolves. */
function writeDurably(fd: number, buf: Buffer, position: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const from = (offset: number): void => {
      write(fd, buf, offset, buf.length - offset, position + offset, (err, written) => {
        if (err) return reject(err);
        if (offset + written < buf.length) return from(offset + written);
        if (DSYNC) return resolve();
        fdatasync(fd, (syncErr) => (syncErr ? reject(syncErr) : resolve()));
      });
    };
    from(0);
  });
}

/** Cuts the file to `size`, durably. */
function truncateDurably(fd: number, size: number): Promise<void> {
  return new Promise((resolve, reject) => {
    ftruncate(fd, size, (err) => (err ? reject(err) : fdatasync(fd, (syncErr) => (syncErr ? reject(syncErr) : resolve()))));
  });
}

/**
 * Writes `length` zeros at `from` through a descriptor of its own: a write-back error of the
 * frames' pages is then reported to the frames' descriptor, never taken by this one's sync.
 */
async function fillWithZeros(path: string, from: number, length: number): Promise<void> {
  if (!zeros || zeros.length < length) zeros = Buffer.alloc(Math.max(length, DEFAULT_PREALLOCATE_BYTES));
  const fd = await openFile(path, WRITE_FLAGS);
  try {
    await writeDurably(fd, zeros.subarray(0, length), from);
  } finally {
    await closeFile(fd);
  }
}

/** Applies one frame to the replayed state: a snapshot install drops the log; entries replace any suffix they overlap. */
function applyFrame(state: Replayed, frame: Frame): void {
  if (frame.snapshot) {
    state.snapshot = frame.snapshot;
    if (frame.install) state.entries = [];
  }
  const head = frame.entries[0];
  if (head) {
    const first = state.entries[0]?.index;
    if (first !== undefined && head.index <= first) state.entries = [];
    else if (first !== undefined) state.entries.length = Math.min(state.entries.length, head.index - first);
    const last = state.entries[state.entries.length - 1];
    if (last && last.index + 1 !== head.index) throw new Error(`log entries jump from ${last.index} to ${head.index}`);
    for (const e of frame.entries) state.entries.push(e);
  }
  if (frame.hardState) state.hardState = frame.hardState;
}

/** The frames of one segment, and where the valid ones end (a crash can cut the last write short). */
function scanSegment(buf: Buffer, name: string): { frames: Frame[]; validBytes: number; torn?: string } {
  const frames: Frame[] = [];
  let at = 0;
  while (at < buf.length) {
    const read = readFrame(buf, at);
    if (!read.ok) {
      if (!read.torn) throw new Error(`the Raft log segment ${name} is damaged at byte ${at}: ${read.reason}`);
      return { frames, validBytes: at, torn: read.reason };
    }
    frames.push(read.frame);
    at = read.next;
  }
  return { frames, validBytes: at };
}

/**
 * The Raft log as a write-ahead log: segment files of checksummed frames, one frame per save,
 * each written with one synced write after the last. No frame is rewritten in place: a conflicting
 * suffix is replaced by appending the new entries (replay drops what they overlap), and
 * compaction deletes whole segments that hold only entries at or below its cut. Every segment
 * starts with a frame holding the hard state and snapshot meta, so the oldest ones can go
 * without losing either.
 *
 * A commit-only hard state is kept in memory and written with the next frame, or on close: the
 * commit index need not survive a crash (the interface says why).
 *
 * The newest segment has zeros written ahead of its last frame, a chunk at a time in the
 * background, and frames overwrite them: a synced write that stays inside the file's written
 * blocks changes no metadata, so the file system has no journal to commit for it (DESIGN.md has
 * the numbers). A segment is cut to its last frame before the next one starts, and on close, so
 * that a log closed cleanly ends in its last frame, as an earlier release wrote it.
 *
 * Recovery: a frame cut short or failing its checksum at the end of the newest segment is a
 * write that never completed, so it was never acknowledged; it is truncated away, with the zeros
 * after it. The same anywhere else means the disk lost data, and opening fails rather than guess.
 */
export class WalLogStore implements LogStore {
  /** Where the next frame goes: the end of the last one in the newest segment. */
  private size = 0;
  /** The newest segment file's length: `size`, plus the zeros written after it. */
  private allocated = 0;
  /** The zero-filling write in progress; it starts at `allocated`, which frames stay below meanwhile. */
  private filling: Promise<void> | undefined;
  /**
   * Set when a zero-filling write failed: the segment's frames extend the file themselves. The
   * file may then be longer than `allocated` says, which is why a cut is never skipped.
   */
  private preallocateFailed = false;
  /** Range of stored entry indexes, as the save contract needs it (empty when first > last). */
  private first = 1;
  private last = 0;
  private hardState: HardState | undefined;
  private commitPending = false;
  private snapshot: SnapshotMeta | undefined;
  /** What open() replayed, handed to the first load() when nothing was written in between. */
  private replayed: Replayed | undefined;
  private failed: Error | undefined;

  private constructor(
    private readonly dir: string,
    private readonly segments: Segment[],
    private fd: number,
    private readonly segmentBytes: number,
    private readonly preallocateBytes: number,
  ) {}

  static async open(dir: string, options: WalOptions = {}): Promise<WalLogStore> {
    if (!(await exists(dir))) await WalLogStore.create(dir, { entries: [] });
    const names = (await readdir(dir)).filter((n) => SEGMENT_NAME.test(n)).sort();
    if (names.length === 0) throw new Error(`the Raft log in ${dir} has no segment files`);
    const state: Replayed = { entries: [] };
    const segments: Segment[] = [];
    let tailBytes = 0;
    /** The newest kept segment's file length: more than `tailBytes` when it ends in zeros or a torn frame. */
    let fileBytes = 0;
    for (const [i, name] of names.entries()) {
      const path = join(dir, name);
      const buf = await readFile(path);
      const scan = scanSegment(buf, name);
      const newest = i === names.length - 1;
      if (scan.torn && !newest) throw new Error(`the Raft log segment ${name} is damaged: ${scan.torn}, and it is not the newest`);
      if (scan.frames.length === 0) {
        // A segment whose first frame never completed: the log continues in the one before.
        if (newest && segments.length > 0) {
          await unlink(path);
          break;
        }
        throw new Error(`the Raft log segment ${name} holds no complete frame`);
      }
      let maxIndex = 0;
      for (const frame of scan.frames) {
        applyFrame(state, frame);
        const tail = frame.entries[frame.entries.length - 1];
        if (tail) maxIndex = Math.max(maxIndex, tail.index);
      }
      segments.push({ seq: parseInt(SEGMENT_NAME.exec(name)![1]!, 16), path, maxIndex });
      tailBytes = scan.validBytes;
      fileBytes = buf.length;
    }
    const current = segments[segments.length - 1]!;
    const store = new WalLogStore(
      dir, segments, await openFile(current.path, WRITE_FLAGS),
      options.segmentBytes ?? DEFAULT_SEGMENT_BYTES, options.preallocateBytes ?? DEFAULT_PREALLOCATE_BYTES,
    );
    // A torn frame, and the zeros a segment has ahead of its last frame, go.
    if (fileBytes > tailBytes) await truncateDurably(store.fd, tailBytes);
    store.size = tailBytes;
    store.allocated = tailBytes;
    store.hardState = state.hardState;
    store.snapshot = state.snapshot;
    const head = state.entries[0];
    const tail = state.entries[state.entries.length - 1];
    if (head && tail) {
      store.first = head.index;
      store.last = tail.index;
    } else if (state.snapshot) {
      store.first = state.snapshot.index + 1;
      store.last = state.snapshot.index;
    }
    store.replayed = state;
    return store;
  }

  /**
   * Writes a new log holding `initial` as its first segment: built beside `dir` and renamed into
   * place, so `dir` either does not exist or is complete.
   */
  static async create(dir: string, initial: StoredLog): Promise<void> {
    const temp = `${dir}.tmp`;
    await rm(temp, { recursive: true, force: true });
    await makeDir(temp);
    const fd = await openFile(join(temp, segmentName(1)), WRITE_FLAGS | constants.O_CREAT | constants.O_EXCL);
    try {
      const frame: Frame = { entries: initial.entries };
      if (initial.hardState) frame.hardState = initial.hardState;
      if (initial.snapshot) frame.snapshot = initial.snapshot;
      await writeDurably(fd, encodeFrame(frame), 0);
    } finally {
      await closeFile(fd);
    }
    await syncDir(temp);
    await rename(temp, dir);
    await syncDir(dirname(dir));
  }

  async load(): Promise<StoredLog> {
    const state = this.replayed ?? (await this.replay());
    const after = state.snapshot?.index ?? 0;
    const hardState = this.commitPending ? this.hardState : state.hardState;
    return {
      ...(hardState && { hardState: { ...hardState } }),
      ...(state.snapshot && { snapshot: state.snapshot }),
      entries: state.entries.filter((e) => e.index > after),
    };
  }

  async save(hardState: HardState | undefined, entries: readonly Entry[], snapshot?: SnapshotMeta): Promise<void> {
    const range = rangeAfterSave({ first: this.first, last: this.last }, entries, snapshot);
    const tail = entries[entries.length - 1];
    const frame: Frame = { entries };
    const hs = hardState ?? (this.commitPending ? this.hardState : undefined);
    if (hs) frame.hardState = hs;
    if (snapshot) {
      frame.snapshot = snapshot;
      frame.install = true;
    }
    if (!hs && !snapshot && entries.length === 0) return;
    await this.append(frame);
    this.first = range.first;
    this.last = range.last;
    if (hs) this.hardState = hs;
    if (snapshot) this.snapshot = snapshot;
    if (tail) {
      const current = this.segments[this.segments.length - 1]!;
      current.maxIndex = Math.max(current.maxIndex, tail.index);
    }
  }

  async saveCommit(hardState: HardState): Promise<void> {
    this.hardState = hardState;
    this.commitPending = true;
    this.replayed = undefined;
  }

  /**
   * Records the snapshot (synced), then deletes the oldest segments while every entry in them is
   * at or below `truncateTo`. Entries kept past the cut are never loaded (load starts after the
   * snapshot); a crash between the two steps leaves segments the next compaction removes.
   */
  async compact(snapshot: SnapshotMeta, truncateTo: number): Promise<void> {
    const frame: Frame = { entries: [], snapshot };
    if (this.commitPending && this.hardState) frame.hardState = this.hardState;
    await this.append(frame);
    this.snapshot = snapshot;
    const upTo = Math.min(truncateTo, this.last);
    if (upTo >= this.first) this.first = upTo + 1;
    if (this.last < this.first) {
      this.first = snapshot.index + 1;
      this.last = snapshot.index;
    }
    while (this.segments.length > 1 && this.segments[0]!.maxIndex <= truncateTo) {
      await unlink(this.segments[0]!.path);
      this.segments.shift();
    }
  }

  async close(): Promise<void> {
    if (this.fd < 0) return;
    try {
      if (this.commitPending && this.hardState && !this.failed) await this.append({ entries: [], hardState: this.hardState });
      await this.filling;
      if (!this.failed) await truncateDurably(this.fd, this.size);
    } finally {
      await this.filling;
      await closeFile(this.fd);
      this.fd = -1;
    }
  }

  /** One synced write of one frame, in a new segment when the current one is full. */
  private async append(frame: Frame): Promise<void> {
    if (this.failed) throw new Error(`the Raft log is not writable after an earlier write failed: ${this.failed.message}`);
    this.replayed = undefined;
    try {
      if (this.size >= this.segmentBytes) await this.rotate();
      const buf = encodeFrame(frame);
      // Never into the range the zero-filling write in progress covers.
      if (this.filling && this.size + buf.length > this.allocated) await this.filling;
      await writeDurably(this.fd, buf, this.size);
      this.size += buf.length;
      this.allocated = Math.max(this.allocated, this.size);
      if (frame.hardState) this.commitPending = false;
    } catch (err) {
      // What reached the file is unknown now: appending after it could bury a torn frame mid-log.
      this.failed = err as Error;
      throw err;
    }
    this.preallocate();
  }

  /**
   * Writes the next chunk of zeros after the newest segment's end when less than half a chunk is
   * left, in the background: a frame waits for it only when it would reach into the chunk. A
   * failure costs only the speed: the frames extend the file themselves until the next segment.
   */
  private preallocate(): void {
    const chunk = this.preallocateBytes;
    if (chunk <= 0 || this.filling || this.preallocateFailed || this.allocated >= this.segmentBytes) return;
    if (this.allocated - this.size >= chunk / 2) return;
    const from = this.allocated;
    this.filling = fillWithZeros(this.segments[this.segments.length - 1]!.path, from, chunk).then(
      () => {
        this.allocated = Math.max(this.allocated, from + chunk);
      },
      () => {
        this.preallocateFailed = true;
      },
    ).finally(() => {
      this.filling = undefined;
    });
  }

  /**
   * Starts the next segment with the hard state and snapshot meta, so older segments can be
   * deleted. The current one is cut to its last frame first: only the newest segment may end in
   * anything but a frame.
   */
  private async rotate(): Promise<void> {
    await this.filling;
    await truncateDurably(this.fd, this.size);
    this.allocated = this.size;
    const seq = this.segments[this.segments.length - 1]!.seq + 1;
    const path = join(this.dir, segmentName(seq));
    const fd = await openFile(path, WRITE_FLAGS | constants.O_CREAT | constants.O_EXCL);
    const head: Frame = { entries: [] };
    if (this.hardState) head.hardState = this.hardState;
    if (this.snapshot) head.snapshot = this.snapshot;
    const buf = encodeFrame(head);
    try {
      await writeDurably(fd, buf, 0);
      await syncDir(this.dir);
    } catch (err) {
      await closeFile(fd);
      throw err;
    }
    await closeFile(this.fd);
    this.fd = fd;
    this.size = buf.length;
    this.allocated = buf.length;
    this.preallocateFailed = false;
    this.commitPending = false;
    this.segments.push({ seq, path, maxIndex: 0 });
  }

  private async replay(): Promise<Replayed> {
    const state: Replayed = { entries: [] };
    for (const segment of this.segments) {
      for (const frame of scanSegment(await readFile(segment.path), basename(segment.path)).frames) applyFrame(state, frame);
    }
    return state;
  }
}

/** Whether `path` exists; errors other than its absence (permissions, I/O) are thrown, not taken for "no". */
export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
