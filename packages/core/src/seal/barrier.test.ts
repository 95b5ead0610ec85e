import { MemoryStorage, SealedError } from '../index';
import { Barrier } from './barrier';
import { Keyring } from './keyring';

describe('Barrier', () => {
  function unsealedBarrier(): { barrier: Barrier; physical: MemoryStorage; keyring: Keyring } {
    const physical = new MemoryStorage();
    const barrier = new Barrier(physical);
    const keyring = Keyring.create(new Date(Date.UTC(2026, 0, 1)));
    barrier.unseal(keyring);
    return { barrier, physical, keyring };
  }

  it('stores only ciphertext and reads back the plaintext', async () => {
    const { barrier, physical } = unsealedBarrier();
    await barrier.put('some/key', Buffer.from('plain value'));
    const stored = physical.data.get('some/key') as Buffer;
    expect(stored.includes(Buffer.from('plain value'))).toBe(false);
    expect(stored.readUInt8(0)).toBe(1);
    expect(stored.readUInt32BE(1)).toBe(1);
    expect((await barrier.get('some/key'))?.toString()).toBe('plain value');
  });

  it('encrypts the same value differently each time', async () => {
    const { barrier, physical } = unsealedBarrier();
    await barrier.put('x', Buffer.from('same'));
    const first = physical.data.get('x') as Buffer;
    await barrier.put('x', Buffer.from('same'));
    expect((physical.data.get('x') as Buffer).equals(first)).toBe(false);
  });

  it('binds a ciphertext to its key: moved elsewhere it does not decrypt', async () => {
    const { barrier, physical } = unsealedBarrier();
    await barrier.put('sys/token/id/abc', Buffer.from('{"policies":["default"]}'));
    await barrier.put('sys/token/id/root', Buffer.from('{"policies":["root"]}'));
    physical.data.set('sys/token/id/abc', physical.data.get('sys/token/id/root') as Buffer);
    await expect(barrier.get('sys/token/id/abc')).rejects.toThrow();
    expect((await barrier.get('sys/token/id/root'))?.toString()).toContain('root');
  });

  it('refuses a ciphertext with any byte changed', async () => {
    const { barrier, physical } = unsealedBarrier();
    await barrier.put('k', Buffer.from('value'));
    const stored = physical.data.get('k') as Buffer;
    for (let i = 5; i < stored.length; i++) {
      const copy = Buffer.from(stored);
      copy[i] = (copy[i] as number) ^ 0x01;
      physical.data.set('k', copy);
      await expect(barrier.get('k')).rejects.toThrow();
    }
  });

  it('refuses an unknown format version, an unknown term and a truncated value', async () => {
    const { barrier, physical } = unsealedBarrier();
    await barrier.put('k', Buffer.from('value'));
    const stored = physical.data.get('k') as Buffer;
    const badVersion = Buffer.from(stored);
    badVersion[0] = 9;
    physical.data.set('k', badVersion);
    await expect(barrier.get('k')).rejects.toThrow(/unknown format/);
    const badTerm = Buffer.from(stored);
    badTerm.writeUInt32BE(7, 1);
    physical.data.set('k', badTerm);
    await expect(barrier.get('k')).rejects.toThrow(/term 7/);
    physical.data.set('k', stored.subarray(0, 10));
    await expect(barrier.get('k')).rejects.toThrow();
  });

  it('writes under the newest term after rotation and still reads the older terms', async () => {
    const { barrier, physical, keyring } = unsealedBarrier();
    await barrier.put('old', Buffer.from('written in term 1'));
    keyring.rotate(new Date(Date.UTC(2026, 0, 2)));
    await barrier.put('new', Buffer.from('written in term 2'));
    expect((physical.data.get('old') as Buffer).readUInt32BE(1)).toBe(1);
    expect((physical.data.get('new') as Buffer).readUInt32BE(1)).toBe(2);
    expect((await barrier.get('old'))?.toString()).toBe('written in term 1');
    expect((await barrier.get('new'))?.toString()).toBe('written in term 2');
  });

  it('encrypts the values of a transaction', async () => {
    const { barrier, physical } = unsealedBarrier();
    await barrier.txn([{ type: 'put', key: 'a', value: Buffer.from('txn-plain-a') }, { type: 'put', key: 'b', value: Buffer.from('txn-plain-b') }]);
    expect((physical.data.get('a') as Buffer).includes(Buffer.from('txn-plain-a'))).toBe(false);
    expect((await barrier.get('b'))?.toString()).toBe('txn-plain-b');
  });

  it('refuses every operation while sealed, including a delete-only transaction', async () => {
    const { barrier, physical } = unsealedBarrier();
    await barrier.put('k', Buffer.from('v'));
    barrier.seal();
    expect(barrier.sealed).toBe(true);
    await expect(barrier.get('k')).rejects.toBeInstanceOf(SealedError);
    await expect(barrier.put('k', Buffer.from('w'))).rejects.toBeInstanceOf(SealedError);
    await expect(barrier.delete('k')).rejects.toBeInstanceOf(SealedError);
    await expect(barrier.list('')).rejects.toBeInstanceOf(SealedError);
    await expect(barrier.txn([{ type: 'put', key: 'k', value: Buffer.from('w') }])).rejects.toBeInstanceOf(SealedError);
    await expect(barrier.txn([{ type: 'delete', key: 'k' }])).rejects.toBeInstanceOf(SealedError);
    expect(physical.data.has('k')).toBe(true);
    expect(() => barrier.keyring()).toThrow(SealedError);
  });

  it('wipes the data keys from memory when sealed', async () => {
    const { barrier, keyring } = unsealedBarrier();
    const key = keyring.activeTerm.key;
    expect(key.equals(Buffer.alloc(32))).toBe(false);
    barrier.seal();
    expect(key.equals(Buffer.alloc(32))).toBe(true);
  });
});

describe('Keyring', () => {
  it('opens only with the root key it was sealed with', () => {
    const ring = Keyring.create(new Date(Date.UTC(2026, 0, 1)));
    ring.rotate(new Date(Date.UTC(2026, 0, 2)));
    const rootKey = Buffer.alloc(32, 7);
    const sealed = ring.seal(rootKey);
    const opened = Keyring.open(rootKey, sealed);
    expect(opened.activeTerm.term).toBe(2);
    expect(opened.term(1)?.key.equals(ring.term(1)?.key as Buffer)).toBe(true);
    expect(opened.term(2)?.installTime).toBe('2026-01-02T00:00:00.000Z');
    expect(() => Keyring.open(Buffer.alloc(32, 8), sealed)).toThrow();
  });
});
