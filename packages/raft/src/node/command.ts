import type { TxnOp } from '@strongroom/base';
import type { NodeId } from '../core/types';

/** A condition of a check-and-set: `key` holds exactly `value`, or is absent when `value` is null. */
export interface Check {
  key: string;
  value: Buffer | null;
}

/**
 * What a normal log entry carries. The runtime proposes these; every node applies them the same
 * way, so decoding must be total and deterministic.
 *  - txn: the ops apply atomically, and only if every check holds (the result goes back to the proposer);
 *  - address: records a member's cluster address (a leader announces its own, see DESIGN.md);
 *  - restoreChunk / restoreCommit: an operator's snapshot restore, carried through the log.
 */
export type Command =
  | { kind: 'txn'; checks: Check[]; ops: TxnOp[] }
  | { kind: 'address'; node: NodeId; address: string }
  | { kind: 'restoreChunk'; id: string; seq: number; data: Buffer }
  | { kind: 'restoreCommit'; id: string; chunks: number };

/*
 * Layout (all integers big-endian u32 unless noted):
 *   txn:           0x01, checkCount, opCount, checks, ops
 *     check:       present (u8: 0 = must be absent, 1 = must equal), keyLen, key, [valueLen, value]
 *     op:          type (u8: 0 = put, 1 = delete), keyLen, key, [valueLen, value]
 *   address:       0x02, nodeLen, node, address (rest)
 *   restoreChunk:  0x03, id (16 bytes), seq, data (rest)
 *   restoreCommit: 0x04, id (16 bytes), chunks
 * One allocation per command and no copies on decode beyond key strings: this is the hot path.
 */
const TXN = 1;
const ADDRESS = 2;
const RESTORE_CHUNK = 3;
const RESTORE_COMMIT = 4;

export function encodeTxn(ops: readonly TxnOp[], checks: readonly Check[] = []): Buffer {
  let size = 9;
  for (const c of checks) size += 5 + Buffer.byteLength(c.key) + (c.value ? 4 + c.value.length : 0);
  for (const op of ops) size += 5 + Buffer.byteLength(op.key) + (op.type === 'put' ? 4 + op.value.length : 0);
  // Memory of its own, not a slice of Node's shared pool: the Raft log keeps the command until
  // the next snapshot, and a slice would keep its whole 64 KiB pool block alive with it.
  const out = Buffer.allocUnsafeSlow(size);
  out[0] = TXN;
  out.writeUInt32BE(checks.length, 1);
  out.writeUInt32BE(ops.length, 5);
  let at = 9;
  const writeKey = (key: string) => {
    const len = out.write(key, at + 4, 'utf8');
    out.writeUInt32BE(len, at);
    at += 4 + len;
  };
  const writeValue = (value: Buffer) => {
    out.writeUInt32BE(value.length, at);
    out.set(value, at + 4);
    at += 4 + value.length;
  };
  for (const c of checks) {
    out[at++] = c.value ? 1 : 0;
    writeKey(c.key);
    if (c.value) writeValue(c.value);
  }
  for (const op of ops) {
    out[at++] = op.type === 'put' ? 0 : 1;
    writeKey(op.key);
    if (op.type === 'put') writeValue(op.value);
  }
  return out;
}

export function encodeAddress(node: NodeId, address: string): Buffer {
  const n = Buffer.from(node, 'utf8');
  const a = Buffer.from(address, 'utf8');
  const out = Buffer.allocUnsafe(5 + n.length + a.length);
  out[0] = ADDRESS;
  out.writeUInt32BE(n.length, 1);
  out.set(n, 5);
  out.set(a, 5 + n.length);
  return out;
}

/** `id` is 32 hex digits (16 random bytes) naming one restore. */
export function encodeRestoreChunk(id: string, seq: number, data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(21 + data.byteLength);
  out[0] = RESTORE_CHUNK;
  out.write(id, 1, 16, 'hex');
  out.writeUInt32BE(seq, 17);
  out.set(data, 21);
  return out;
}

export function encodeRestoreCommit(id: string, chunks: number): Buffer {
  const out = Buffer.allocUnsafe(21);
  out[0] = RESTORE_COMMIT;
  out.write(id, 1, 16, 'hex');
  out.writeUInt32BE(chunks, 17);
  return out;
}

export class CommandDecodeError extends Error {}

/** Decodes an entry's data. Values are views into `data`, valid as long as it is not reused. */
export function decodeCommand(data: Uint8Array): Command {
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  let at = 1;
  const u32 = () => {
    if (at + 4 > buf.length) throw new CommandDecodeError('command is truncated');
    const n = buf.readUInt32BE(at);
    at += 4;
    return n;
  };
  const bytes = (len: number) => {
    if (at + len > buf.length) throw new CommandDecodeError('command is truncated');
    const out = buf.subarray(at, at + len);
    at += len;
    return out;
  };
  const key = () => {
    const len = u32();
    if (at + len > buf.length) throw new CommandDecodeError('command is truncated');
    const out = buf.toString('utf8', at, at + len);
    at += len;
    return out;
  };
  switch (buf[0]) {
    case TXN: {
      const checkCount = u32();
      const opCount = u32();
      const checks: Check[] = [];
      for (let i = 0; i < checkCount; i++) {
        const present = bytes(1)[0] === 1;
        const k = key();
        checks.push({ key: k, value: present ? bytes(u32()) : null });
      }
      const ops: TxnOp[] = [];
      for (let i = 0; i < opCount; i++) {
        const type = bytes(1)[0];
        const k = key();
        ops.push(type === 0 ? { type: 'put', key: k, value: bytes(u32()) } : { type: 'delete', key: k });
      }
      return { kind: 'txn', checks, ops };
    }
    case ADDRESS: {
      const node = key();
      return { kind: 'address', node, address: buf.toString('utf8', at) };
    }
    case RESTORE_CHUNK: {
      const id = bytes(16).toString('hex');
      return { kind: 'restoreChunk', id, seq: u32(), data: buf.subarray(at) };
    }
    case RESTORE_COMMIT: {
      const id = bytes(16).toString('hex');
      return { kind: 'restoreCommit', id, chunks: u32() };
    }
    default:
      throw new CommandDecodeError(`unknown command kind ${String(buf[0])}`);
  }
}
