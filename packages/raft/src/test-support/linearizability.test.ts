import {
  acknowledgedWritesPresent,
  checkLinearizability,
  HistoryRecorder,
  type LinearizabilityResult,
  type Operation,
} from './linearizability';
import { seededRandom, type Random } from './seeded-random';

/** `[invoke, complete]`; complete null = outcome unknown. */
type Span = [number, number | null];

const write = (key: string, value: string, [invoke, complete]: Span, client = 'c'): Operation => ({
  client, kind: 'write', key, value, invoke, complete, ok: true,
});
const del = (key: string, [invoke, complete]: Span, client = 'c'): Operation => ({
  client, kind: 'delete', key, invoke, complete, ok: true,
});
const read = (key: string, result: string | null, [invoke, complete]: Span, client = 'c'): Operation => ({
  client, kind: 'read', key, result, invoke, complete, ok: true,
});
const cas = (
  key: string, expected: string | null, value: string, swapped: boolean, [invoke, complete]: Span, client = 'c',
): Operation => ({ client, kind: 'cas', key, expected, value, result: swapped, invoke, complete, ok: true });
const failed = (op: Operation): Operation => ({ ...op, ok: false });

function failure(result: LinearizabilityResult) {
  if (result.ok !== false) throw new Error(`expected a violation, got ${JSON.stringify(result)}`);
  return result;
}

describe('checkLinearizability on hand-written histories', () => {
  it('accepts the empty history and a sequential one', () => {
    expect(checkLinearizability([])).toEqual({ ok: true });
    expect(checkLinearizability([
      read('k', null, [0, 1]),
      write('k', 'a', [2, 3]),
      read('k', 'a', [4, 5]),
      del('k', [6, 7]),
      read('k', null, [8, 9]),
    ])).toEqual({ ok: true });
  });

  it('rejects a stale read after a completed write, and names the three operations involved', () => {
    const history = [
      write('k', 'a', [0, 1], 'c1'),
      read('k', 'a', [1.5, 1.8], 'c3'),
      write('k', 'b', [2, 3], 'c2'),
      read('k', 'a', [4, 5], 'c3'),
    ];
    const result = failure(checkLinearizability(history));
    expect(result.key).toBe('k');
    expect(result.operations).toEqual([history[0], history[2], history[3]]);
    expect(result.explanation).toContain('key "k" is not linearizable');
    expect(result.explanation).toContain('#0 c1: write "a", invoked t=0, completed t=1');
    expect(result.explanation).toContain('#3 c3: read → "a", invoked t=4, completed t=5');
    expect(result.explanation).not.toContain('#1 ');
  });

  it('rejects a read of a value never written, blaming that read alone', () => {
    const history = [write('k', 'a', [0, 1]), read('k', 'a', [2, 3]), read('k', 'zzz', [4, 5])];
    expect(failure(checkLinearizability(history)).operations).toEqual([history[2]]);
  });

  it('rejects a lost write: an acknowledged write that later reads no longer see', () => {
    const history = [write('k', 'a', [0, 1]), read('k', 'a', [2, 3]), read('k', null, [4, 5])];
    expect(failure(checkLinearizability(history)).operations).toEqual([history[0], history[2]]);
  });

  it('accepts reads that see concurrent writes in either order while both are running', () => {
    const writes = [write('k', 'a', [0, 10], 'w1'), write('k', 'b', [0, 10], 'w2')];
    expect(checkLinearizability([...writes, read('k', 'a', [1, 2]), read('k', 'b', [3, 4])])).toEqual({ ok: true });
    expect(checkLinearizability([...writes, read('k', 'b', [1, 2]), read('k', 'a', [3, 4])])).toEqual({ ok: true });
    // Once both have completed the order is fixed: seeing it change afterwards is a violation.
    expect(failure(checkLinearizability([...writes, read('k', 'a', [11, 12]), read('k', 'b', [13, 14])])).key).toBe('k');
  });

  it('treats equal timestamps as concurrent rather than ordered', () => {
    expect(checkLinearizability([read('k', 'a', [0, 5]), write('k', 'a', [5, 6])])).toEqual({ ok: true });
  });

  it('lets an unknown-outcome write take effect at any point after its invocation, or never', () => {
    expect(checkLinearizability([write('k', 'x', [0, null]), read('k', 'x', [50, 51])])).toEqual({ ok: true });
    expect(checkLinearizability([write('k', 'x', [0, null]), read('k', null, [50, 51])])).toEqual({ ok: true });
    expect(checkLinearizability([
      write('k', 'x', [0, null]), read('k', null, [50, 51]), read('k', 'x', [52, 53]),
    ])).toEqual({ ok: true });
    // Once seen, it has taken effect and cannot be undone.
    expect(failure(checkLinearizability([
      write('k', 'x', [0, null]), read('k', 'x', [50, 51]), read('k', null, [52, 53]),
    ])).operations).toHaveLength(3);
    // It cannot have taken effect before it was invoked.
    expect(failure(checkLinearizability([read('k', 'x', [0, 1]), write('k', 'x', [2, null])])).key).toBe('k');
  });

  it('ignores definitely failed operations entirely', () => {
    expect(failure(checkLinearizability([failed(write('k', 'x', [0, 1])), read('k', 'x', [2, 3])])).key).toBe('k');
    expect(checkLinearizability([
      write('k', 'a', [0, 1]), failed(write('k', 'x', [2, 3])), failed(read('k', 'nonsense', [2, 3])), read('k', 'a', [4, 5]),
    ])).toEqual({ ok: true });
  });

  it('models cas: swaps only from the expected value, refuses otherwise', () => {
    expect(checkLinearizability([
      cas('k', null, 'a', true, [0, 1]),
      cas('k', null, 'b', false, [2, 3]),
      cas('k', 'a', 'c', true, [4, 5]),
      read('k', 'c', [6, 7]),
    ])).toEqual({ ok: true });
    // A refusal while the key held the expected value.
    expect(failure(checkLinearizability([write('k', 'a', [0, 1]), cas('k', 'a', 'b', false, [2, 3])])).key).toBe('k');
    // A swap from a value the key did not hold.
    expect(failure(checkLinearizability([write('k', 'a', [0, 1]), cas('k', 'z', 'b', true, [2, 3])])).key).toBe('k');
    // Two concurrent swaps from the same value: only one can win.
    expect(failure(checkLinearizability([
      write('k', 'a', [0, 1]), cas('k', 'a', 'b', true, [2, 5], 'x'), cas('k', 'a', 'c', true, [2, 5], 'y'),
    ])).key).toBe('k');
    expect(checkLinearizability([
      write('k', 'a', [0, 1]), cas('k', 'a', 'b', true, [2, 5], 'x'), cas('k', 'a', 'c', false, [2, 5], 'y'), read('k', 'b', [6, 7]),
    ])).toEqual({ ok: true });
  });

  it('lets an unknown-outcome cas swap only where its expected value held', () => {
    const start = write('k', 'a', [0, 1]);
    expect(checkLinearizability([start, cas('k', 'a', 'b', true, [2, null]), read('k', 'b', [5, 6])])).toEqual({ ok: true });
    expect(failure(checkLinearizability([start, cas('k', 'z', 'b', true, [2, null]), read('k', 'b', [5, 6])])).key).toBe('k');
  });

  it('checks keys independently and names the broken one', () => {
    const result = failure(checkLinearizability([
      write('a', '1', [0, 1]), write('b', '1', [0, 1]), read('a', '1', [2, 3]), read('b', null, [2, 3]),
    ]));
    expect(result.key).toBe('b');
  });

  it('gives up with "unknown" when the step budget runs out, but still reports a definite violation elsewhere', () => {
    const busy = Array.from({ length: 40 }, (_, i) => write('busy', `v${i}`, [0, 100], `c${i}`));
    const unknown = checkLinearizability([...busy, read('busy', 'v7', [101, 102])], { stepBudget: 10 });
    expect(unknown).toEqual({ ok: 'unknown', key: 'busy', explanation: expect.stringContaining('gave up after 10') });
    const broken = checkLinearizability([...busy, read('broken', 'x', [0, 1])], { stepBudget: 10 });
    expect(broken.ok === false && broken.key).toBe('broken');
  });

  it('still proves a violation from a short run when the full search runs out of budget', () => {
    // Thirty concurrent writes, of which the read demands w7 be last: exhausting the orders is
    // hopeless, but the stale read afterwards fails on its own.
    const busy = Array.from({ length: 30 }, (_, i) => write('k', `v${i}`, [0, 100], `c${i}`));
    const stale = [write('k', 'a', [200, 201]), write('k', 'b', [202, 203]), read('k', 'a', [204, 205])];
    const history = [...busy, read('k', 'v7', [101, 102]), ...stale];
    const result = failure(checkLinearizability(history, { stepBudget: 20_000 }));
    expect(result.operations).toEqual(stale);
    expect(checkLinearizability(history.slice(0, -1), { stepBudget: 20_000 }).ok).toBe('unknown');
  });

  it('refuses malformed operations, which are bugs in the recording test', () => {
    expect(() => checkLinearizability([{ ...write('k', 'a', [0, 1]), value: undefined }])).toThrow('needs a string value');
    expect(() => checkLinearizability([{ ...read('k', null, [0, 1]), result: undefined }])).toThrow('completed read');
    expect(() => checkLinearizability([{ ...cas('k', 'a', 'b', true, [0, 1]), result: 'b' }])).toThrow('boolean result');
    expect(() => checkLinearizability([write('k', 'a', [2, 1])])).toThrow('completes before it is invoked');
  });
});

describe('acknowledgedWritesPresent', () => {
  const state = (entries: Record<string, string | null>) => new Map(Object.entries(entries));

  it('accepts a final value from the last write or from any write that may have followed it', () => {
    const history = [
      write('a', '1', [0, 1]), write('a', '2', [2, 3]),
      write('b', '1', [0, 10]), write('b', '2', [1, 2]), // concurrent: either may win
      write('c', '1', [0, 1]), write('c', '2', [2, null]), // a later write with unknown outcome
      write('d', '1', [0, 1]), del('d', [2, 3]),
      read('e', null, [0, 1]), // never written: needs no final entry
    ];
    expect(acknowledgedWritesPresent(history, state({ a: '2', b: '1', c: '2', d: null }))).toEqual({ ok: true });
    expect(acknowledgedWritesPresent(history, state({ a: '2', b: '2', c: '1', d: null }))).toEqual({ ok: true });
  });

  it('reports an acknowledged write that was lost or rolled back', () => {
    const history = [write('a', '1', [0, 1], 'c1'), write('a', '2', [2, 3], 'c2'), write('b', '1', [0, 1], 'c1')];
    const result = acknowledgedWritesPresent(history, state({ a: '1', b: null }));
    expect(result.ok).toBe(false);
    const explanation = result.ok === false ? result.explanation : '';
    expect(explanation).toContain('2 acknowledged write(s) missing');
    expect(explanation).toContain('#1 c2: write "2", invoked t=2, completed t=3: key ends as "1"');
    expect(explanation).toContain('#2 c1: write "1", invoked t=0, completed t=1: key ends as absent');
  });

  it('counts successful cas as writes and ignores refused or failed ones', () => {
    const history = [
      cas('a', null, '1', true, [0, 1]), cas('a', '9', '2', false, [2, 3]), failed(write('a', '3', [4, 5])),
    ];
    expect(acknowledgedWritesPresent(history, state({ a: '1' }))).toEqual({ ok: true });
    expect(acknowledgedWritesPresent(history, state({ a: null })).ok).toBe(false);
  });

  it('throws when the final state lacks a written key', () => {
    expect(() => acknowledgedWritesPresent([write('a', '1', [0, 1])], new Map())).toThrow('no entry for key "a"');
  });
});

describe('HistoryRecorder', () => {
  it('records invocations and outcomes with its clock; pending operations come out as unknown', () => {
    let now = 0;
    const recorder = new HistoryRecorder(() => now++);
    const w = recorder.invoke('c1', { kind: 'write', key: 'k', value: 'a' });
    const r = recorder.invoke('c2', { kind: 'read', key: 'k' });
    const c = recorder.invoke('c3', { kind: 'cas', key: 'k', expected: 'a', value: 'b' });
    const lost = recorder.invoke('c4', { kind: 'delete', key: 'k' });
    recorder.invoke('c5', { kind: 'write', key: 'k', value: 'pending' });
    recorder.ok(w);
    recorder.ok(r, null);
    recorder.fail(c);
    recorder.unknown(lost);
    expect(recorder.history()).toEqual([
      { client: 'c1', kind: 'write', key: 'k', value: 'a', invoke: 0, complete: 5, ok: true },
      { client: 'c2', kind: 'read', key: 'k', invoke: 1, complete: 6, ok: true, result: null },
      { client: 'c3', kind: 'cas', key: 'k', expected: 'a', value: 'b', invoke: 2, complete: 7, ok: false },
      { client: 'c4', kind: 'delete', key: 'k', invoke: 3, complete: null, ok: true },
      { client: 'c5', kind: 'write', key: 'k', value: 'pending', invoke: 4, complete: null, ok: true },
    ]);
    expect(checkLinearizability(recorder.history())).toEqual({ ok: true });
  });

  it('refuses to resolve an operation twice or one it never saw', () => {
    const recorder = new HistoryRecorder();
    const id = recorder.invoke('c', { kind: 'read', key: 'k' });
    recorder.ok(id, 'x');
    expect(() => recorder.unknown(id)).toThrow('already resolved');
    expect(() => recorder.fail(99)).toThrow('no operation 99');
  });

  it('uses a monotonic clock by default', () => {
    const recorder = new HistoryRecorder();
    const ids = Array.from({ length: 100 }, () => recorder.invoke('c', { kind: 'read', key: 'k' }));
    ids.forEach((id) => recorder.ok(id, null));
    const times = recorder.history().flatMap((op) => [op.invoke]);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(recorder.history().every((op) => op.complete !== null && op.complete >= op.invoke)).toBe(true);
  });
});

interface Simulation {
  seed: number;
  operations: number;
  keys: number;
  clients: number;
  /** Share of operations whose outcome the client never learns (half of those still take effect). */
  unknownRate?: number;
  /** Share of operations that definitely fail without effect. */
  failRate?: number;
}

/**
 * Runs random clients against a correct single-copy register: each operation takes effect at a
 * random instant between its invocation and completion, so the history is linearizable by
 * construction. Values are unique, as in the chaos test.
 */
function simulate({ seed, operations, keys, clients, unknownRate = 0, failRate = 0 }: Simulation): Operation[] {
  const random = seededRandom(seed);
  const keyNames = Array.from({ length: keys }, (_, i) => `key-${i}`);
  const written = new Map<string, string[]>();
  const planned: { op: Operation; effectAt: number; takesEffect: boolean }[] = [];
  const freeAt = new Array<number>(clients).fill(0);

  for (let n = 0; n < operations; n++) {
    const c = n % clients;
    const client = `c${c}`;
    const key = random.pick(keyNames);
    const invoke = (freeAt[c] as number) + random.next() * 2;
    const effectAt = invoke + random.next() * 10;
    const complete = effectAt + random.next() * 10;
    freeAt[c] = complete;
    const dice = random.next();
    const recent = written.get(key) ?? [];
    const op: Operation =
      dice < 0.35 ? write(key, `${client}-${n}`, [invoke, complete], client)
        : dice < 0.75 ? read(key, null, [invoke, complete], client)
          : dice < 0.8 ? del(key, [invoke, complete], client)
            : cas(key, random.next() < 0.2 ? null : random.pick([...recent.slice(-3), 'nope']), `${client}-${n}`, false, [invoke, complete], client);
    if (op.value !== undefined) written.set(key, [...recent, op.value]);

    const fate = random.next();
    if (fate < failRate) {
      op.ok = false;
      planned.push({ op, effectAt, takesEffect: false });
    } else if (fate < failRate + unknownRate) {
      op.complete = null;
      delete op.result;
      planned.push({ op, effectAt, takesEffect: random.next() < 0.5 });
    } else {
      planned.push({ op, effectAt, takesEffect: true });
    }
  }

  const register = new Map<string, string | null>();
  for (const { op, takesEffect } of [...planned].sort((a, b) => a.effectAt - b.effectAt)) {
    if (!takesEffect) continue;
    const current = register.get(op.key) ?? null;
    const known = op.complete !== null;
    if (op.kind === 'write') register.set(op.key, op.value as string);
    if (op.kind === 'delete') register.set(op.key, null);
    if (op.kind === 'read' && known) op.result = current;
    if (op.kind === 'cas') {
      const swapped = current === op.expected;
      if (swapped) register.set(op.key, op.value as string);
      if (known) op.result = swapped;
    }
  }
  return planned.map(({ op }) => op).sort((a, b) => a.invoke - b.invoke);
}

/**
 * Makes one completed read return a value that was certainly overwritten before it began:
 * written by a write that completed before another write, which completed before the read.
 * Returns the corrupted read, or undefined if the history has no such triple.
 */
function corruptOneRead(history: Operation[], random: Random): Operation | undefined {
  const known = (op: Operation) => op.ok && op.complete !== null;
  const writes = history.filter((op) => op.kind === 'write' && known(op));
  const candidates = history.flatMap((r) => {
    if (r.kind !== 'read' || !known(r)) return [];
    const stale = writes.find((w1) =>
      w1.key === r.key && w1.value !== r.result &&
      writes.some((w2) => w2.key === r.key && (w1.complete as number) < w2.invoke && (w2.complete as number) < r.invoke));
    return stale === undefined ? [] : [{ r, stale }];
  });
  if (candidates.length === 0) return undefined;
  const { r, stale } = random.pick(candidates);
  r.result = stale.value;
  return r;
}

/**
 * The definition, executed literally: try every order of every subset that includes all
 * completed operations. Exponential, so only for a handful of operations.
 */
function linearizableByEnumeration(history: readonly Operation[]): boolean {
  const ops = history.filter((op) => op.ok && !(op.kind === 'read' && op.complete === null));
  const placed = ops.map(() => false);
  const register = new Map<string, string | null>();
  const mustPrecede = (p: Operation, o: Operation) => p.complete !== null && p.complete < o.invoke;
  const extend = (): boolean => {
    if (ops.every((op, i) => placed[i] || op.complete === null)) return true;
    return ops.some((op, i) => {
      if (placed[i] || ops.some((other, j) => !placed[j] && j !== i && mustPrecede(other, op))) return false;
      const current = register.get(op.key) ?? null;
      let after = current;
      if (op.kind === 'write') after = op.value as string;
      if (op.kind === 'delete') after = null;
      if (op.kind === 'read' && op.result !== current) return false;
      if (op.kind === 'cas') {
        const swaps = op.complete === null || op.result === true;
        if (swaps !== (current === op.expected)) return false;
        if (swaps) after = op.value as string;
      }
      placed[i] = true;
      register.set(op.key, after);
      if (extend()) return true;
      placed[i] = false;
      register.set(op.key, current);
      return false;
    });
  };
  return extend();
}

describe('checkLinearizability against the definition', () => {
  it('agrees with enumeration on thousands of small random histories, and its cores fail on their own', () => {
    let violations = 0;
    for (let seed = 0; seed < 4000; seed++) {
      const random = seededRandom(seed);
      const values = ['a', 'b', 'c'];
      const history = Array.from({ length: 1 + random.int(7) }, (_, i): Operation => {
        const invoke = random.int(10);
        const span: Span = [invoke, random.next() < 0.2 ? null : invoke + random.int(6)];
        const key = random.next() < 0.8 ? 'k' : 'j';
        const maybe = random.next() < 0.3 ? null : random.pick(values);
        const kind = random.int(10);
        const op = kind < 4 ? write(key, random.pick(values), span, `c${i}`)
          : kind < 7 ? read(key, maybe, span, `c${i}`)
            : kind < 8 ? del(key, span, `c${i}`)
              : cas(key, maybe, random.pick(values), random.next() < 0.5, span, `c${i}`);
        return random.next() < 0.05 ? failed(op) : op;
      });
      const result = checkLinearizability(history);
      expect({ seed, ok: result.ok }).toEqual({ seed, ok: linearizableByEnumeration(history) });
      if (result.ok === false) {
        violations++;
        expect({ seed, core: linearizableByEnumeration(result.operations) }).toEqual({ seed, core: false });
      }
    }
    // Both answers are well represented, so agreement means something.
    expect(violations).toBeGreaterThan(1000);
    expect(violations).toBeLessThan(3000);
  });
});

describe('checkLinearizability on generated histories', () => {
  it('accepts correct registers under heavy contention and rejects each with one stale read', () => {
    for (let seed = 1; seed <= 25; seed++) {
      const history = simulate({ seed, operations: 300, keys: 3, clients: 8, unknownRate: 0.05, failRate: 0.05 });
      expect({ seed, result: checkLinearizability(history) }).toEqual({ seed, result: { ok: true } });
      // Starved budgets push it onto the short-run proofs, which must never accuse a correct history.
      for (const stepBudget of [100, 400, 1600]) {
        expect({ seed, stepBudget, ok: checkLinearizability(history, { stepBudget }).ok }).not.toEqual({ seed, stepBudget, ok: false });
      }

      const corrupted = corruptOneRead(history, seededRandom(seed));
      if (corrupted === undefined) throw new Error(`seed ${seed} offers nothing to corrupt`);
      const result = failure(checkLinearizability(history));
      expect(result.key).toBe(corrupted.key);
      // The core is a proof on its own (by the definition, not by the checker again), and the
      // lie is necessarily part of it.
      expect(result.operations).toContain(corrupted);
      expect(result.operations.length).toBeLessThanOrEqual(8);
      expect(linearizableByEnumeration(result.operations)).toBe(false);
      expect(checkLinearizability(history.filter((op) => op !== corrupted))).toEqual({ ok: true });
    }
  });

  it('checks a 5,000-operation history over 20 keys with 16 clients, correct and corrupted', () => {
    const history = simulate({ seed: 42, operations: 5000, keys: 20, clients: 16, unknownRate: 0.02, failRate: 0.02 });
    expect(checkLinearizability(history, { stepBudget: 200_000 })).toEqual({ ok: true });

    const corrupted = corruptOneRead(history, seededRandom(42));
    const result = failure(checkLinearizability(history, { stepBudget: 200_000 }));
    expect(result.operations).toContain(corrupted);
    expect(result.operations.length).toBeLessThan(10);
  });
});
