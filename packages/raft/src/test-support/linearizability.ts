/**
 * Linearizability checking for histories recorded against Strongroom's key/value API, for chaos
 * tests that kill and partition nodes while clients keep working.
 *
 * The model is one register per key, initially absent. A history is linearizable when every
 * operation can be given a single instant between its invocation and its completion such that,
 * taken in the order of those instants, the operations behave like that register. Because each
 * key is an independent register, linearizability composes (Herlihy & Wing's locality, which
 * Porcupine calls P-compositionality): each key's sub-history is checked alone, which keeps the
 * search small.
 *
 * The search is Wing & Gong's, with Lowe's memoisation: depth-first over "which pending operation
 * takes effect next", remembering every (set of operations already placed, register value) pair
 * already explored so that no configuration is explored twice. Operations leave and re-enter the
 * candidate lists in stack order, so removal and restoration are O(1) (dancing links). Beyond
 * the papers, it uses what a register allows: reads never need branching, and unknown-outcome
 * writes are either pinned down by the reads that saw them or tried only where a read could
 * see them (see prepare and search). Failures are shrunk to a few operations that conflict on
 * their own, so the explanation is short enough to read.
 */

export type OperationKind = 'write' | 'read' | 'delete' | 'cas';

/** A register's value; null means the key is absent. */
export type RegisterValue = string | null;

/**
 * One operation as a client saw it.
 *
 * Outcomes: `ok: false` means it definitely failed and took no effect (it is ignored). Otherwise
 * `complete: null` means the outcome is unknown (timed out, or a process died): it may have taken
 * effect at any instant after `invoke`, or never. Otherwise it completed at `complete` with
 * `result`.
 */
export interface Operation {
  /** Who issued it; only shown in explanations. */
  client: string;
  kind: OperationKind;
  key: string;
  /** write: the value stored; cas: the value swapped in. */
  value?: string;
  /** cas: the value the key must hold for the swap to happen (null: the key must be absent). */
  expected?: string | null;
  /** read: the value seen (null: absent); cas: whether it swapped. Unused for write and delete. */
  result?: string | null | boolean;
  /** Times from one monotonic clock, in any unit (HistoryRecorder uses milliseconds). */
  invoke: number;
  complete: number | null;
  ok: boolean;
}

export type LinearizabilityResult =
  | { ok: true }
  /**
   * `operations` is a small sub-history that already fails on its own, reduced (budget
   * permitting) until dropping any one more of its reads, or of its writes that no read in it
   * saw, would make it pass.
   */
  | { ok: false; key: string; explanation: string; operations: Operation[] }
  /** The search ran out of budget on `key`; chaos tests should treat this as a failure. */
  | { ok: 'unknown'; key: string; explanation: string };

export interface CheckOptions {
  /**
   * How many model steps (one operation tried at one point) the search may take per key, and as
   * much again to find and shrink a failure. Default one million, about a second or two; the
   * memo grows with it (roughly 100 bytes a step). The search is exponential in the number of
   * operations in flight on one key at once: linearizable histories with up to about twelve
   * need a few steps per operation, beyond that a run may come back 'unknown', so chaos tests
   * should spread clients over more keys rather than raise the budget far.
   */
  stepBudget?: number;
}

const DEFAULT_STEP_BUDGET = 1_000_000;

/** Checks a whole history, key by key. A definite failure on any key wins over 'unknown' on another. */
export function checkLinearizability(
  history: readonly Operation[],
  options: CheckOptions = {},
): LinearizabilityResult {
  const stepBudget = options.stepBudget ?? DEFAULT_STEP_BUDGET;
  history.forEach(validate);

  let undecided: LinearizabilityResult | undefined;
  for (const [key, steps] of partitionByKey(history)) {
    const verdict = search(prepare(steps), { remaining: stepBudget });
    if (verdict === 'ok') continue;
    // A short failing run is a proof too, and far cheaper to find than exhausting a long
    // history, so it can still settle a key whose full search ran out of budget.
    const budget = { remaining: stepBudget };
    const failing = failingWindow(prune(steps), budget) ?? (verdict === 'fail' ? prune(steps) : undefined);
    if (failing !== undefined) {
      const cutAt = earliestFailure(failing, budget);
      const core = minimise(prune(cut(failing, cutAt)), budget);
      const operations = core.map((s) => history[s.source] as Operation);
      return { ok: false, key, operations, explanation: explain(key, core, history, cutAt, steps.length) };
    }
    undecided ??= {
      ok: 'unknown',
      key,
      explanation:
        `key ${JSON.stringify(key)}: gave up after ${stepBudget} search steps over ` +
        `${steps.length} operations; the history may or may not be linearizable ` +
        '(raise stepBudget, or record fewer concurrent operations per key)',
    };
  }
  return undecided ?? { ok: true };
}

/**
 * Checks that no acknowledged write was lost: for every write, delete or successful cas that
 * completed `ok`, the key's value in `finalState` (read after the run, once the cluster is quiet)
 * is either the value it stored or a value stored by an operation that could have taken effect
 * after it — any operation not definitely failed and not already complete when it was invoked.
 *
 * Exact when each written value is unique per key (chaos tests write unique values); with
 * repeated values it is lenient, never strict. `finalState` must hold every key the history
 * writes (null for absent): a missing key is a bug in the caller and throws.
 */
export function acknowledgedWritesPresent(
  history: readonly Operation[],
  finalState: ReadonlyMap<string, RegisterValue>,
): { ok: true } | { ok: false; explanation: string } {
  history.forEach(validate);
  const problems: string[] = [];
  for (const [key, steps] of partitionByKey(history)) {
    const acknowledged = steps.filter((s) => s.complete !== Infinity && produces(s) !== undefined);
    if (acknowledged.length === 0) continue;
    const final = finalState.get(key);
    if (final === undefined) throw new Error(`finalState has no entry for key ${JSON.stringify(key)}`);
    const sources = steps.filter((s) => produces(s) === final);
    for (const write of acknowledged) {
      const keptOrSuperseded = sources.some((s) => !(s.complete < write.invoke));
      if (!keptOrSuperseded) problems.push(`  ${describe(write, history)}: key ends as ${showValue(final)}`);
    }
  }
  if (problems.length === 0) return { ok: true };
  return {
    ok: false,
    explanation:
      `${problems.length} acknowledged write(s) missing from the final state ` +
      `(it holds neither their value nor one written after them):\n${problems.join('\n')}`,
  };
}

/**
 * Records a history as clients run. Call `invoke` just before sending a request and exactly one
 * of `ok`, `fail` or `unknown` when its outcome is known; operations still pending when
 * `history()` is called appear with an unknown outcome.
 */
export class HistoryRecorder {
  private readonly operations: Operation[] = [];
  private readonly resolved: boolean[] = [];
  private readonly now: () => number;

  /** `now` defaults to milliseconds from process.hrtime, which never goes backwards. */
  constructor(now?: () => number) {
    const origin = process.hrtime.bigint();
    this.now = now ?? (() => Number(process.hrtime.bigint() - origin) / 1e6);
  }

  invoke(client: string, op: Pick<Operation, 'kind' | 'key' | 'value' | 'expected'>): number {
    const id = this.operations.length;
    this.operations.push({ ...op, client, invoke: this.now(), complete: null, ok: true });
    this.resolved.push(false);
    return id;
  }

  /** Completed; `result` is the value read (null: absent) or whether a cas swapped. */
  ok(id: number, result?: string | null | boolean): void {
    const op = this.resolve(id);
    op.complete = this.now();
    if (result !== undefined) op.result = result;
  }

  /** Definitely failed without effect (e.g. refused before it reached the cluster). */
  fail(id: number): void {
    const op = this.resolve(id);
    op.complete = this.now();
    op.ok = false;
  }

  /** Timed out or lost with a process: it may or may not have taken effect. */
  unknown(id: number): void {
    this.resolve(id);
  }

  /** A copy, in invocation order; the recorder may keep recording. */
  history(): Operation[] {
    return this.operations.map((op) => ({ ...op }));
  }

  private resolve(id: number): Operation {
    const op = this.operations[id];
    if (op === undefined) throw new Error(`no operation ${id}`);
    // Resolving twice means the caller's bookkeeping is wrong, and the history would be too.
    if (this.resolved[id]) throw new Error(`operation ${id} already resolved`);
    this.resolved[id] = true;
    return op;
  }
}

/**
 * An operation normalised for the search. `complete` is Infinity when the outcome is unknown:
 * such an operation never forces anything to happen before it, and need not be placed at all.
 */
interface Step {
  /** Index in the caller's history. */
  source: number;
  kind: OperationKind;
  /** write, cas: the value stored; read: the value seen; delete: null. */
  value: RegisterValue;
  /** cas only. */
  expected: RegisterValue;
  /** cas only: it swapped. An unknown-outcome cas counts as swapping, since not swapping is the same as not being placed. */
  swapped: boolean;
  invoke: number;
  complete: number;
}

type Verdict = 'ok' | 'fail' | 'unknown';

interface Budget {
  remaining: number;
}

function validate(op: Operation, index: number): void {
  const bad = (why: string): never => {
    throw new Error(`history[${index}] (${op.kind} ${JSON.stringify(op.key)}): ${why}`);
  };
  if (op.complete !== null && op.complete < op.invoke) bad('completes before it is invoked');
  if ((op.kind === 'write' || op.kind === 'cas') && typeof op.value !== 'string') bad('needs a string value');
  if (op.kind === 'cas' && op.expected === undefined) bad('needs expected (null for absent)');
  if (!op.ok || op.complete === null) return;
  if (op.kind === 'read' && !(typeof op.result === 'string' || op.result === null)) bad('a completed read needs a string or null result');
  if (op.kind === 'cas' && typeof op.result !== 'boolean') bad('a completed cas needs a boolean result');
}

/** Groups operations by key, dropping definitely-failed ones and unknown-outcome reads, which constrain nothing. */
function partitionByKey(history: readonly Operation[]): Map<string, Step[]> {
  const byKey = new Map<string, Step[]>();
  history.forEach((op, source) => {
    if (!op.ok) return;
    const known = op.complete !== null;
    if (op.kind === 'read' && !known) return;
    const step: Step = {
      source,
      kind: op.kind,
      value: op.kind === 'read' ? (op.result as RegisterValue) : op.kind === 'delete' ? null : (op.value as string),
      expected: op.kind === 'cas' ? (op.expected as RegisterValue) : null,
      swapped: op.kind === 'cas' && (!known || op.result === true),
      invoke: op.invoke,
      complete: op.complete ?? Infinity,
    };
    let steps = byKey.get(op.key);
    if (steps === undefined) byKey.set(op.key, (steps = []));
    steps.push(step);
  });
  return byKey;
}

/** The register after `s` takes effect in `state`, or undefined when `s` cannot take effect there. */
function apply(s: Step, state: RegisterValue): RegisterValue | undefined {
  switch (s.kind) {
    case 'write':
    case 'delete':
      return s.value;
    case 'read':
      return s.value === state ? state : undefined;
    case 'cas':
      if (s.swapped) return state === s.expected ? s.value : undefined;
      return state !== s.expected ? state : undefined;
  }
}

/** The value `s` stores, or undefined for operations that store nothing. */
function produces(s: Step): RegisterValue | undefined {
  if (s.kind === 'write' || s.kind === 'delete' || (s.kind === 'cas' && s.swapped)) return s.value;
  return undefined;
}

/** Whether `s` can only take effect where the register holds `v` (a read, a swap) or lacks it (a refused cas). */
function dependsOn(s: Step, v: RegisterValue): boolean {
  if (s.kind === 'read') return s.value === v;
  if (s.kind === 'cas') return s.swapped ? s.expected === v : s.expected !== v;
  return false;
}

/** The value `s` can only take effect on: a read's, a swap's expected one. */
function needs(s: Step): RegisterValue | undefined {
  if (s.kind === 'read') return s.value;
  if (s.kind === 'cas' && s.swapped) return s.expected;
  return undefined;
}

/**
 * Which values the steps of one key depend on. A read of v and a swap from v need the register
 * to hold v; a refused cas from e needs it to hold anything but e.
 */
class Dependencies {
  /** Reads of v and swaps from v. */
  private readonly needing = new Map<RegisterValue, number>();
  private readonly refusingFrom = new Map<RegisterValue, number>();
  private refusals = 0;
  private readonly stores = new Map<RegisterValue, number>();
  /** The earliest completion of a known step that needs v. */
  private readonly firstNeed = new Map<RegisterValue, number>();

  constructor(steps: readonly Step[]) {
    for (const s of steps) {
      const stored = produces(s);
      if (stored !== undefined) increment(this.stores, stored);
      if (s.kind === 'cas' && !s.swapped) {
        this.refusals++;
        increment(this.refusingFrom, s.expected);
      }
      const needed = needs(s);
      if (needed === undefined) continue;
      increment(this.needing, needed);
      if (s.complete < (this.firstNeed.get(needed) ?? Infinity)) this.firstNeed.set(needed, s.complete);
    }
  }

  /**
   * Whether a step other than the store `p` depends on `p`'s value being there (see dependsOn).
   * If none does, removing `p` keeps a linearizable history linearizable: wherever `p` was
   * placed, the register held its value until the next store, and no step placed in that span
   * cared, so it can hold the previous value instead. For an unknown-outcome `p` the converse
   * holds too (it may be left out anyway), which licenses pruning; for any `p`, shrinking.
   */
  isObserved(p: Step): boolean {
    const v = produces(p);
    if (v === undefined) return false;
    const ownNeed = p.kind === 'cas' && p.expected === v ? 1 : 0;
    const needing = (this.needing.get(v) ?? 0) - ownNeed;
    const refusingOtherValues = this.refusals - (this.refusingFrom.get(v) ?? 0);
    return needing + refusingOtherValues > 0;
  }

  /**
   * The instant by which the unknown-outcome store `p` must have taken effect: when it is the
   * only store of its value and a known step needs that value, it took effect before that
   * step completed. Infinity when nothing forces it (absence is never forced: the key starts
   * absent).
   */
  deadlineOf(p: Step): number {
    const v = produces(p);
    if (v === undefined || v === null || this.stores.get(v) !== 1) return Infinity;
    return this.firstNeed.get(v) ?? Infinity;
  }
}

function increment(counts: Map<RegisterValue, number>, v: RegisterValue): void {
  counts.set(v, (counts.get(v) ?? 0) + 1);
}

/**
 * Drops unknown-outcome stores nobody observed. Chaos tests produce many (every request in
 * flight when a node dies), and each would otherwise stay a candidate at every later point of
 * the search, multiplying the configurations to explore.
 */
function prune(steps: readonly Step[]): Step[] {
  const dependencies = new Dependencies(steps);
  return steps.filter((s) => s.complete !== Infinity || dependencies.isObserved(s));
}

/**
 * Turns the history into an equivalent but cheaper search problem: prunes, then gives each
 * unknown-outcome store that some known step needs a deadline, making it an ordinary
 * operation that must be placed. With unique values (as chaos tests write) that leaves no
 * optional operations at all, which would otherwise be tried at every point of the search.
 */
function prepare(steps: readonly Step[]): Step[] {
  const kept = prune(steps);
  const dependencies = new Dependencies(kept);
  return kept.map((s) => {
    if (s.complete !== Infinity) return s;
    const deadline = dependencies.deadlineOf(s);
    return deadline === Infinity ? s : { ...s, complete: deadline };
  });
}

/**
 * Depth-first search for a linearization. At each point the candidates are the unplaced
 * operations invoked no later than the earliest completion among unplaced known operations
 * (ties count as concurrent, so equal timestamps never cause a false failure). Success is
 * placing every known operation; unknown ones may be left out.
 *
 * Candidates are tried earliest deadline first: the operation that must take effect soonest
 * is usually the one that did, so a linearizable history rarely needs to backtrack far.
 *
 * An optional (unknown-outcome) store is only worth placing right before a step that depends
 * on its value: if a store or the end comes next instead, nothing saw it, and leaving it out
 * gives the same result. So after placing one, only such steps are candidates. That keeps a
 * pile of unknown operations from multiplying the search at every later point. The memo tells
 * the two kinds of point apart, since the restricted one explores less.
 */
function search(steps: readonly Step[], budget: Budget): Verdict {
  const n = steps.length;
  const at = (i: number): Step => steps[i] as Step;
  // Two doubly linked lists threaded through arrays, with the sentinel at index n: all
  // unplaced operations by invocation, and unplaced known operations by completion.
  const byInvoke = [...steps.keys()].sort((a, b) => at(a).invoke - at(b).invoke);
  const byComplete = byInvoke.filter((i) => at(i).complete !== Infinity).sort((a, b) => at(a).complete - at(b).complete);
  const invoked = linkedList(n, byInvoke);
  const completing = linkedList(n, byComplete);

  const placed = new Placement(steps, byComplete);
  /** Configurations already entered: each is explored once. */
  const seen = new Set<string>();
  /**
   * Unrestricted configurations with no optional operation placed, from which nothing works.
   * Any configuration with the same known operations placed and the same value, whatever
   * optional ones it has used, can do no better (it has fewer options), so it is dropped too.
   * Without this, every combination of used and unused optional operations would be explored.
   */
  const exhausted = new Set<string>();
  const stack: { frame: Frame; index: number; before: RegisterValue }[] = [];
  let state: RegisterValue = null;
  let frame: Frame | undefined;
  /** Whether the latest placement was an optional store, which the next step must depend on. */
  let restricted = false;
  const optional = (i: number) => at(i).complete === Infinity;
  const earliestUnplaced = () => completing.next[n] as number;

  const candidates = (): Frame => {
    const deadline = at(completing.next[n] as number).complete;
    const found: number[] = [];
    for (let i = invoked.next[n] as number; i !== n && at(i).invoke <= deadline; i = invoked.next[i] as number) {
      if (restricted && !dependsOn(at(i), state)) continue;
      // A candidate that leaves the register as it is (a read of the current value, a cas
      // refused by it) can always go first: if any order works from here, moving it to the
      // front still works, since nothing must precede it and it changes nothing for the rest.
      // So it is the only branch worth taking, which spares trying reads in every order.
      if (apply(at(i), state) === state && produces(at(i)) === undefined) return { candidates: [i], tried: 0 };
      found.push(i);
    }
    return { candidates: found.sort((a, b) => at(a).complete - at(b).complete || at(a).invoke - at(b).invoke), tried: 0 };
  };

  for (;;) {
    if (frame === undefined) {
      if (completing.next[n] === n) return 'ok';
      frame = candidates();
    }
    let next: number | undefined;
    while (next === undefined && frame.tried < frame.candidates.length) {
      if (--budget.remaining < 0) return 'unknown';
      const i = frame.candidates[frame.tried++] as number;
      const after = apply(at(i), state);
      if (after === undefined) continue;
      invoked.unlink(i);
      if (!optional(i)) completing.unlink(i);
      placed.add(i);
      const configuration = placed.key(earliestUnplaced(), true, optional(i), after);
      if (seen.has(configuration) || (placed.optionalCount > 0 && exhausted.has(placed.key(earliestUnplaced(), false, false, after)))) {
        placed.remove(i);
        if (!optional(i)) completing.relink(i);
        invoked.relink(i);
        continue;
      }
      seen.add(configuration);
      stack.push({ frame, index: i, before: state });
      state = after;
      restricted = optional(i);
      next = i;
    }
    if (next !== undefined) {
      frame = undefined;
      continue;
    }

    // Nothing can go next from here: remember that, undo the latest placement and try that
    // point's other candidates.
    if (placed.hasOptional && !restricted && placed.optionalCount === 0) {
      exhausted.add(placed.key(earliestUnplaced(), false, false, state));
    }
    const top = stack.pop();
    if (top === undefined) return 'fail';
    placed.remove(top.index);
    if (!optional(top.index)) completing.relink(top.index);
    invoked.relink(top.index);
    state = top.before;
    frame = top.frame;
    const below = stack[stack.length - 1];
    restricted = below !== undefined && optional(below.index);
  }
}

/** The operations that may go next at one point of the search, and how many have been tried. */
interface Frame {
  candidates: number[];
  tried: number;
}

interface LinkedList {
  next: Int32Array;
  prev: Int32Array;
  /** Removes i; its own links are kept so that `relink` (in reverse order of removal) restores it. */
  unlink(i: number): void;
  relink(i: number): void;
}

function linkedList(sentinel: number, order: readonly number[]): LinkedList {
  const next = new Int32Array(sentinel + 1);
  const prev = new Int32Array(sentinel + 1);
  let last = sentinel;
  for (const i of order) {
    next[last] = i;
    prev[i] = last;
    last = i;
  }
  next[last] = sentinel;
  prev[sentinel] = last;
  return {
    next,
    prev,
    unlink(i) {
      next[prev[i] as number] = next[i] as number;
      prev[next[i] as number] = prev[i] as number;
    },
    relink(i) {
      next[prev[i] as number] = i;
      prev[next[i] as number] = i;
    },
  };
}

/**
 * The operations placed so far, with a compact key for the memos. Known operations are
 * numbered by completion: all those completing before the earliest unplaced one are placed
 * (or it would not be the earliest), so a key spells out only the bits from there to the
 * highest placed, a span of about the operations running concurrently rather than the whole
 * history. Optional operations, usually few, get a bit each.
 */
class Placement {
  readonly hasOptional: boolean;
  optionalCount = 0;
  private readonly known: Uint16Array;
  private readonly optional: Uint16Array;
  /** Per step: its number among known operations by completion, or among optional ones. */
  private readonly rank: Int32Array;
  private readonly isOptional: boolean[];
  /** The highest known rank placed, as of each placement (placements are undone in reverse). */
  private readonly highest: number[] = [-1];

  constructor(steps: readonly Step[], knownByCompletion: readonly number[]) {
    this.rank = new Int32Array(steps.length);
    this.isOptional = steps.map((s) => s.complete === Infinity);
    knownByCompletion.forEach((i, r) => (this.rank[i] = r));
    let optionals = 0;
    this.isOptional.forEach((isOptional, i) => {
      if (isOptional) this.rank[i] = optionals++;
    });
    this.hasOptional = optionals > 0;
    this.known = new Uint16Array(Math.ceil(knownByCompletion.length / 16));
    this.optional = new Uint16Array(Math.ceil(optionals / 16));
  }

  add(i: number): void {
    this.flip(i);
    if (this.isOptional[i]) this.optionalCount++;
    else this.highest.push(Math.max(this.highest[this.highest.length - 1] as number, this.rank[i] as number));
  }

  /** Undoes the latest `add`, which must have been of `i`. */
  remove(i: number): void {
    this.flip(i);
    if (this.isOptional[i]) this.optionalCount--;
    else this.highest.pop();
  }

  /**
   * `earliest`: the earliest-completing unplaced known operation (steps.length if none).
   * Without `withOptional` the key ignores optional operations (for `exhausted`).
   */
  key(earliest: number, withOptional: boolean, restricted: boolean, state: RegisterValue): string {
    const from = earliest < this.rank.length ? (this.rank[earliest] as number) >> 4 : this.known.length;
    const to = Math.max(from, ((this.highest[this.highest.length - 1] as number) >> 4) + 1);
    // apply() copies the words natively; spreading them into an argument list costs far more.
    const words = (bits: Uint16Array) => String.fromCharCode.apply(null, bits as unknown as number[]);
    return (
      String.fromCharCode(from >>> 16, from & 0xffff, to - from) +
      words(this.known.subarray(from, to)) +
      (withOptional ? words(this.optional) : '') +
      (restricted ? 'r' : 'u') +
      (state === null ? '\u0000' : `\u0001${state}`)
    );
  }

  private flip(i: number): void {
    const bits = this.isOptional[i] ? this.optional : this.known;
    const r = this.rank[i] as number;
    bits[r >> 4] = (bits[r >> 4] as number) ^ (1 << (r & 15));
  }
}

/*
 * Reducing a non-linearizable key history to a small non-linearizable core, so that the
 * explanation points at the few operations that conflict rather than at thousands.
 *
 * Every reduction here keeps a linearizable history linearizable, so the core failing proves
 * the whole history fails, and it can be shown on its own. Two kinds qualify. Removing any
 * operations, as long as every value a remaining read or swap needs keeps all its stores and
 * no refused cas remains that a removed store could matter to (see Dependencies): in any order
 * of the original, each remaining step still finds the same store last before it. And cutting
 * the history at an instant T: dropping later invocations and treating operations still
 * running at T as unknown-outcome (the original's order, stopped at T, fits).
 *
 * Proving a failure means exhausting the search, which costs in proportion to the history, so
 * the reduction first looks for a short run of operations that fails on its own, then finds the
 * earliest instant at which that run fails (failing is monotonic in T, so binary search works),
 * then removes operations one at a time while the rest still fails.
 */

const FIRST_WINDOW = 16;

/**
 * The shortest failing run found among runs of 16, 32, 64... operations by invocation (each
 * overlapping the next by half, so a conflict spanning a boundary is still caught), together
 * with every store that the run's reads and swaps need. Refused cas are left out, since one
 * would need every store of every other value. Undefined if no run shorter than the history
 * fails within the budget.
 */
function failingWindow(steps: readonly Step[], budget: Budget): Step[] | undefined {
  const ordered = [...steps].sort((a, b) => a.invoke - b.invoke);
  const storesOf = new Map<RegisterValue, Step[]>();
  for (const s of steps) {
    const v = produces(s);
    if (v === undefined) continue;
    const stores = storesOf.get(v);
    if (stores === undefined) storesOf.set(v, [s]);
    else stores.push(s);
  }
  for (let size = FIRST_WINDOW; size < ordered.length; size *= 2) {
    for (let start = 0; start < ordered.length - size / 2; start += size / 2) {
      if (budget.remaining <= 0) return undefined;
      const run = ordered.slice(start, start + size).filter((s) => s.kind !== 'cas' || s.swapped);
      const window = new Set(run);
      for (const s of window) {
        const needed = needs(s);
        if (needed !== undefined) for (const store of storesOf.get(needed) ?? []) window.add(store);
      }
      if (search(prepare([...window]), budget) === 'fail') return [...window];
    }
  }
  return undefined;
}

/** The earliest instant at which `steps`, known to fail, already fail. */
function earliestFailure(steps: readonly Step[], budget: Budget): number {
  const times = [...new Set(steps.flatMap((s) => (s.complete === Infinity ? [s.invoke] : [s.invoke, s.complete])))].sort(
    (a, b) => a - b,
  );
  // The cut at the last instant is the whole of `steps`.
  let lo = 0;
  let hi = times.length - 1;
  while (lo < hi && budget.remaining > 0) {
    const mid = (lo + hi) >> 1;
    if (search(prepare(cut(steps, times[mid] as number)), budget) === 'fail') hi = mid;
    else lo = mid + 1;
  }
  return times[hi] as number;
}

/**
 * Removes operations one at a time while the rest still fails: reads and refused cas first,
 * then stores nobody observes; a store somebody observes stays, since without it the core
 * would blame a read for a value that was in fact written.
 */
function minimise(steps: readonly Step[], budget: Budget): Step[] {
  let core = [...steps];
  const removalOrder = (s: Step) => (produces(s) === undefined ? 0 : 1);
  let changed = true;
  while (changed && budget.remaining > 0) {
    changed = false;
    const candidates = [...core].sort((a, b) => removalOrder(a) - removalOrder(b) || b.invoke - a.invoke);
    for (const candidate of candidates) {
      if (budget.remaining <= 0) break;
      if (new Dependencies(core).isObserved(candidate)) continue;
      const trial = core.filter((s) => s !== candidate);
      if (search(prepare(trial), budget) === 'fail') {
        core = trial;
        changed = true;
      }
    }
  }
  return core.sort((a, b) => a.invoke - b.invoke);
}

/** The history as it stood at instant t. */
function cut(steps: readonly Step[], t: number): Step[] {
  return steps.flatMap((s) => {
    if (s.invoke > t) return [];
    if (s.complete <= t) return [s];
    // Still running at t: its result was not yet observed, so a read says nothing.
    if (s.kind === 'read') return [];
    return [{ ...s, complete: Infinity, swapped: s.kind === 'cas' }];
  });
}

function explain(key: string, core: readonly Step[], history: readonly Operation[], cutAt: number, total: number): string {
  const lines = core.map((s) => `  ${describe(s, history)}`);
  const running = core.some((s) => s.complete === Infinity && history[s.source]?.complete !== null);
  return [
    `key ${JSON.stringify(key)} is not linearizable: no order of these ${core.length} operation(s) ` +
      'respects both their timing and a register (absent until written):',
    ...lines,
    `(they already conflict as of t=${formatTime(cutAt)}` +
      (running ? ', counting operations still running then as possibly having taken effect' : '') +
      `; the key has ${total} operation(s) in all)`,
  ].join('\n');
}

function describe(s: Step, history: readonly Operation[]): string {
  const op = history[s.source] as Operation;
  const what =
    op.kind === 'write'
      ? `write ${showValue(op.value ?? null)}`
      : op.kind === 'delete'
        ? 'delete'
        : op.kind === 'read'
          ? `read → ${op.complete === null ? '?' : showValue(op.result as RegisterValue)}`
          : `cas ${showValue(op.expected ?? null)} → ${showValue(op.value ?? null)}` +
            (op.complete === null ? '' : op.result === true ? ' (swapped)' : ' (refused)');
  const when =
    op.complete === null
      ? `invoked t=${formatTime(op.invoke)}, outcome unknown`
      : `invoked t=${formatTime(op.invoke)}, completed t=${formatTime(op.complete)}`;
  return `#${s.source} ${op.client}: ${what}, ${when}`;
}

function showValue(v: RegisterValue): string {
  return v === null ? 'absent' : JSON.stringify(v);
}

function formatTime(t: number): string {
  return Number.isInteger(t) ? String(t) : t.toFixed(3);
}
