import { crc32 } from 'node:zlib';
import type { Entry, HardState, SnapshotMeta } from '../core/types';
import { TYPE_CODES, TYPES, cloneMeta, decodeHardState, encodeHardState, readUint64, writeUint64 } from './log-store';

/**
 * One record of the write-ahead log: what one `save` (or a compaction, or the head of a new
 * segment) changes, written with a single write so that it is durable or absent as a whole.
 *
 * On disk: payload length (u32 LE), CRC-32 of the payload (u32 LE), payload. The payload is a
 * flags byte, then the hard state (u32 length + bytes) when flagged, the snapshot meta (u32
 * length + JSON) when flagged, and the entries: a u32 count, then per entry its index (u64),
 * term (u64), type (u8), data length (u32) and data.
 */
export interface Frame {
  hardState?: HardState;
  snapshot?: SnapshotMeta;
  /** The snapshot came from a leader and replaces the whole log, not only the entries it covers. */
  install?: boolean;
  entries: readonly Entry[];
}

export const FRAME_HEADER_BYTES = 8;
const HAS_HARD_STATE = 1;
const HAS_SNAPSHOT = 2;
const INSTALL = 4;
const ENTRY_HEADER_BYTES = 21;

export function encodeFrame(frame: Frame): Buffer {
  const hs = frame.hardState && encodeHardState(frame.hardState);
  const snap = frame.snapshot && Buffer.from(JSON.stringify(cloneMeta(frame.snapshot)), 'utf8');
  let size = FRAME_HEADER_BYTES + 1 + (hs ? 4 + hs.length : 0) + (snap ? 4 + snap.length : 0) + 4;
  for (const e of frame.entries) size += ENTRY_HEADER_BYTES + e.data.byteLength;
  const out = Buffer.allocUnsafe(size);
  let at = FRAME_HEADER_BYTES;
  out[at++] = (hs ? HAS_HARD_STATE : 0) | (snap ? HAS_SNAPSHOT : 0) | (frame.install ? INSTALL : 0);
  for (const part of [hs, snap]) {
    if (!part) continue;
    out.writeUInt32LE(part.length, at);
    at += 4 + part.copy(out, at + 4);
  }
  out.writeUInt32LE(frame.entries.length, at);
  at += 4;
  for (const e of frame.entries) {
    writeUint64(out, e.index, at);
    writeUint64(out, e.term, at + 8);
    out[at + 16] = TYPE_CODES[e.type];
    out.writeUInt32LE(e.data.byteLength, at + 17);
    out.set(e.data, at + ENTRY_HEADER_BYTES);
    at += ENTRY_HEADER_BYTES + e.data.byteLength;
  }
  out.writeUInt32LE(size - FRAME_HEADER_BYTES, 0);
  out.writeUInt32LE(crc32(out.subarray(FRAME_HEADER_BYTES)), 4);
  return out;
}

export type FrameRead =
  | { ok: true; frame: Frame; next: number }
  /** `torn`: the bytes end inside the frame or fail its checksum, as a write cut short by a crash does. */
  | { ok: false; torn: true; reason: string }
  | { ok: false; torn: false; reason: string };

/** Reads the frame at `at`; the end of the buffer exactly at `at` is not a frame (check before). */
export function readFrame(buf: Buffer, at: number): FrameRead {
  if (buf.length - at < FRAME_HEADER_BYTES) return { ok: false, torn: true, reason: 'a frame header is cut short' };
  const length = buf.readUInt32LE(at);
  // No frame is empty: this is where the written frames end and the zeros written ahead begin.
  if (length === 0) return { ok: false, torn: true, reason: 'no frame starts here (zeros written ahead of the log)' };
  const start = at + FRAME_HEADER_BYTES;
  if (buf.length - start < length) return { ok: false, torn: true, reason: 'a frame is cut short' };
  const payload = buf.subarray(start, start + length);
  if (crc32(payload) !== buf.readUInt32LE(at + 4)) return { ok: false, torn: true, reason: 'a frame fails its checksum' };
  try {
    return { ok: true, frame: decodePayload(payload), next: start + length };
  } catch (err) {
    // The checksum matched, so these bytes were written as they are: not a torn write.
    return { ok: false, torn: false, reason: (err as Error).message };
  }
}

function decodePayload(p: Buffer): Frame {
  const need = (at: number, n: number): void => {
    if (at + n > p.length) throw new Error('a frame is shorter than its contents say');
  };
  need(0, 1);
  const flags = p[0]!;
  let at = 1;
  const part = (): Buffer => {
    need(at, 4);
    const n = p.readUInt32LE(at);
    need(at + 4, n);
    const out = p.subarray(at + 4, at + 4 + n);
    at += 4 + n;
    return out;
  };
  const frame: Frame = { entries: [] };
  if (flags & HAS_HARD_STATE) frame.hardState = decodeHardState(part());
  if (flags & HAS_SNAPSHOT) frame.snapshot = JSON.parse(part().toString('utf8')) as SnapshotMeta;
  if (flags & INSTALL) frame.install = true;
  need(at, 4);
  const count = p.readUInt32LE(at);
  at += 4;
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) {
    need(at, ENTRY_HEADER_BYTES);
    const index = readUint64(p, at);
    const type = TYPES[p[at + 16]!];
    if (type === undefined) throw new Error(`log entry ${index} has an unknown type ${p[at + 16]!}`);
    const length = p.readUInt32LE(at + 17);
    need(at + ENTRY_HEADER_BYTES, length);
    // A view into the segment's buffer, which is read once per load and not reused.
    entries.push({ index, term: readUint64(p, at + 8), type, data: p.subarray(at + ENTRY_HEADER_BYTES, at + ENTRY_HEADER_BYTES + length) });
    at += ENTRY_HEADER_BYTES + length;
    if (i > 0 && index !== entries[i - 1]!.index + 1) throw new Error(`log entries ${entries[i - 1]!.index} and ${index} are not consecutive`);
  }
  frame.entries = entries;
  return frame;
}
