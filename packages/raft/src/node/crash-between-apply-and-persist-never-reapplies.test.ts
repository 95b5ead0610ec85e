import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Entry, HardState, SnapshotMeta } from '../core/types';
import { encodeTxn } from './command';
import { WalLogStore } from './wal-log-store';
import type { LogStore } from './log-store';
import { MemoryNetwork } from './memory-transport';
import { RaftNode } from './raft-node';
import type { AppliedChange } from './state-machine';
import { FAST, tempDir, waitFor } from './test-support/cluster';

/** The real log store, except that a save can "crash" the process just before or just after its write. */
class CrashingLogStore implements LogStore {
  crash: 'never' | 'before-write' | 'after-write' = 'never';
  constructor(private readonly inner: LogStore) {}
  load() {
    return this.inner.load();
  }
  async save(hardState: HardState | undefined, entries: readonly Entry[], snapshot?: SnapshotMeta) {
    if (this.crash === 'before-write') throw new Error('simulated crash before the log write');
    await this.inner.save(hardState, entries, snapshot);
    if (this.crash === 'after-write') throw new Error('simulated crash after the log write');
  }
  async saveCommit(hardState: HardState) {
    if (this.crash === 'before-write') throw new Error('simulated crash before the log write');
    await this.inner.saveCommit(hardState);
    if (this.crash === 'after-write') throw new Error('simulated crash after the log write');
  }
  compact(snapshot: SnapshotMeta, truncateTo: number) {
    return this.inner.compact(snapshot, truncateTo);
  }
  close() {
    return this.inner.close();
  }
}

/** An increment: valid only against the value it read, so a replay could not pass unnoticed. */
function increment(from: number): Buffer {
  return encodeTxn(
    [{ type: 'put', key: 'counter', value: Buffer.from(String(from + 1)) }],
    [{ key: 'counter', value: from === 0 ? null : Buffer.from(String(from)) }],
  );
}

describe('a crash between applying and the next log write', () => {
  let dir: string;
  /** How many times each index was applied, over every life of the node. */
  const applications = new Map<number, number>();
  const record = (changes: AppliedChange[]) => {
    for (const c of changes) applications.set(c.index, (applications.get(c.index) ?? 0) + 1);
  };

  beforeEach(async () => {
    dir = await tempDir();
    applications.clear();
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  async function open(logStore?: LogStore): Promise<RaftNode> {
    const node = await RaftNode.open({
      id: 'n1',
      dataDir: dir,
      transport: new MemoryNetwork().transport('n1'),
      bootstrap: { voters: ['n1'], learners: [] },
      ...(logStore && { logStore }),
      ...FAST,
    });
    // Registered before the loop's first turn (a macrotask away), so no apply is missed.
    node.onApply(record);
    return node;
  }

  it('does not apply an entry again after restarting', async () => {
    const store = new CrashingLogStore(await WalLogStore.open(join(dir, 'wal')));
    const first = await open(store);
    await waitFor(() => first.isLeader, 'leadership');
    expect(await first.propose(increment(0))).toBe(true);
    expect(await first.propose(increment(1))).toBe(true);
    const appliedBefore = first.applied;

    // The state machine holds both increments; the next log write never happens.
    store.crash = 'before-write';
    await expect(first.propose(increment(2))).rejects.toThrow(/simulated crash/);
    await first.close();

    const second = await open();
    await waitFor(() => second.isLeader, 'leadership after restart');
    expect(second.applied).toBeGreaterThanOrEqual(appliedBefore);
    expect((await second.get('counter'))?.toString()).toBe('2');
    // The restarted node continues from the stored value: the third increment was never logged.
    expect(await second.propose(increment(2))).toBe(true);
    expect((await second.get('counter'))?.toString()).toBe('3');
    expect([...applications.values()].every((n) => n === 1)).toBe(true);
    expect(applications.size).toBe(3);
    await second.close();
  });

  it('applies exactly once an entry that was logged and committed but not applied before the crash', async () => {
    const store = new CrashingLogStore(await WalLogStore.open(join(dir, 'wal')));
    const first = await open(store);
    await waitFor(() => first.isLeader, 'leadership');
    expect(await first.propose(increment(0))).toBe(true);

    store.crash = 'after-write';
    await expect(first.propose(increment(1))).rejects.toThrow(/simulated crash/);
    expect((await first.get('counter'))?.toString()).toBe('1');
    await first.close();

    const second = await open();
    await waitFor(async () => (await second.get('counter'))?.toString() === '2', 'the logged increment to apply on restart');
    expect(await second.propose(increment(2))).toBe(true);
    expect((await second.get('counter'))?.toString()).toBe('3');
    expect([...applications.values()]).toEqual([1, 1, 1]);
    await second.close();
  });
});
