import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Clock } from '@strongroom/base';
import { MemoryNetwork } from './memory-transport';
import { RaftNode } from './raft-node';

/**
 * The leader's lease counts ticks. If the process stalls (GC, a paused VM), its ticks stop while
 * the other members' clocks go on, and one of them may be elected meanwhile: the lease is also
 * measured in time, from when the heartbeats a quorum answered were sent.
 */
describe('a leader whose process stalled', () => {
  let dir: string;
  let node: RaftNode | undefined;
  afterEach(async () => {
    await node?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('takes a read-index round instead of its lease, until heartbeats sent after the stall renew it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'strongroom-stall-'));
    let skew = 0;
    // Real timers, and a wall clock the test can move ahead as a stall would.
    const clock: Clock = {
      now: () => Date.now() + skew,
      setTimer: (ms, fn) => {
        const t = setTimeout(fn, ms);
        return { cancel: () => clearTimeout(t) };
      },
    };
    const tickMs = 50;
    node = await RaftNode.open({
      id: 'solo', dataDir: dir, transport: new MemoryNetwork().transport('solo'), bootstrap: { voters: ['solo'], learners: [] },
      clock, tickMs, electionTicks: 10, heartbeatTicks: 1,
    });
    node.campaign();
    const deadline = Date.now() + 10_000;
    const leaseHolds = () => node!.leaderReadBarrier() === null;
    while (!leaseHolds() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(leaseHolds()).toBe(true);

    skew += 50 * tickMs; // the process "stalled": the heartbeats the lease rests on were sent long ago
    const barrier = node.leaderReadBarrier();
    expect(barrier).not.toBeNull();
    await barrier; // a read-index round still works for a leader that still leads
    // Ticks after the stall send heartbeats anew, and the lease comes back on them.
    const trusted = Date.now() + 10_000;
    while (!leaseHolds() && Date.now() < trusted) await new Promise((r) => setTimeout(r, 5));
    expect(leaseHolds()).toBe(true);
  });
});
