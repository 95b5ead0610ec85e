import { readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ClassicLevel } from 'classic-level';
import type { CommittedChange, TxnOp } from '@strongroom/base';
import { decodeConfChange } from '../core/conf-change';
import {
  ChangeLogWindow, ChangesNotRetainedError, changeKey, decodeChange, DEFAULT_CHANGE_LOG_LIMITS, DROPPED_KEY, readDropped, type ChangeLogLimits,
} from './change-log';
import type { Entry, NodeId } from '../core/types';
import { decodeCommand, type Command } from './command';
import { openLevel } from './level';
import { readUint64, writeUint64 } from './log-store';
import { SnapshotReader, syncDir, type SnapshotHeader, type SnapshotKey } from './snapshot-file';
import { readAhead } from './read-ahead';

/*
 * Keys of the state machine's LevelDB (UTF-8):
 *   '!applied'   index and term of the last applied entry (16 bytes)
 *   '!addresses' JSON map of member id -> cluster address
 *   'd' + key    the data of `Storage` key `key`
 *   'r' + restore id (32 hex) + chunk number (8 hex)   chunks of a restore in progress
 *   '#' + index (16 hex)   the retained window of applied changes (see change-log.ts)
 * Snapshots carry every key from 'd' on (data and staged restores), never the '!' keys: those
 * travel in the snapshot header. Nor the '#' keys: a node's window is its own history.
 */
const APPLIED_KEY = '!applied';
const ADDRESSES_KEY = '!addresses';
const DATA = 'd';
/** Just above every data key. */
const DATA_END = 'e';
const STAGING = 'r';
/** A key range holding no key (all keys start with '!', 'd' or 'r'), for `checkpoint`. */
const NO_KEYS = '\u0000';
const RECORDS_FROM = Buffer.from(DATA);

/** The pointer file naming the live database directory (see `replace`). */
const CURRENT = 'CURRENT';

type Op = { type: 'put'; key: string; value: Buffer } | { type: 'del'; key: string };

/** A change to the data, as observers of the state machine see it (cache invalidation, replication). */
export type AppliedChange = CommittedChange;

export interface ApplyOutcome {
  /** One per entry given to `apply`: the txn's check result for txn and restore entries, else undefined. */
  results: Array<boolean | undefined>;
  /** Successful writes and restores, in order; collected only when `apply` is asked to. */
  changes: AppliedChange[] | undefined;
  addressesChanged: boolean;
  /** A restore replaced the data; the runtime takes a snapshot so the staged chunks leave the log. */
  restored: boolean;
}

/** Every data key with its value at one applied index (see `StateMachine.scan`). */
export interface StateScan {
  index: number;
  /** `[key, value]` in key order, in batches; reading them to the end, or breaking off, ends the scan. */
  records: AsyncIterable<Array<[string, Buffer]>>;
  /** Ends a scan whose records are not read (the snapshot under it is held until then). */
  close(): Promise<void>;
}

/** State captured at one applied index, for writing a snapshot without stopping applies. */
export interface StateView {
  /** The snapshot header but for `conf`, which the core knows (the runtime adds it). */
  header: Omit<SnapshotHeader, 'conf'>;
  /**
   * Records in key order, in batches; close the view by finishing or breaking the iteration. A
   * key comes as the string LevelDB decodes, which costs far less than a Buffer per record (about
   * a third of a scan's CPU), except a key that is not UTF-8, which comes as its bytes.
   */
  records: AsyncIterable<Array<[SnapshotKey, Buffer]>>;
  /** Ends a view whose records may never be read, such as a stream whose reader went away first. */
  close(): Promise<void>;
}

const BATCH = 1024;
const VIEW_BATCH_BYTES = 1024 * 1024;

/**
 * The state machine writes its memtable to a table itself after this many bytes of batches, and
 * LevelDB's own switch point is set far above it: see the class comment for why.
 */
const FLUSH_EVERY_BYTES = 4 * 1024 * 1024;
const WRITE_BUFFER_BYTES = 64 * 1024 * 1024;
const openState = (dir: string) => openLevel<string>(dir, 'utf8', { writeBufferSize: WRITE_BUFFER_BYTES });

/**
 * The key/value state machine. Every `apply` is one LevelDB batch holding the data of the
 * entries applied and the new applied index, so the data and the index never disagree: after a
 * restart, replay starts at applied + 1 and no entry is applied twice. The batch is not synced:
 * a process crash loses nothing (the write is in the OS), and a machine crash can only roll the
 * database back to an earlier batch boundary (LevelDB recovers a prefix of its log), which replay
 * from the durable Raft log redoes. See DESIGN.md, "Persistence and crashes".
 *
 * That prefix holds within one LevelDB log file only: when LevelDB fills its memtable it starts a
 * new log without syncing the old one, and a machine crash could then keep later batches and
 * lose earlier ones. So the state machine writes its memtable to a table file itself every
 * FLUSH_EVERY_BYTES (a flush is synced with the manifest and retires the old log), with LevelDB's
 * own switch point far above that: every log switch is then one of these flushes.
 *
 * Only the runtime's drive loop calls `apply` and `replace`, one at a time; reads may run at any time.
 */
export class StateMachine {
  private appliedIndex = 0;
  private appliedTermValue = 0;
  private readonly addressMap = new Map<NodeId, string>();
  /** Bytes of batches written since the memtable was last written to a table. */
  private unflushedBytes = 0;
  private flushing: Promise<void> | undefined;

  private constructor(
    private readonly dir: string,
    private generation: number,
    private db: ClassicLevel<string, Buffer>,
    private readonly window: ChangeLogWindow,
  ) {}

  /**
   * Opens the state machine under `dir`, discarding any half-built generation a crash left behind.
   * `changeLog` bounds the retained window of applied changes.
   */
  static async open(dir: string, changeLog: ChangeLogLimits = DEFAULT_CHANGE_LOG_LIMITS): Promise<StateMachine> {
    let generation = 1;
    const pointer = await readFile(join(dir, CURRENT), 'utf8').catch(() => undefined);
    if (pointer !== undefined) generation = Number.parseInt(pointer, 10);
    const db = await openState(join(dir, generationName(generation)));
    if (pointer === undefined) await writePointer(dir, generation);
    for (const name of await readdir(dir)) {
      if (name.startsWith('gen-') && name !== generationName(generation)) await rm(join(dir, name), { recursive: true, force: true });
    }
    const window = await ChangeLogWindow.load(changeLog, db.iterator(ChangeLogWindow.range()));
    const sm = new StateMachine(dir, generation, db, window);
    await sm.loadMeta();
    window.initDropped(readDropped(db.getSync(DROPPED_KEY) ?? undefined), sm.applied);
    return sm;
  }

  get applied(): number {
    return this.appliedIndex;
  }

  get appliedTerm(): number {
    return this.appliedTermValue;
  }

  get addresses(): ReadonlyMap<NodeId, string> {
    return this.addressMap;
  }

  /**
   * Point reads are synchronous: LevelDB answers them from its memtable and caches in about a
   * microsecond, while a trip through libuv's thread pool costs tens of microseconds of CPU and
   * two context switches, which on a busy machine is most of a write's read-modify-write.
   */
  async get(key: string): Promise<Buffer | null> {
    return this.db.getSync(DATA + key) ?? null;
  }

  /** The indexes the retained window of changes holds, or undefined ones when it is empty. */
  get changeWindow(): { first: number | undefined; last: number | undefined; entries: number; bytes: number } {
    return { first: this.window.first, last: this.window.last, entries: this.window.count, bytes: this.window.size };
  }

  /**
   * Applied changes from index `from` on, oldest first, at most `max` of them (fewer at the end of
   * the window). The indexes are those of the log, so they have gaps where entries changed no
   * data. Throws ChangesNotRetainedError when a change at or after `from` has left the window.
   */
  async changesFrom(from: number, max = 1024): Promise<AppliedChange[]> {
    if (from <= this.window.droppedThrough) throw new ChangesNotRetainedError(from, this.window.droppedThrough + 1);
    if (from > this.appliedIndex) return [];
    const read = await this.db.iterator({ gte: changeKey(from), lt: ChangeLogWindow.range().lt, limit: max }).all();
    // The window may have moved on while the read was queued.
    if (from <= this.window.droppedThrough) throw new ChangesNotRetainedError(from, this.window.droppedThrough + 1);
    return read.map(([key, value]) => decodeChange(Number.parseInt(key.slice(1), 16), value));
  }

  /** Immediate children of `prefix`, as `Storage.list` defines them (folders skipped by seeking past them). */
  async list(prefix: string): Promise<string[]> {
    const full = DATA + prefix;
    const out: string[] = [];
    const it = this.db.keys({ gte: full, lt: prefix.endsWith('/') ? siblingAfter(full) : 'e' });
    try {
      let size = 1;
      scan: for (;;) {
        const keys = await it.nextv(size);
        if (keys.length === 0) break;
        for (const key of keys) {
          if (!key.startsWith(full)) break scan;
          const rest = key.slice(full.length);
          const slash = rest.indexOf('/');
          if (slash === -1) {
            out.push(rest);
            continue;
          }
          out.push(rest.slice(0, slash + 1));
          // Seek past the whole folder and start small again: the next key may be another folder.
          it.seek(siblingAfter(full + rest.slice(0, slash + 1)));
          size = 1;
          continue scan;
        }
        size = Math.min(size * 2, BATCH);
      }
    } finally {
      await it.close();
    }
    // LevelDB's UTF-8 byte order differs from JavaScript's for astral characters; Storage lists sort as JavaScript does.
    return out.sort();
  }

  /**
   * Applies committed entries in order, skipping any at or below the applied index. One batch
   * write per call, except that a restore commit is applied on its own (it swaps the database).
   */
  async apply(entries: readonly Entry[], collectChanges = false): Promise<ApplyOutcome> {
    const outcome: ApplyOutcome = {
      results: new Array<boolean | undefined>(entries.length),
      changes: collectChanges ? [] : undefined,
      addressesChanged: false,
      restored: false,
    };
    let start = 0;
    while (start < entries.length) {
      let end = start;
      let commands: Array<Command | undefined> = [];
      // Split at restore commits, which read the batch before them from disk.
      for (; end < entries.length; end++) {
        const e = entries[end]!;
        const command = e.type === 'normal' && e.data.byteLength > 0 ? safeDecode(e.data) : undefined;
        if (command?.kind === 'restoreCommit') {
          if (end === start) {
            await this.applyRestore(e, command.id, command.chunks, outcome, start);
            end++;
          }
          break;
        }
        commands.push(command);
      }
      if (commands.length > 0) await this.applySegment(entries, start, commands, outcome);
      commands = [];
      start = end;
    }
    return outcome;
  }

  private async applySegment(entries: readonly Entry[], start: number, commands: Array<Command | undefined>, outcome: ApplyOutcome): Promise<void> {
    // Checks read the state before this batch once, then an overlay of the batch's own writes.
    const before = new Map<string, Buffer | null>();
    for (const c of commands) {
      if (c?.kind !== 'txn') continue;
      for (const check of c.checks) {
        const key = DATA + check.key;
        if (!before.has(key)) before.set(key, this.db.getSync(key) ?? null);
      }
    }
    const ops: Op[] = [];
    const changed: Array<[number, Buffer]> = [];
    let addressesChanged = false;
    let last: Entry | undefined;
    for (let i = 0; i < commands.length; i++) {
      const entry = entries[start + i]!;
      if (entry.index <= this.appliedIndex) continue;
      last = entry;
      const command = commands[i];
      if (entry.type === 'conf') {
        addressesChanged = this.applyConf(entry) || addressesChanged;
        continue;
      }
      if (!command) {
        if (entry.type === 'normal' && entry.data.byteLength > 0) outcome.results[start + i] = false;
        continue;
      }
      switch (command.kind) {
        case 'txn': {
          const ok = command.checks.every((c) => {
            const current = before.get(DATA + c.key) ?? null;
            return c.value === null ? current === null : current !== null && current.equals(c.value);
          });
          outcome.results[start + i] = ok;
          if (!ok) break;
          outcome.changes?.push({ index: entry.index, ops: command.ops });
          changed.push([entry.index, Buffer.from(entry.data.buffer, entry.data.byteOffset, entry.data.byteLength)]);
          for (const op of command.ops) {
            const key = DATA + op.key;
            if (op.type === 'put') ops.push({ type: 'put', key, value: op.value });
            else ops.push({ type: 'del', key });
            if (before.has(key)) before.set(key, op.type === 'put' ? op.value : null);
          }
          break;
        }
        case 'address':
          if (this.addressMap.get(command.node) !== command.address) {
            this.addressMap.set(command.node, command.address);
            addressesChanged = true;
          }
          break;
        case 'restoreChunk':
          ops.push({ type: 'put', key: stagingKey(command.id, command.seq), value: command.data });
          outcome.results[start + i] = true;
          break;
        case 'restoreCommit':
          throw new Error('restore commits are applied on their own');
      }
    }
    if (!last) return;
    ops.push({ type: 'put', key: APPLIED_KEY, value: encodeApplied(last.index, last.term) });
    if (addressesChanged) ops.push({ type: 'put', key: ADDRESSES_KEY, value: Buffer.from(JSON.stringify(Object.fromEntries(this.addressMap))) });
    // The changes go into the window in the same batch as the data: one never runs ahead of the other.
    const window = this.window.plan(changed);
    for (const op of window.ops) ops.push(op);
    await this.write(ops);
    window.commit();
    this.appliedIndex = last.index;
    this.appliedTermValue = last.term;
    outcome.addressesChanged ||= addressesChanged;
  }

  /** One batch; past FLUSH_EVERY_BYTES since the last flush, starts the next one in the background. */
  private async write(ops: Op[]): Promise<void> {
    await this.db.batch(ops);
    for (const op of ops) this.unflushedBytes += op.key.length + (op.type === 'put' ? op.value.length : 0) + 16;
    if (this.unflushedBytes >= FLUSH_EVERY_BYTES && !this.flushing) {
      this.flushing = this.flush().catch(() => undefined).finally(() => {
        this.flushing = undefined;
      });
    }
  }

  private async flush(): Promise<void> {
    this.unflushedBytes = 0;
    await flushMemtable(this.db);
  }

  /** Addresses ride in ConfChange.context; returns whether the map changed. */
  private applyConf(entry: Entry): boolean {
    const cc = decodeConfChange(entry.data);
    if (cc.type === 'addLearner' && cc.context && cc.context.byteLength > 0) {
      const address = Buffer.from(cc.context.buffer, cc.context.byteOffset, cc.context.byteLength).toString('utf8');
      if (this.addressMap.get(cc.node) === address) return false;
      this.addressMap.set(cc.node, address);
      return true;
    }
    if (cc.type === 'remove') return this.addressMap.delete(cc.node);
    return false;
  }

  /**
   * Replaces the data with the snapshot staged under restore `id`, keeping the membership and
   * addresses: a restore brings back data, not the cluster that wrote it. Deterministic on every
   * node, including its failure (missing chunks, bad checksum), which only drops the staged chunks.
   */
  private async applyRestore(entry: Entry, id: string, chunks: number, outcome: ApplyOutcome, at: number): Promise<void> {
    if (entry.index <= this.appliedIndex) return;
    const prefix = STAGING + id;
    const staged = await this.db.keys({ gte: prefix, lt: prefix + '~' }).all();
    const db = this.db;
    const source = async function* (): AsyncGenerator<Buffer> {
      for (const key of staged) {
        const value = await db.get(key);
        if (value) yield value;
      }
    };
    const filtered = async function* (reader: SnapshotReader): AsyncGenerator<Array<[Buffer, Buffer]>> {
      for await (const batch of reader.records()) yield batch.filter(([k]) => k[0] === RECORDS_FROM[0]);
    };
    if (staged.length === chunks) {
      try {
        await this.replace(filtered(new SnapshotReader(source())), entry.index, entry.term, this.addressMap);
        outcome.results[at] = true;
        outcome.restored = true;
        outcome.changes?.push({ index: entry.index, restored: true });
        return;
      } catch {
        // Falls through: the same bytes fail the same way on every node.
      }
    }
    outcome.results[at] = false;
    const ops: Op[] = staged.map((key) => ({ type: 'del', key }));
    ops.push({ type: 'put', key: APPLIED_KEY, value: encodeApplied(entry.index, entry.term) });
    await this.write(ops);
    this.appliedIndex = entry.index;
    this.appliedTermValue = entry.term;
  }

  /**
   * Makes everything applied so far durable and returns up to where: batches are written unsynced
   * (see the class), so the latest of them may be in the OS only until the memtable is flushed.
   * Applies may go on meanwhile: the index is read before the flush, and they come after it.
   */
  async checkpoint(): Promise<{ index: number; term: number }> {
    const at = { index: this.appliedIndex, term: this.appliedTermValue };
    await this.flush();
    return at;
  }

  /**
   * Captures the state at the current applied index. Must be called between applies (the drive
   * loop does): the iterator is created synchronously, so it sees exactly that state.
   */
  view(): StateView {
    const db = this.db;
    // Explicit, so the rare key read a second time as bytes (below) comes from the same state.
    const snapshot = db.snapshot();
    // Batches of up to 1 MiB rather than LevelDB's default 16 KiB: each batch is a trip through
    // the thread pool, and a snapshot reads the whole state.
    const it = db.iterator<string, Buffer>({ gte: DATA, snapshot, highWaterMarkBytes: VIEW_BATCH_BYTES });
    const header = { index: this.appliedIndex, term: this.appliedTermValue, addresses: Object.fromEntries(this.addressMap) };
    let closing: Promise<void> | undefined;
    const close = () => (closing ??= it.close().finally(() => snapshot.close()));
    return {
      header,
      records: (async function* () {
        // The newest key passed on whose bytes are known: a re-read starts just after it.
        let after: Buffer | string | undefined;
        try {
          for await (const batch of readAhead<SnapshotKey, Buffer>(it, BATCH)) {
            for (let i = 0; i < batch.length; i++) {
              const key = batch[i]![0] as string;
              if (!key.includes('\uFFFD')) {
                after = key;
                continue;
              }
              // LevelDB decodes bytes that are not UTF-8 to U+FFFD, which encodes back to other
              // bytes: only a restored snapshot can hold such keys, and each run of keys that may
              // be one is read again as bytes.
              let end = i + 1;
              while (end < batch.length && (batch[end]![0] as string).includes('\uFFFD')) end++;
              const from = after === undefined ? { gte: RECORDS_FROM } : { gt: typeof after === 'string' ? Buffer.from(after, 'utf8') : after };
              const exact = await db.keys<Buffer>({ ...from, keyEncoding: 'buffer', snapshot, limit: end - i }).all();
              for (let j = i; j < end; j++) batch[j]![0] = exact[j - i]!;
              after = exact[exact.length - 1];
              i = end - 1;
            }
            yield batch;
          }
        } finally {
          await close();
        }
      })(),
      close,
    };
  }

  /**
   * The data as of one applied index, callable at any time (an index built from the data, such
   * as replication's Merkle tree, rebuilds from it while applies go on): the applied index and
   * the records come from one LevelDB snapshot, and the index is written in the same batch as the
   * data it covers. The iteration throws if a restore or snapshot install replaces the state
   * under it.
   */
  async scan(): Promise<StateScan> {
    const db = this.db;
    const snapshot = db.snapshot();
    let applied: Buffer | undefined;
    try {
      applied = await db.get(APPLIED_KEY, { snapshot });
    } catch (err) {
      await snapshot.close();
      throw err;
    }
    let released = false;
    const close = async () => {
      if (released) return;
      released = true;
      await snapshot.close();
    };
    return {
      index: applied ? readUint64(applied, 0) : 0,
      close,
      records: (async function* () {
        const it = db.iterator({ gte: DATA, lt: DATA_END, snapshot, highWaterMarkBytes: VIEW_BATCH_BYTES });
        try {
          for await (const batch of readAhead<string, Buffer>(it, BATCH)) {
            yield batch.map(([key, value]): [string, Buffer] => [key.slice(DATA.length), value]);
          }
        } finally {
          await it.close();
          await close();
        }
      })(),
    };
  }

  /**
   * Replaces the whole state with `records` (state machine keys), as of `index`/`term`. Builds a
   * fresh database generation, syncs it, then switches the CURRENT pointer with an atomic rename:
   * a crash before the rename leaves the old state (and the half-built generation is deleted on
   * open); after it, the new one. Throws, leaving the old state, if `records` throws.
   */
  async replace(records: AsyncIterable<Array<[Buffer, Buffer]>>, index: number, term: number, addresses: ReadonlyMap<NodeId, string>): Promise<void> {
    const generation = this.generation + 1;
    const dir = join(this.dir, generationName(generation));
    await rm(dir, { recursive: true, force: true });
    const db = await openState(dir);
    try {
      for await (const batch of records) {
        await db.batch<Buffer, Buffer>(batch.map(([key, value]) => ({ type: 'put' as const, key, value })), { keyEncoding: 'buffer' });
      }
      const addressJson = Buffer.from(JSON.stringify(Object.fromEntries(addresses)));
      await db.batch([
        { type: 'put', key: APPLIED_KEY, value: encodeApplied(index, term) },
        { type: 'put', key: ADDRESSES_KEY, value: addressJson },
        ...ChangeLogWindow.restoredMarker(index),
      ]);
      // All of it in synced tables before the pointer names it: a synced write would sync only
      // LevelDB's newest log, and a state this size spans several.
      await flushMemtable(db);
      await writePointer(this.dir, generation);
    } catch (err) {
      await db.close();
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
    await this.flushing;
    const old = this.db;
    const oldDir = join(this.dir, generationName(this.generation));
    const newAddresses = new Map(addresses);
    this.db = db;
    this.generation = generation;
    this.appliedIndex = index;
    this.appliedTermValue = term;
    this.window.resetTo(index);
    this.addressMap.clear();
    for (const [k, v] of newAddresses) this.addressMap.set(k, v);
    await old.close();
    await rm(oldDir, { recursive: true, force: true });
  }

  /** Replaces the state with a snapshot file's contents and meta. */
  async replaceFrom(reader: SnapshotReader): Promise<void> {
    const header = await reader.header();
    await this.replace(reader.records(), header.index, header.term, new Map(Object.entries(header.addresses)));
  }

  async close(): Promise<void> {
    await this.flushing;
    await this.db.close();
  }

  private async loadMeta(): Promise<void> {
    const [applied, addresses] = await this.db.getMany([APPLIED_KEY, ADDRESSES_KEY]);
    if (applied) {
      this.appliedIndex = readUint64(applied, 0);
      this.appliedTermValue = readUint64(applied, 8);
    }
    if (addresses) for (const [k, v] of Object.entries(JSON.parse(addresses.toString('utf8')) as Record<string, string>)) this.addressMap.set(k, v);
  }
}

/**
 * Writes the memtable to a table file, synced with the manifest that lists it: asking LevelDB to
 * compact a key range begins with exactly that, and the range holds no key, so nothing else is
 * rewritten.
 */
function flushMemtable(db: ClassicLevel<string, Buffer>): Promise<void> {
  return db.compactRange(NO_KEYS, NO_KEYS);
}

function safeDecode(data: Uint8Array): Command | undefined {
  try {
    return decodeCommand(data);
  } catch {
    // A malformed command is refused the same way on every node.
    return undefined;
  }
}

function encodeApplied(index: number, term: number): Buffer {
  const out = Buffer.allocUnsafe(16);
  writeUint64(out, index, 0);
  writeUint64(out, term, 8);
  return out;
}

function stagingKey(id: string, seq: number): string {
  return STAGING + id + seq.toString(16).padStart(8, '0');
}

function generationName(n: number): string {
  return `gen-${n}`;
}

async function writePointer(dir: string, generation: number): Promise<void> {
  const temp = join(dir, `${CURRENT}.tmp`);
  await writeFile(temp, String(generation), { flush: true });
  await rename(temp, join(dir, CURRENT));
  await syncDir(dir);
}

/** The smallest key above every key that starts with `folder` (ending in '/'): '0' follows '/' in every byte order. */
function siblingAfter(folder: string): string {
  return folder.slice(0, -1) + '0';
}
