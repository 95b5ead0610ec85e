import { applyConfChange, confChangeProblem, decodeConfChange, encodeConfChange } from './conf-change';
import type { ConfChange } from './types';

describe('conf changes', () => {
  test('round-trip through the binary encoding, with and without context', () => {
    const changes: ConfChange[] = [
      { type: 'addLearner', node: 'n4', context: new Uint8Array([1, 2, 3]) },
      { type: 'promote', node: 'nœud-β' },
      { type: 'remove', node: 'n1', context: new Uint8Array(0) },
    ];
    for (const cc of changes) expect(decodeConfChange(encodeConfChange(cc))).toEqual(cc);
  });

  test('decoding refuses bytes it did not produce', () => {
    const good = encodeConfChange({ type: 'remove', node: 'n1' });
    expect(() => decodeConfChange(new Uint8Array([9, 1, 0, 0, 0, 0, 0]))).toThrow();
    expect(() => decodeConfChange(good.slice(0, 5))).toThrow();
    expect(() => decodeConfChange(new Uint8Array([...good, 7]))).toThrow();
    const badType = good.slice();
    badType[1] = 9;
    expect(() => decodeConfChange(badType)).toThrow();
  });

  test('validation: no duplicates, only learners are promoted, the last voter stays', () => {
    const conf = { voters: ['a', 'b'], learners: ['c'] };
    expect(confChangeProblem(conf, { type: 'addLearner', node: 'a' })).toMatch(/already a member/);
    expect(confChangeProblem(conf, { type: 'addLearner', node: 'c' })).toMatch(/already a member/);
    expect(confChangeProblem(conf, { type: 'promote', node: 'a' })).toMatch(/not a learner/);
    expect(confChangeProblem(conf, { type: 'remove', node: 'z' })).toMatch(/not a member/);
    expect(confChangeProblem({ voters: ['a'], learners: [] }, { type: 'remove', node: 'a' })).toMatch(/last voter/);
    expect(confChangeProblem(conf, { type: 'remove', node: 'a' })).toBeNull();
  });

  test('apply returns a new membership and leaves the old one alone', () => {
    const conf = { voters: ['a', 'b'], learners: ['c'] };
    expect(applyConfChange(conf, { type: 'promote', node: 'c' })).toEqual({ voters: ['a', 'b', 'c'], learners: [] });
    expect(applyConfChange(conf, { type: 'addLearner', node: 'd' })).toEqual({ voters: ['a', 'b'], learners: ['c', 'd'] });
    expect(applyConfChange(conf, { type: 'remove', node: 'a' })).toEqual({ voters: ['b'], learners: ['c'] });
    expect(conf).toEqual({ voters: ['a', 'b'], learners: ['c'] });
  });
});
