import { MemoryStorage } from './memory-storage';
import type { TxnOp } from './storage';
import { WriteGuard } from './write-guard';

/** Transaction ops that count how often their keys are read. */
function countedOps(keys: string[]): { ops: TxnOp[]; reads: () => number } {
  let reads = 0;
  const ops = keys.map((key) => {
    const op = { type: 'put' as const, value: Buffer.from('v') };
    Object.defineProperty(op, 'key', { enumerable: true, get: () => { reads++; return key; } });
    return op as TxnOp;
  });
  return { ops, reads: () => reads };
}

describe('WriteGuard', () => {
  it('does not look at the keys of a write while it is not guarding', async () => {
    const inner = new MemoryStorage();
    const checked: string[] = [];
    const guard = new WriteGuard(inner, { guarding: () => false, check: (key) => { checked.push(key); } });
    const { ops, reads } = countedOps(['a', 'b', 'c']);
    const txn = jest.spyOn(inner, 'txn').mockResolvedValue(undefined);
    await guard.txn(ops);
    await guard.put('d', Buffer.from('v'));
    await guard.delete('d');
    expect(reads()).toBe(0);
    expect(checked).toEqual([]);
    expect(txn).toHaveBeenCalledTimes(1);
  });

  it('checks every key while guarding, and a refused transaction stores nothing', async () => {
    const inner = new MemoryStorage();
    const checked: string[] = [];
    const guard = new WriteGuard(inner, {
      guarding: () => true,
      check: (key) => {
        checked.push(key);
        if (key.startsWith('shared/')) throw new Error(`refused ${key}`);
      },
    });
    await guard.txn([{ type: 'put', key: 'local/a', value: Buffer.from('a') }]);
    await expect(guard.txn([
      { type: 'put', key: 'local/b', value: Buffer.from('b') },
      { type: 'put', key: 'shared/c', value: Buffer.from('c') },
    ])).rejects.toThrow('refused shared/c');
    await expect(guard.put('shared/d', Buffer.from('d'))).rejects.toThrow('refused shared/d');
    await expect(guard.delete('shared/a')).rejects.toThrow('refused shared/a');
    expect([...inner.data.keys()]).toEqual(['local/a']);
    expect(checked).toEqual(['local/a', 'local/b', 'shared/c', 'shared/d', 'shared/a']);
  });
});
