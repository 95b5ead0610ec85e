import { seededRandom } from '../../../test-support/seeded-random';
import { RaftError } from '../../errors';
import type { ConfChange, NodeId } from '../../types';
import { Cluster } from './cluster';

export interface SimulationReport {
  seed: number;
  preVote: boolean;
  checkQuorum: boolean;
  /** Distinct terms that had a leader. */
  terms: number;
  proposals: number;
  reads: number;
  crashes: number;
  confChanges: number;
  transfers: number;
  compactions: number;
  snapshotsInstalled: number;
  /** Append answers that reached a node while its own write was under way. */
  acksDuringWrites: number;
  /** Ticks the calm tail needed to elect a leader and commit a proposal. */
  livenessTicks: number;
}

/** After faults heal, a leader must be elected and commit a proposal within this many election timeouts. */
export const LIVENESS_TIMEOUTS = 30;

/**
 * One seeded run: a 3-5 voter cluster (plus one blank node that conf changes may add) under
 * message loss, duplication, delay and reordering, symmetric and one-way partitions, crashes
 * (also part-way through a Ready, and while a write is under way), slow and stalled disks,
 * client writes and reads, membership changes, leadership transfers and compactions, for
 * `steps` ticks; then a calm tail in which every fault heals and a leader must commit a fresh
 * proposal. Safety is checked after every tick (see Cluster); any violation or a liveness
 * failure throws. Everything follows from `seed`.
 */
export function runSimulation(seed: number, steps: number): SimulationReport {
  const r = seededRandom(seed);
  const voterCount = 3 + r.int(3);
  const ids = Array.from({ length: voterCount + 1 }, (_, i) => `n${i + 1}`);
  const preVote = r.next() < 0.75;
  const checkQuorum = r.next() < 0.75;
  const cluster = new Cluster({
    ids,
    voters: ids.slice(0, voterCount),
    seed: seed * 7919 + 1,
    config: {
      electionTicks: 10,
      heartbeatTicks: 1 + r.int(3),
      preVote,
      checkQuorum,
      maxEntriesPerMsg: 1 + r.int(4),
      maxBytesPerMsg: 8 + r.int(64),
      maxInflight: 1 + r.int(4),
    },
    network: { drop: r.next() * 0.1, duplicate: r.next() * 0.05, maxDelay: r.int(4) },
    crashDuringReady: 0.002,
    slowWrites: r.next() * 0.5,
  });
  const rng = cluster.rng;
  const report: SimulationReport = {
    seed,
    preVote,
    checkQuorum,
    terms: 0,
    proposals: 0,
    reads: 0,
    crashes: 0,
    confChanges: 0,
    transfers: 0,
    compactions: 0,
    snapshotsInstalled: 0,
    acksDuringWrites: 0,
    livenessTicks: 0,
  };
  const live = (): NodeId[] => ids.filter((id) => cluster.node(id).core !== null);
  let value = 0;

  for (let step = 0; step < steps; step++) {
    const leader = cluster.leader();
    const p = rng.next();
    if (p < 0.3) {
      // Clients mostly find the leader, sometimes ask a stale one (which may still think it leads).
      const at = leader !== null && rng.next() < 0.9 ? leader : rng.pick(ids);
      if (cluster.node(at).core?.status().role === 'leader') {
        for (let k = 1 + rng.int(3); k > 0; k--) if (cluster.propose(at, `v${value++}`) !== null) report.proposals++;
      }
    } else if (p < 0.4) {
      if (leader !== null && cluster.read(leader, rng.next() < 0.5 ? 'safe' : 'lease') !== null) report.reads++;
    } else if (p < 0.41) {
      const victims = live();
      if (victims.length > 0) {
        cluster.crash(rng.pick(victims));
        report.crashes++;
      }
    } else if (p < 0.44) {
      const down = ids.filter((id) => cluster.node(id).core === null);
      if (down.length > 0) cluster.restart(rng.pick(down));
    } else if (p < 0.45) {
      const shuffled = [...ids].sort(() => rng.next() - 0.5);
      const cut = 1 + rng.int(ids.length - 1);
      cluster.network.partition(shuffled.slice(0, cut), shuffled.slice(cut));
    } else if (p < 0.46) {
      const a = rng.pick(ids);
      const b = rng.pick(ids.filter((id) => id !== a));
      cluster.network.cutOneWay(a, b);
    } else if (p < 0.48) {
      cluster.network.heal();
    } else if (p < 0.485) {
      cluster.node(rng.pick(ids)).stalled = true;
    } else if (p < 0.5) {
      for (const id of ids) cluster.node(id).stalled = false;
    } else if (p < 0.515) {
      if (leader !== null && randomConfChange(cluster, leader, ids)) report.confChanges++;
    } else if (p < 0.52) {
      if (leader !== null) {
        const voters = cluster.core(leader).status().conf.voters.filter((id) => id !== leader);
        if (voters.length > 0) {
          cluster.core(leader).transferLeadership(rng.pick(voters));
          report.transfers++;
        }
      }
    } else if (p < 0.54) {
      const candidates = live().filter((id) => cluster.node(id).sm.applied > (cluster.node(id).disk.snapshot?.index ?? 0));
      if (candidates.length > 0 && cluster.compact(rng.pick(candidates)) !== null) report.compactions++;
    }
    cluster.tick();
    if (step % 50 === 49) cluster.checkLogs();
  }

  report.acksDuringWrites = cluster.acksDuringWrites;
  report.livenessTicks = calmTail(cluster, ids, `v${value++}`);
  cluster.checkLogs();
  const terms = new Set<number>();
  for (const id of ids) {
    const node = cluster.node(id);
    report.snapshotsInstalled += node.snapshotsInstalled;
    terms.add(node.core?.status().term ?? 0);
  }
  report.terms = Math.max(...terms);
  return report;
}

/** Proposes a random valid membership change at the leader; false when none was accepted. */
function randomConfChange(cluster: Cluster, leader: NodeId, ids: NodeId[]): boolean {
  const rng = cluster.rng;
  const conf = cluster.core(leader).status().conf;
  const members = [...conf.voters, ...conf.learners];
  const options: ConfChange[] = [];
  for (const id of ids) if (!members.includes(id)) options.push({ type: 'addLearner', node: id });
  for (const id of conf.learners) options.push({ type: 'promote', node: id }, { type: 'remove', node: id });
  // Keep at least two voters so that the cluster stays a cluster.
  if (conf.voters.length > 2) for (const id of conf.voters) options.push({ type: 'remove', node: id });
  if (options.length === 0) return false;
  try {
    cluster.proposeConfChange(leader, rng.pick(options));
    return true;
  } catch (err) {
    if (err instanceof RaftError) return false; // refused: pending change, transfer, own-term entry not yet committed
    throw err;
  }
}

/**
 * Heals every fault and restarts every node, then requires that a leader is elected and
 * commits a fresh proposal within LIVENESS_TIMEOUTS election timeouts. Returns the ticks it took.
 */
function calmTail(cluster: Cluster, ids: NodeId[], value: string): number {
  cluster.network.heal();
  cluster.network.faults = { drop: 0, duplicate: 0, maxDelay: 1 };
  cluster.crashDuringReady = 0;
  for (const id of ids) {
    cluster.restart(id);
    cluster.node(id).stalled = false;
  }
  let pending = null as { node: NodeId; term: number; index: number } | null;
  const max = LIVENESS_TIMEOUTS * cluster.config.electionTicks;
  for (let t = 0; t < max; t++) {
    const leader = cluster.leader();
    const term = leader === null ? 0 : cluster.core(leader).status().term;
    if (leader !== null && (pending?.node !== leader || pending.term !== term)) {
      // A new leadership (or a new term of the same node) may have dropped the earlier proposal.
      const index = cluster.propose(leader, value);
      pending = index === null ? null : { node: leader, term, index };
    }
    if (pending !== null && cluster.hasApplied(pending.node, pending.index) && cluster.appliedValue(pending.index) === `normal:${value}`) return t;
    cluster.tick();
  }
  const states = ids.map((id) => {
    const s = cluster.core(id).status();
    return `${id}:${s.role}@${s.term} lead=${s.leader} commit=${s.commit} applied=${s.applied} first=${s.firstIndex} last=${s.lastIndex}/${s.lastTerm} voters=${s.conf.voters.join(',')} learners=${s.conf.learners.join(',')} progress=${JSON.stringify(s.progress)}`;
  });
  throw new Error(`liveness: no leader committed a proposal within ${max} calm ticks (${states.join('; ')})`);
}
