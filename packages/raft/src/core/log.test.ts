import { RaftLog } from './log';
import type { Entry } from './types';

const ent = (index: number, term: number, data = ''): Entry => ({ index, term, type: 'normal', data: new TextEncoder().encode(data) });
const terms = (first: number, ts: number[]): Entry[] => ts.map((t, i) => ent(first + i, t));

describe('RaftLog', () => {
  test('answers terms across the snapshot boundary and refuses what it does not hold', () => {
    const log = new RaftLog(5, 2, terms(6, [2, 3, 3]), 7, 6);
    expect([log.term(4), log.term(5), log.term(6), log.term(8), log.term(9)]).toEqual([undefined, 2, 2, 3, undefined]);
    expect([log.firstIndex(), log.lastIndex(), log.lastTerm()]).toEqual([6, 8, 3]);
    expect([log.applied, log.committed, log.stabled]).toEqual([6, 7, 8]);
    expect(() => new RaftLog(5, 2, terms(7, [2]), 0, 0)).toThrow(/contiguous/);
  });

  test('slice honours the entry and byte limits but always returns at least one entry', () => {
    const log = new RaftLog(0, 0, [ent(1, 1, 'aaaa'), ent(2, 1, 'bbbb'), ent(3, 1, 'cccc')], 0, 0);
    expect(log.slice(1, 2).map((e) => e.index)).toEqual([1, 2]);
    expect(log.slice(1, 10, 8).map((e) => e.index)).toEqual([1, 2]);
    expect(log.slice(2, 10, 1).map((e) => e.index)).toEqual([2]);
    expect(log.slice(4)).toEqual([]);
    expect(() => new RaftLog(2, 1, [], 2, 2).slice(2)).toThrow(RangeError);
  });

  test('findConflict finds the first index whose term differs or that is missing', () => {
    const log = new RaftLog(0, 0, terms(1, [1, 1, 2]), 0, 0);
    expect(log.findConflict(terms(1, [1, 1, 2]))).toBe(0);
    expect(log.findConflict(terms(2, [1, 2, 2]))).toBe(4);
    expect(log.findConflict(terms(2, [1, 3]))).toBe(3);
  });

  test('truncateAndAppend replaces the suffix and pulls the stable cursor back', () => {
    const log = new RaftLog(0, 0, terms(1, [1, 1, 2, 2]), 1, 1);
    log.truncateAndAppend(terms(2, [1, 3, 3, 3]), 3);
    expect(Array.from({ length: 5 }, (_, i) => log.term(i + 1))).toEqual([1, 1, 3, 3, 3]);
    expect(log.stabled).toBe(2);
    expect(log.unstable().map((e) => e.index)).toEqual([3, 4, 5]);
    log.stableTo(5, 2); // a Ready for entries that were since rewritten: ignored
    expect(log.stabled).toBe(2);
    log.stableTo(5, 3);
    expect(log.hasUnstable()).toBe(false);
  });

  test('findConflictByTerm skips every entry of a higher term in one step', () => {
    const log = new RaftLog(2, 1, terms(3, [1, 2, 2, 2, 4, 4]), 2, 2);
    expect(log.findConflictByTerm(8, 3)).toBe(6);
    expect(log.findConflictByTerm(8, 1)).toBe(3);
    expect(log.findConflictByTerm(8, 0)).toBe(2); // never below the snapshot
    expect(log.findConflictByTerm(100, 4)).toBe(8);
  });

  test('isUpToDate compares last term first, then length', () => {
    const log = new RaftLog(0, 0, terms(1, [1, 2, 2]), 0, 0);
    expect(log.isUpToDate(1, 3)).toBe(true);
    expect(log.isUpToDate(3, 2)).toBe(true);
    expect(log.isUpToDate(2, 2)).toBe(false);
    expect(log.isUpToDate(9, 1)).toBe(false);
  });

  test('compact drops applied entries; restore replaces the whole log', () => {
    const log = new RaftLog(0, 0, terms(1, [1, 1, 2, 2]), 3, 3);
    expect(() => log.compact(4)).toThrow(RangeError);
    log.compact(3);
    expect([log.firstIndex(), log.term(3), log.term(2), log.lastIndex()]).toEqual([4, 2, undefined, 4]);
    log.restore(10, 5);
    expect([log.firstIndex(), log.lastIndex(), log.lastTerm(), log.committed, log.applied, log.stabled]).toEqual([11, 10, 5, 10, 10, 10]);
  });

  test('nextCommitted hands out (applied, committed]', () => {
    const log = new RaftLog(0, 0, terms(1, [1, 1, 1, 1]), 0, 0);
    log.commitTo(3);
    expect(log.nextCommitted().map((e) => e.index)).toEqual([1, 2, 3]);
    log.applied = 3;
    expect(log.hasNextCommitted()).toBe(false);
    expect(log.commitTo(99)).toBe(true);
    expect(log.committed).toBe(4);
  });

  test('nextCommitted stops at stabled: an entry committed before we persisted it waits for our write', () => {
    const log = new RaftLog(0, 0, terms(1, [1, 1]), 0, 0);
    log.append(ent(3, 1));
    log.commitTo(3);
    expect(log.nextCommitted().map((e) => e.index)).toEqual([1, 2]);
    log.applied = 2;
    expect(log.hasNextCommitted()).toBe(false);
    log.stableTo(3, 1);
    expect(log.nextCommitted().map((e) => e.index)).toEqual([3]);
  });
});
