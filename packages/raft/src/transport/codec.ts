import type { Entry, EntryType, Message, MessageType, SnapshotMeta } from '../core/types';

/*
 * Conversion between the core's Message and the plain objects proto-loader serializes and
 * deserializes (see LOADER_OPTIONS in raft-proto.ts). Field names match; what differs is that
 * enums travel as numbers and `entries` is wrapped in an EntryList to give it presence.
 *
 * Decoded messages always carry every optional property, undefined when absent: one object
 * shape for every message keeps the code that reads them monomorphic, and a decoded message
 * equals the sent one once undefined properties are ignored (as Jest's toEqual does).
 */

export interface WireEntry {
  index: number;
  term: number;
  type: number;
  data: Uint8Array;
}

export interface WireMessage {
  type: number;
  from: string;
  to: string;
  term: number;
  index?: number | undefined;
  logTerm?: number | undefined;
  entries?: { entries: WireEntry[] } | undefined;
  commit?: number | undefined;
  reject?: boolean | undefined;
  rejectHint?: number | undefined;
  logTermHint?: number | undefined;
  /** Same shape as SnapshotMeta; `conf` is null when a sender left it out. */
  snapshot?: { index: number; term: number; conf: { voters: string[]; learners: string[] } | null } | undefined;
  context?: string | undefined;
  transfer?: boolean | undefined;
}

export interface WireBatch {
  messages: WireMessage[];
}

/** Exactly one is set (a oneof on the wire): the message first, data, then `done: true`. */
export interface WireSnapshotChunk {
  message?: WireMessage;
  data?: Buffer;
  done?: boolean;
}

/** Enum numbers of raft.proto; codec.test.ts checks them against the proto. 0 is "unspecified". */
export const MESSAGE_TYPE_NUMBERS: Readonly<Record<MessageType, number>> = {
  preVote: 1,
  preVoteResp: 2,
  vote: 3,
  voteResp: 4,
  append: 5,
  appendResp: 6,
  heartbeat: 7,
  heartbeatResp: 8,
  snapshot: 9,
  timeoutNow: 10,
};

export const ENTRY_TYPE_NUMBERS: Readonly<Record<EntryType, number>> = {
  normal: 1,
  conf: 2,
  empty: 3,
};

function byNumber<T extends string>(numbers: Readonly<Record<T, number>>): readonly (T | undefined)[] {
  const names: (T | undefined)[] = [];
  for (const [name, n] of Object.entries(numbers) as [T, number][]) names[n] = name;
  return names;
}

const MESSAGE_TYPES = byNumber(MESSAGE_TYPE_NUMBERS);
const ENTRY_TYPES = byNumber(ENTRY_TYPE_NUMBERS);

function encodeEntry(e: Entry): WireEntry {
  return { index: e.index, term: e.term, type: ENTRY_TYPE_NUMBERS[e.type], data: e.data };
}

/** Undefined optional fields pass through: the serializer skips them. */
export function encodeMessage(m: Message): WireMessage {
  return {
    type: MESSAGE_TYPE_NUMBERS[m.type],
    from: m.from,
    to: m.to,
    term: m.term,
    index: m.index,
    logTerm: m.logTerm,
    entries: m.entries === undefined ? undefined : { entries: m.entries.map(encodeEntry) },
    commit: m.commit,
    reject: m.reject,
    rejectHint: m.rejectHint,
    logTermHint: m.logTermHint,
    snapshot: m.snapshot,
    context: m.context,
    transfer: m.transfer,
  };
}

/** The core's Message, or undefined when an enum value is unknown (a newer peer, or garbage). */
export function decodeMessage(w: WireMessage): Message | undefined {
  const type = MESSAGE_TYPES[w.type];
  if (type === undefined) return undefined;
  let entries: Entry[] | undefined;
  if (w.entries !== undefined) {
    const wire = w.entries.entries;
    entries = new Array<Entry>(wire.length);
    for (let i = 0; i < wire.length; i++) {
      const e = wire[i]!;
      const entryType = ENTRY_TYPES[e.type];
      if (entryType === undefined) return undefined;
      entries[i] = { index: e.index, term: e.term, type: entryType, data: e.data };
    }
  }
  let snapshot: SnapshotMeta | undefined;
  if (w.snapshot !== undefined) {
    const s = w.snapshot;
    snapshot = { index: s.index, term: s.term, conf: s.conf ?? { voters: [], learners: [] } };
  }
  return {
    type,
    from: w.from,
    to: w.to,
    term: w.term,
    index: w.index,
    logTerm: w.logTerm,
    entries,
    commit: w.commit,
    reject: w.reject,
    rejectHint: w.rejectHint,
    logTermHint: w.logTermHint,
    snapshot,
    context: w.context,
    transfer: w.transfer,
  };
}

/*
 * Bounds for encodedSizeBound: a varint is at most 10 bytes and a tag or a length prefix at
 * most 5, so a message's fixed fields need under 160 bytes, an entry's under 40 plus its data,
 * and a UTF-8 string at most 3 bytes per UTF-16 unit plus 6.
 */
const MESSAGE_BOUND = 160;
const ENTRY_BOUND = 40;
const STRING_BOUND = 6;

/**
 * An upper bound of `m`'s encoded size inside a batch, cheap enough to compute per message:
 * the sender cuts batches with it so that none exceeds the gRPC message limit, which would
 * fail the whole stream.
 */
export function encodedSizeBound(m: Message): number {
  let n = MESSAGE_BOUND + 3 * (m.from.length + m.to.length);
  if (m.context !== undefined) n += 3 * m.context.length;
  if (m.entries !== undefined) {
    for (const e of m.entries) n += ENTRY_BOUND + e.data.length;
  }
  if (m.snapshot !== undefined) {
    for (const id of m.snapshot.conf.voters) n += STRING_BOUND + 3 * id.length;
    for (const id of m.snapshot.conf.learners) n += STRING_BOUND + 3 * id.length;
  }
  return n;
}
