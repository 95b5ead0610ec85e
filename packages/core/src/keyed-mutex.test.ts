import { KeyedMutex } from './keyed-mutex';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('KeyedMutex', () => {
  it('runs work on one key one at a time, in arrival order', async () => {
    const mutex = new KeyedMutex();
    const log: string[] = [];
    const job = (name: string) => mutex.run('k', async () => {
      log.push(`${name} start`);
      await tick();
      log.push(`${name} end`);
      return name;
    });
    expect(await Promise.all([job('a'), job('b'), job('c')])).toEqual(['a', 'b', 'c']);
    expect(log).toEqual(['a start', 'a end', 'b start', 'b end', 'c start', 'c end']);
  });

  it('starts work on a key nobody holds at once, without waiting a turn', async () => {
    const mutex = new KeyedMutex();
    let started = false;
    const done = mutex.run('k', async () => { started = true; });
    expect(started).toBe(true);
    await done;
    expect(mutex.size).toBe(0);
  });

  it('lets different keys run at the same time', async () => {
    const mutex = new KeyedMutex();
    let release!: () => void;
    const blocker = new Promise<void>((resolve) => { release = resolve; });
    const slow = mutex.run('a', () => blocker);
    let otherRan = false;
    await mutex.run('b', async () => { otherRan = true; });
    expect(otherRan).toBe(true);
    release();
    await slow;
  });

  it('releases the key when the work throws, and forgets idle keys', async () => {
    const mutex = new KeyedMutex();
    await expect(mutex.run('k', async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    expect(await mutex.run('k', async () => 'next')).toBe('next');
    expect(mutex.size).toBe(0);
  });
});

describe('KeyedMutex with several keys', () => {
  it('takes overlapping key sets in one order, so crossing sections cannot deadlock', async () => {
    const mutex = new KeyedMutex();
    const done: string[] = [];
    await Promise.all([
      mutex.run(['x', 'y'], async () => { await tick(); done.push('xy'); }),
      mutex.run(['y', 'x'], async () => { await tick(); done.push('yx'); }),
    ]);
    expect(done).toEqual(['xy', 'yx']);
    expect(mutex.size).toBe(0);
  });
});
