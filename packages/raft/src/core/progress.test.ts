import { PeerProgress } from './progress';
import { hasQuorum, majorityIndex, quorumValue, voteResult } from './quorum';
import { ReadOnlyQueue } from './read-only';

describe('PeerProgress', () => {
  test('probe sends one append at a time until an answer arrives', () => {
    const pr = new PeerProgress(11, false, 4);
    expect(pr.isPaused()).toBe(false);
    pr.sentAppend(12);
    expect(pr.isPaused()).toBe(true);
    expect(pr.next).toBe(11); // probing does not move next optimistically
    expect(pr.maybeUpdate(12)).toBe(true);
    expect(pr.isPaused()).toBe(false);
  });

  test('replicate streams up to maxInflight appends and frees slots as answers arrive', () => {
    const pr = new PeerProgress(1, false, 2);
    pr.becomeReplicate();
    pr.sentAppend(3);
    pr.sentAppend(5);
    expect([pr.isPaused(), pr.next]).toEqual([true, 6]);
    pr.maybeUpdate(3);
    pr.freeInflightsTo(3);
    expect(pr.isPaused()).toBe(false);
    pr.sentAppend(7);
    pr.freeFirstInflight();
    expect(pr.inflightFull()).toBe(false);
  });

  test('a rejection is ignored when stale, and otherwise moves next back to the hint', () => {
    const pr = new PeerProgress(11, false, 4);
    expect(pr.maybeDecrTo(5, 3)).toBe(false); // answers an append we did not just send
    expect(pr.maybeDecrTo(10, 3)).toBe(true);
    expect(pr.next).toBe(4);
    pr.maybeUpdate(6);
    pr.becomeReplicate();
    expect(pr.maybeDecrTo(6, 0)).toBe(false); // at or below match: stale
    expect(pr.maybeDecrTo(9, 0)).toBe(true);
    expect(pr.next).toBe(7);
  });

  test('snapshot pauses everything; leaving it starts after the snapshot', () => {
    const pr = new PeerProgress(3, true, 4);
    pr.becomeSnapshot(50);
    expect(pr.isPaused()).toBe(true);
    pr.becomeProbe();
    expect([pr.state, pr.next]).toEqual(['probe', 51]);
    expect(pr.toStatus()).toEqual({ match: 0, next: 51, state: 'probe', ticksSinceContact: 0, answered: false, learner: true });
  });
});

describe('quorum', () => {
  test('majorityIndex is the highest index a majority holds', () => {
    const match: Record<string, number> = { a: 9, b: 5, c: 7, d: 1, e: 7 };
    expect(majorityIndex(['a', 'b', 'c', 'd', 'e'], (id) => match[id]!)).toBe(7);
    expect(majorityIndex(['a', 'b'], (id) => match[id]!)).toBe(5);
    expect(majorityIndex([], () => 1)).toBe(0);
  });

  test('quorumValue is the quorum-th largest value, ties and -Infinity included, for every size of voter set', () => {
    const sorted = (values: number[]) => [...values].sort((a, b) => b - a)[Math.floor(values.length / 2)];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % 6;
    for (let n = 1; n <= 7; n++) {
      for (let round = 0; round < 200; round++) {
        const values = Array.from({ length: n }, () => (next() === 0 ? -Infinity : next()));
        const voters = values.map((_, i) => `v${i}`);
        expect(quorumValue(voters, (id) => values[Number(id.slice(1))] as number)).toBe(sorted(values));
      }
    }
    expect(quorumValue([], () => 1)).toBeUndefined();
  });

  test('voteResult decides as soon as the outcome is certain and ignores non-voters', () => {
    const voters = ['a', 'b', 'c'];
    expect(voteResult(voters, new Map([['a', true]]))).toBe('pending');
    expect(voteResult(voters, new Map([['a', true], ['x', true]]))).toBe('pending');
    expect(voteResult(voters, new Map([['a', true], ['b', true]]))).toBe('won');
    expect(voteResult(voters, new Map([['a', true], ['b', false], ['c', false]]))).toBe('lost');
    expect(hasQuorum(voters, (id) => id !== 'c')).toBe(true);
    expect(hasQuorum([], () => true)).toBe(false);
  });
});

describe('ReadOnlyQueue', () => {
  test('releasing a read releases every read queued before it', () => {
    const q = new ReadOnlyQueue();
    expect(q.add('r1', 5, 'self')).toBe(true);
    expect(q.add('r2', 6, 'self')).toBe(true);
    expect(q.add('r1', 7, 'self')).toBe(false);
    expect(q.lastContext()).toBe('r2');
    expect(q.ack('r2', 'b')?.acks).toEqual(new Set(['self', 'b']));
    expect(q.releaseThrough('r2').map((r) => [r.context, r.index])).toEqual([
      ['r1', 5],
      ['r2', 6],
    ]);
    expect(q.lastContext()).toBeUndefined();
    expect(q.ack('r1', 'b')).toBeUndefined();
  });
});
