import { loadSync } from '@grpc/proto-loader';
import type { Entry, EntryType, Message, MessageType } from '../core/types';
import { seededRandom, type Random } from '../test-support/seeded-random';
import { ENTRY_TYPE_NUMBERS, MESSAGE_TYPE_NUMBERS, decodeMessage, encodeMessage, encodedSizeBound, type WireBatch } from './codec';
import { raftProtoPath, raftService } from './raft-proto';

const MESSAGE_TYPES = Object.keys(MESSAGE_TYPE_NUMBERS) as MessageType[];
const ENTRY_TYPES = Object.keys(ENTRY_TYPE_NUMBERS) as EntryType[];
const IDS = ['a', 'node-2', '', 'ñødé-☃', 'x'.repeat(40)];

/** Small values often, since 0, false and "" are what proto3 would otherwise lose. */
function number(r: Random): number {
  return r.pick([0, 1, r.int(1000), Number.MAX_SAFE_INTEGER, r.int(2 ** 31)]);
}

function bytes(r: Random): Uint8Array {
  const b = new Uint8Array(r.pick([0, 1, r.int(300)]));
  for (let i = 0; i < b.length; i++) b[i] = r.int(256);
  return b;
}

function entry(r: Random): Entry {
  return { index: number(r), term: number(r), type: r.pick(ENTRY_TYPES), data: bytes(r) };
}

/** Any field combination, whatever the type: the transport must not care what the core sets. */
function arbitraryMessage(r: Random): Message {
  const m: Message = { type: r.pick(MESSAGE_TYPES), from: r.pick(IDS), to: r.pick(IDS), term: number(r) };
  const maybe = (): boolean => r.next() < 0.5;
  if (maybe()) m.index = number(r);
  if (maybe()) m.logTerm = number(r);
  if (maybe()) m.entries = Array.from({ length: r.pick([0, 1, r.int(20)]) }, () => entry(r));
  if (maybe()) m.commit = number(r);
  if (maybe()) m.reject = maybe();
  if (maybe()) m.rejectHint = number(r);
  if (maybe()) m.logTermHint = number(r);
  if (maybe()) {
    const ids = () => Array.from({ length: r.int(4) }, () => r.pick(IDS));
    m.snapshot = { index: number(r), term: number(r), conf: { voters: ids(), learners: ids() } };
  }
  if (maybe()) m.context = r.pick(['', 'read-17', '☃'.repeat(r.int(10))]);
  if (maybe()) m.transfer = maybe();
  return m;
}

function everyField(type: MessageType): Message {
  return {
    type,
    from: 'n1',
    to: 'n2',
    term: 7,
    index: 41,
    logTerm: 6,
    entries: [
      { index: 42, term: 7, type: 'normal', data: Uint8Array.of(1, 2, 3) },
      { index: 43, term: 7, type: 'conf', data: Uint8Array.of(9) },
      { index: 44, term: 7, type: 'empty', data: new Uint8Array(0) },
    ],
    commit: 40,
    reject: true,
    rejectHint: 39,
    logTermHint: 5,
    snapshot: { index: 30, term: 4, conf: { voters: ['n1', 'n2'], learners: ['n3'] } },
    context: 'read-1',
    transfer: true,
  };
}

/** Through the same serializer and deserializer gRPC uses, then back to the core's shape. */
function roundTrip(messages: Message[]): (Message | undefined)[] {
  const method = raftService().stream;
  const bytes = method.requestSerialize({ messages: messages.map(encodeMessage) });
  const decoded: WireBatch = method.requestDeserialize(bytes);
  return decoded.messages.map(decodeMessage);
}

function definedKeys(m: object): string[] {
  return Object.entries(m).filter(([, v]) => v !== undefined).map(([k]) => k).sort();
}

describe('the Raft wire codec', () => {
  it.each(MESSAGE_TYPES)('carries a %s message with every field set', (type) => {
    const m = everyField(type);
    expect(roundTrip([m])).toEqual([m]);
  });

  it('keeps zero, false, empty strings and empty lists apart from absent fields', () => {
    const zeros: Message = { type: 'appendResp', from: '', to: '', term: 0, index: 0, logTerm: 0, entries: [], commit: 0, reject: false, rejectHint: 0, logTermHint: 0, context: '', transfer: false };
    const bare: Message = { type: 'heartbeat', from: 'a', to: 'b', term: 0 };
    const [z, b] = roundTrip([zeros, bare]);
    expect(z).toEqual(zeros);
    expect(definedKeys(z!)).toEqual(definedKeys(zeros));
    expect(b).toEqual(bare);
    expect(definedKeys(b!)).toEqual(['from', 'term', 'to', 'type']);
  });

  it('round-trips generated messages field for field', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const r = seededRandom(seed);
      const batch = Array.from({ length: 1 + r.int(20) }, () => arbitraryMessage(r));
      const decoded = roundTrip(batch);
      expect({ seed, decoded }).toEqual({ seed, decoded: batch });
      decoded.forEach((d, i) => expect({ seed, keys: definedKeys(d!) }).toEqual({ seed, keys: definedKeys(batch[i]!) }));
    }
  });

  it('bounds the encoded size of every generated message from above', () => {
    const method = raftService().stream;
    const r = seededRandom(99);
    for (let i = 0; i < 500; i++) {
      const m = arbitraryMessage(r);
      const encoded = method.requestSerialize({ messages: [encodeMessage(m)] }).length;
      expect({ i, fits: encoded <= encodedSizeBound(m) }).toEqual({ i, fits: true });
    }
  });

  it('drops a message whose type this node does not know', () => {
    const wire = encodeMessage({ type: 'vote', from: 'a', to: 'b', term: 1 });
    expect(decodeMessage({ ...wire, type: 99 })).toBeUndefined();
    expect(decodeMessage({ ...wire, entries: { entries: [{ index: 1, term: 1, type: 0, data: new Uint8Array(0) }] } })).toBeUndefined();
  });

  it('numbers the enums as raft.proto does', () => {
    const definition = loadSync(raftProtoPath());
    const values = (name: string): Record<string, number> => {
      const type = definition[`strongroom.raft.${name}`]?.type as { value: { name: string; number: number }[] };
      return Object.fromEntries(type.value.map((v) => [v.name, v.number]));
    };
    const upperSnake = (s: string): string => s.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();
    const expected = (prefix: string, numbers: Record<string, number>): Record<string, number> => ({
      [`${prefix}_UNSPECIFIED`]: 0,
      ...Object.fromEntries(Object.entries(numbers).map(([k, n]) => [`${prefix}_${upperSnake(k)}`, n])),
    });
    expect(values('MessageType')).toEqual(expected('MESSAGE_TYPE', MESSAGE_TYPE_NUMBERS));
    expect(values('EntryType')).toEqual(expected('ENTRY_TYPE', ENTRY_TYPE_NUMBERS));
  });
});
