import { FakeClock, silentLogger, type CommitSubscription, type CommittedChange } from '@strongroom/base';
import { Core } from './core';
import { MemoryStorage } from './storage/memory-storage';

/** Storage that counts the reads reaching it, by key. */
class CountingStorage extends MemoryStorage {
  readonly reads: string[] = [];
  override async get(key: string): Promise<Buffer | null> {
    this.reads.push(key);
    return super.get(key);
  }
}

/** A commit feed the test drives by hand. */
class Feed implements CommitSubscription {
  private listener: ((changes: readonly CommittedChange[]) => void) | undefined;
  subscribe(listener: (changes: readonly CommittedChange[]) => void): () => void {
    this.listener = listener;
    return () => { this.listener = undefined; };
  }
  emit(changes: CommittedChange[]): void {
    this.listener?.(changes);
  }
}

describe('committed changes reaching the core\'s cache', () => {
  it('forget what another writer changed, keep what this core wrote itself, and forget everything at a restore', async () => {
    const storage = new CountingStorage();
    const feed = new Feed();
    const core = new Core({ storage, commits: feed, clock: new FakeClock(), logger: silentLogger });
    const { keys } = await core.initialize(1, 1);
    await core.unseal(keys[0] as Buffer);
    const key = 'sys/test/k';
    await core.barrier.put(key, Buffer.from('one'));
    const readsOf = () => storage.reads.filter((k) => k === key).length;

    expect((await core.barrier.get(key))?.toString()).toBe('one');
    expect(readsOf()).toBe(0); // written through the cache: served from it

    // This core's own write, settled while it still awaits it: nothing behind the cache's back.
    feed.emit([{ index: 10, ops: [{ type: 'put', key, value: Buffer.from('ciphertext') }], own: true }]);
    await core.barrier.get(key);
    expect(readsOf()).toBe(0);

    // Another writer's change to the key (a follower's apply, another leader's entry).
    feed.emit([{ index: 11, ops: [{ type: 'put', key, value: Buffer.from('ciphertext') }] }]);
    expect((await core.barrier.get(key))?.toString()).toBe('one');
    expect(readsOf()).toBe(1);
    await core.barrier.get(key);
    expect(readsOf()).toBe(1); // cached again

    // A restore: every key is forgotten.
    feed.emit([{ index: 12, restored: true }]);
    await core.barrier.get(key);
    expect(readsOf()).toBe(2);
    await core.close();
  });
});
