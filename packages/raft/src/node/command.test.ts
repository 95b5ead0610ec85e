import { decodeCommand, encodeAddress, encodeRestoreChunk, encodeRestoreCommit, encodeTxn, CommandDecodeError } from './command';

describe('command encoding', () => {
  it('round-trips a txn with checks, unicode keys and binary values', () => {
    const data = encodeTxn(
      [
        { type: 'put', key: 'a/日本/😀', value: Buffer.from([0, 1, 255]) },
        { type: 'delete', key: 'gone' },
        { type: 'put', key: 'empty', value: Buffer.alloc(0) },
      ],
      [
        { key: 'must/equal', value: Buffer.from('x') },
        { key: 'must/be/absent', value: null },
      ],
    );
    // As the transport hands it over: a plain Uint8Array, not a Buffer.
    const decoded = decodeCommand(new Uint8Array(data));
    expect(decoded).toEqual({
      kind: 'txn',
      checks: [
        { key: 'must/equal', value: Buffer.from('x') },
        { key: 'must/be/absent', value: null },
      ],
      ops: [
        { type: 'put', key: 'a/日本/😀', value: Buffer.from([0, 1, 255]) },
        { type: 'delete', key: 'gone' },
        { type: 'put', key: 'empty', value: Buffer.alloc(0) },
      ],
    });
  });

  it('gives a txn memory of its own, since the Raft log keeps it long after the request', () => {
    const data = encodeTxn([{ type: 'put', key: 'k', value: Buffer.from('small') }]);
    expect(data.byteOffset).toBe(0);
    expect(data.buffer.byteLength).toBe(data.byteLength);
  });

  it('round-trips the system commands', () => {
    expect(decodeCommand(encodeAddress('n1', '10.0.0.1:8201'))).toEqual({ kind: 'address', node: 'n1', address: '10.0.0.1:8201' });
    const id = 'ab'.repeat(16);
    expect(decodeCommand(encodeRestoreChunk(id, 7, Buffer.from('chunk')))).toEqual({ kind: 'restoreChunk', id, seq: 7, data: Buffer.from('chunk') });
    expect(decodeCommand(encodeRestoreCommit(id, 3))).toEqual({ kind: 'restoreCommit', id, chunks: 3 });
  });

  it('refuses truncated and unknown commands', () => {
    const data = encodeTxn([{ type: 'put', key: 'k', value: Buffer.from('value') }]);
    expect(() => decodeCommand(data.subarray(0, data.length - 2))).toThrow(CommandDecodeError);
    expect(() => decodeCommand(Buffer.from([9]))).toThrow(CommandDecodeError);
  });
});
