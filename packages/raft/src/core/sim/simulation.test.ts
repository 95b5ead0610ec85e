import { runSimulation, type SimulationReport } from './test-support/simulation';

/*
 * Thousands of seeded runs by default (small clusters, a few hundred ticks each); set
 * RAFT_SIM_RUNS / RAFT_SIM_STEPS (and RAFT_SIM_FIRST_SEED, to soak fresh seeds) for a longer
 * soak, RAFT_SIM_SEED (with the same RAFT_SIM_STEPS) to replay one failing run.
 */
const DEFAULT_RUNS = 2000;
const DEFAULT_STEPS = 150;
const CHUNKS = 10;

const runs = Number(process.env.RAFT_SIM_RUNS ?? DEFAULT_RUNS);
const steps = Number(process.env.RAFT_SIM_STEPS ?? DEFAULT_STEPS);
const firstSeed = Number(process.env.RAFT_SIM_FIRST_SEED ?? 1);
const replay = process.env.RAFT_SIM_SEED;

function run(seed: number): SimulationReport {
  try {
    return runSimulation(seed, steps);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`simulation seed ${seed} failed (replay: RAFT_SIM_SEED=${seed} RAFT_SIM_STEPS=${steps}): ${reason}`, { cause: err });
  }
}

if (replay !== undefined) {
  test(`replays seed ${replay}`, () => {
    const report = run(Number(replay));
    console.log(report);
  });
} else {
  const perChunk = Math.ceil(runs / CHUNKS);
  for (let c = 0; c < CHUNKS; c++) {
    const first = firstSeed + c * perChunk;
    const last = Math.min(firstSeed + runs - 1, first + perChunk - 1);
    if (first > last) break;
    test(`seeds ${first}..${last} keep election safety, log matching, leader completeness, state machine safety, fresh reads and liveness`, () => {
      for (let seed = first; seed <= last; seed++) run(seed);
    });
  }

  test('the runs exercise what they claim to', () => {
    // A sample of runs, summed: guards against a harness change that quietly stops injecting faults.
    const reports = Array.from({ length: 40 }, (_, i) => run(100_000 + i));
    const sum = (f: (r: SimulationReport) => number): number => reports.reduce((n, r) => n + f(r), 0);
    expect(sum((r) => r.proposals)).toBeGreaterThan(1000);
    expect(sum((r) => r.reads)).toBeGreaterThan(100);
    expect(sum((r) => r.crashes)).toBeGreaterThan(20);
    expect(sum((r) => r.confChanges)).toBeGreaterThan(20);
    expect(sum((r) => r.transfers)).toBeGreaterThan(10);
    expect(sum((r) => r.compactions)).toBeGreaterThan(50);
    expect(sum((r) => r.snapshotsInstalled)).toBeGreaterThan(10);
    expect(sum((r) => r.terms)).toBeGreaterThan(40);
    expect(sum((r) => r.acksDuringWrites)).toBeGreaterThan(200);
    expect(reports.some((r) => !r.preVote) && reports.some((r) => !r.checkQuorum)).toBe(true);
  });
}
