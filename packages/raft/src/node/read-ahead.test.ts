import { readAhead, type BatchIterator } from './read-ahead';

/** Batches of numbered records, each read settled by the test; counts what was asked for. */
function scripted(batches: number[][]) {
  const reads: Array<{ size: number; resolve: (b: Array<[string, number]>) => void; reject: (e: Error) => void }> = [];
  const it: BatchIterator<string, number> = {
    nextv: (size) => new Promise((resolve, reject) => reads.push({ size, resolve, reject })),
  };
  const settle = (i: number) => reads[i]!.resolve((batches[i] ?? []).map((n) => [`k${n}`, n]));
  return { it, reads, settle };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('readAhead', () => {
  it('asks for the next batch before the caller has handled the one it holds', async () => {
    const { it, reads, settle } = scripted([[1, 2], [3], []]);
    const batches = readAhead(it, 7)[Symbol.asyncIterator]();
    const first = batches.next();
    await turn();
    expect(reads).toHaveLength(1);
    settle(0);
    expect(await first).toEqual({ done: false, value: [['k1', 1], ['k2', 2]] });
    // The caller holds the first batch; the second is already being read.
    expect(reads).toHaveLength(2);
    expect(reads.map((r) => r.size)).toEqual([7, 7]);
    settle(1);
    expect(await batches.next()).toEqual({ done: false, value: [['k3', 3]] });
    settle(2);
    expect(await batches.next()).toEqual({ done: true, value: undefined });
    // An empty batch ends it: nothing is asked for after the end.
    expect(reads).toHaveLength(3);
  });

  it('gives every record once, in order, whatever the batch sizes', async () => {
    const source = [[1, 2, 3], [4], [5, 6], []];
    let at = 0;
    const it: BatchIterator<string, number> = { nextv: async () => (source[at++] ?? []).map((n) => [`k${n}`, n] as [string, number]) };
    const seen: number[] = [];
    for await (const batch of readAhead(it, 3)) for (const [, n] of batch) seen.push(n);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('passes a failed read on to the caller', async () => {
    const { it, reads, settle } = scripted([[1]]);
    const batches = readAhead(it, 4)[Symbol.asyncIterator]();
    const first = batches.next();
    await turn();
    settle(0);
    await first;
    const second = batches.next();
    reads[1]!.reject(new Error('corrupted block'));
    await expect(second).rejects.toThrow('corrupted block');
  });

  it('a caller that stops early leaves no unhandled failure behind from the read in flight', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { it, reads, settle } = scripted([[1], [2]]);
      const batches = readAhead(it, 4)[Symbol.asyncIterator]();
      const first = batches.next();
      await turn();
      settle(0);
      expect(await first).toEqual({ done: false, value: [['k1', 1]] });
      // As `break` in a for-await loop does.
      expect(await batches.return(undefined)).toEqual({ done: true, value: undefined });
      expect(reads).toHaveLength(2);
      reads[1]!.reject(new Error('iterator closed'));
      await turn();
      await turn();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
