import { seededRandom, type Random } from '../../../test-support/seeded-random';
import { decodeConfChange } from '../../conf-change';
import { CompactedError, NotLeaderError, RaftError } from '../../errors';
import { RaftCore } from '../../raft-core';
import type { ConfChange, Entry, HardState, Message, NodeId, RaftConfig, Ready, SnapshotMeta } from '../../types';
import { SimNetwork, type NetworkFaults } from './network';

/** A safety property failed. The message names the property and the evidence. */
export class InvariantViolation extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvariantViolation';
  }
}

/** What a node's disk holds: exactly what it persisted from Readies and compactions. */
interface Disk {
  hardState?: HardState;
  snapshot?: SnapshotMeta;
  /** Entries after the snapshot index (after 0 without one). */
  entries: Entry[];
}

/** The replicated state machine, reduced to what the checks need; durable with every apply. */
interface StateMachine {
  applied: number;
  /** Rolling hash of everything applied, to compare a snapshot's state with the log's. */
  digest: number;
}

export interface SimNode {
  readonly id: NodeId;
  /** Null while crashed. */
  core: RaftCore | null;
  disk: Disk;
  sm: StateMachine;
  /** A stalled node still ticks and receives, but its Readies are never processed (a hung disk). */
  stalled: boolean;
  snapshotsInstalled: number;
  /** The Ready whose write is under way, if any. */
  writing: Write | null;
}

/** A Ready taken from a core: its early messages are out, its write is not done yet. */
interface Write {
  rd: Ready;
  /** Its committed entries were applied beside the write, before it finished (the runtime may). */
  appliedEarly: boolean;
  crashAt: CrashPoint | undefined;
}

/**
 * Where a crash may interrupt the processing of a Ready. `beforePersist` is a leader that sent
 * its appends (and may have applied) but never completed its write.
 */
export type CrashPoint = 'beforePersist' | 'afterPersist' | 'afterSend' | 'afterApply';

export interface ClusterOptions {
  /** Every node that runs. Members of `voters`/`learners` bootstrap with that membership; the rest start blank. */
  ids: NodeId[];
  voters?: NodeId[];
  learners?: NodeId[];
  seed?: number;
  config?: Partial<Omit<RaftConfig, 'id' | 'random'>>;
  network?: Partial<NetworkFaults>;
  /** Probability, per processed Ready, of a crash part-way through it. */
  crashDuringReady?: number;
  /**
   * Probability, per settle round, that a Ready's write is still under way. Meanwhile its early
   * messages are delivered and answered and the core keeps stepping, as in the runtime; its
   * committed entries are applied before or after the write, at random. 0 (the default) does
   * each Ready in one go, in the order the contract lists.
   */
  slowWrites?: number;
}

export const DEFAULT_CONFIG: Omit<RaftConfig, 'id' | 'random'> = {
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: true,
  checkQuorum: true,
  maxEntriesPerMsg: 64,
  maxBytesPerMsg: 1 << 20,
  maxInflight: 256,
};

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** The identity of an entry's content, for comparing what different nodes hold or apply. */
export function entryKey(e: Entry): string {
  switch (e.type) {
    case 'normal':
      return `normal:${fromUtf8.decode(e.data)}`;
    case 'empty':
      return 'empty';
    case 'conf': {
      const cc = decodeConfChange(e.data);
      return `conf:${cc.type}:${cc.node}`;
    }
  }
}

function mix(digest: number, key: string): number {
  let h = digest ^ 0x9e3779b9;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const EMPTY_SM: StateMachine = { applied: 0, digest: 0 };

/**
 * A deterministic in-memory cluster: cores, disks, state machines and a network, driven one
 * tick at a time. It plays the node runtime's part exactly as the Ready contract says, and
 * checks Raft's safety properties as it goes (see `checkInvariants`); any violation throws.
 */
export class Cluster {
  readonly rng: Random;
  readonly network: SimNetwork;
  readonly nodes = new Map<NodeId, SimNode>();
  readonly config: Omit<RaftConfig, 'id' | 'random'>;
  /** Ticks so far. */
  now = 0;
  crashDuringReady: number;
  slowWrites: number;

  // Evidence for the safety checks.
  /** Every entry any node applied, by index: state machine safety compares against it. */
  private readonly applied = new Map<number, { term: number; key: string }>();
  private maxApplied = 0;
  /** State-machine states by snapshot index, as taken by whichever node compacted there first. */
  private readonly snapshots = new Map<number, StateMachine>([[0, EMPTY_SM]]);
  /** Persisted entries by "index:term": log matching says content and predecessor's term agree. */
  private readonly persisted = new Map<string, { key: string; prevTerm: number }>();
  /** The leader of each term ever seen. */
  private readonly leaders = new Map<number, NodeId>();
  /** Per term, the highest commit a leader of that term persisted, and the term of the entry there. */
  private readonly commits = new Map<number, { index: number; term: number }>();
  /** Reads asked for and not yet answered, with the highest index applied anywhere when asked. */
  private readonly reads = new Map<string, { node: NodeId; mustSee: number }>();
  private nextRead = 0;
  readonly readsServed: { node: NodeId; context: string; index: number }[] = [];
  /** Append answers that reached a node while its own write was under way (the race early appends open). */
  acksDuringWrites = 0;

  constructor(opts: ClusterOptions) {
    this.rng = seededRandom(opts.seed ?? 1);
    this.network = new SimNetwork(this.rng, opts.network);
    this.config = { ...DEFAULT_CONFIG, ...opts.config };
    this.crashDuringReady = opts.crashDuringReady ?? 0;
    this.slowWrites = opts.slowWrites ?? 0;
    const voters = opts.voters ?? opts.ids;
    const learners = opts.learners ?? [];
    for (const id of opts.ids) {
      const member = voters.includes(id) || learners.includes(id);
      const node: SimNode = { id, core: null, disk: { entries: [] }, sm: EMPTY_SM, stalled: false, snapshotsInstalled: 0, writing: null };
      node.core = new RaftCore(this.raftConfig(id), member ? { bootstrap: { voters: [...voters], learners: [...learners] } } : {});
      this.nodes.set(id, node);
    }
    this.settle();
  }

  raftConfig(id: NodeId): RaftConfig {
    return { ...this.config, id, random: () => this.rng.next() };
  }

  node(id: NodeId): SimNode {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  }

  /** The running core of `id`; throws if it is crashed. */
  core(id: NodeId): RaftCore {
    const core = this.node(id).core;
    if (core === null) throw new Error(`${id} is crashed`);
    return core;
  }

  // ---------------------------------------------------------------------------------------------
  // Driving

  /** Advances time by `n` ticks; after each, delivers and processes until quiet, then checks invariants. */
  tick(n = 1): void {
    for (let i = 0; i < n; i++) {
      this.now++;
      for (const node of this.nodes.values()) node.core?.tick();
      this.settle();
      this.checkInvariants();
    }
  }

  /** Ticks until `done()` holds; throws after `max` ticks. */
  tickUntil(done: () => boolean, max: number, what = 'condition'): number {
    for (let i = 0; i < max; i++) {
      if (done()) return i;
      this.tick();
    }
    if (done()) return max;
    throw new Error(`${what} not reached within ${max} ticks`);
  }

  /** Processes Readies and delivers due messages until nothing is left to do at this tick. */
  settle(): void {
    for (let round = 0; round < 100; round++) {
      let busy = false;
      for (const node of this.nodes.values()) {
        if (node.core === null || node.stalled) continue;
        if (node.writing === null) {
          if (!node.core.hasReady()) continue;
          this.beginReady(node);
        }
        busy = true;
        if (this.slowWrites === 0 || this.rng.next() >= this.slowWrites) this.finishReady(node);
      }
      for (const m of this.network.takeDue(this.now)) {
        this.deliver(m);
        busy = true;
      }
      if (!busy) return;
    }
  }

  private deliver(m: Message): void {
    const to = this.nodes.get(m.to);
    const from = this.nodes.get(m.from);
    const lost = to === undefined || to.core === null || this.network.isCut(m.from, m.to);
    if (m.type === 'snapshot') {
      // The runtime streams the data, then reports the outcome to the sender's core.
      if (!lost) to.core!.step(m);
      from?.core?.reportSnapshot(m.to, !lost);
      return;
    }
    if (lost) return;
    if (m.type === 'appendResp' && to.writing !== null) this.acksDuringWrites++;
    to.core!.step(m);
  }

  /**
   * Takes a Ready and does what the contract allows before its write completes: sends the early
   * messages and, with slow writes, perhaps applies (its committed entries are durable already).
   */
  private beginReady(node: SimNode): void {
    const rd = node.core!.ready();
    let crashAt: CrashPoint | undefined;
    if (this.crashDuringReady > 0 && this.rng.next() < this.crashDuringReady) {
      crashAt = this.rng.pick<CrashPoint>(['beforePersist', 'afterPersist', 'afterSend', 'afterApply']);
    }
    this.sendAll(rd.earlyMessages);
    // Never before a snapshot install, which replaces the state machine first.
    const appliedEarly = this.slowWrites > 0 && rd.snapshot === undefined && rd.committed.length > 0 && this.rng.next() < 0.5;
    if (appliedEarly) for (const e of rd.committed) this.apply(node, e);
    node.writing = { rd, appliedEarly, crashAt };
  }

  /** The write completes (or the node crashes first); the rest of the Ready follows, then advance. */
  private finishReady(node: SimNode): void {
    const { rd, appliedEarly, crashAt } = node.writing!;
    node.writing = null;
    if (crashAt === 'beforePersist') return this.crash(node.id);
    this.persist(node, rd);
    if (crashAt === 'afterPersist') return this.crash(node.id);
    this.sendAll(rd.messages);
    if (crashAt === 'afterSend') return this.crash(node.id);
    if (!appliedEarly) for (const e of rd.committed) this.apply(node, e);
    if (crashAt === 'afterApply') return this.crash(node.id);
    for (const rs of rd.readStates) this.readAnswered(node, rs.context, rs.index);
    node.core!.advance(rd);
  }

  private sendAll(messages: Message[]): void {
    for (const m of messages) {
      this.network.send(m, this.now, (lost) => this.nodes.get(lost.from)?.core?.reportSnapshot(lost.to, false));
    }
  }

  private persist(node: SimNode, rd: Ready): void {
    const disk = node.disk;
    if (rd.snapshot !== undefined) {
      const s = rd.snapshot;
      const state = this.snapshots.get(s.index);
      if (state === undefined) throw new InvariantViolation(`${node.id} was sent a snapshot at ${s.index} that no node took`);
      if (s.index < node.sm.applied) throw new InvariantViolation(`${node.id} installed snapshot ${s.index} below its applied ${node.sm.applied}`);
      disk.snapshot = s;
      disk.entries = [];
      node.sm = state;
      node.snapshotsInstalled++;
    }
    const first = rd.entries[0];
    if (first !== undefined) {
      const base = disk.snapshot?.index ?? 0;
      if (first.index <= base) throw new InvariantViolation(`${node.id} asked to persist entry ${first.index} at or below its snapshot ${base}`);
      disk.entries.length = Math.min(disk.entries.length, first.index - base - 1);
      if (disk.entries.length !== first.index - base - 1) throw new InvariantViolation(`${node.id} asked to persist a gap before ${first.index}`);
      let prevTerm = first.index - 1 === base ? (disk.snapshot?.term ?? 0) : disk.entries[disk.entries.length - 1]!.term;
      for (const e of rd.entries) {
        this.checkLogMatching(node.id, e, prevTerm);
        disk.entries.push(e);
        prevTerm = e.term;
      }
    }
    if (rd.hardState !== undefined) {
      disk.hardState = rd.hardState;
      const status = node.core!.status();
      if (status.role === 'leader' && status.term === rd.hardState.term) this.noteLeaderCommit(node.core!, rd.hardState);
    }
  }

  private apply(node: SimNode, e: Entry): void {
    if (e.index !== node.sm.applied + 1) {
      throw new InvariantViolation(`${node.id} applied index ${e.index} after ${node.sm.applied} (twice, or with a gap)`);
    }
    const key = entryKey(e);
    const agreed = this.applied.get(e.index);
    if (agreed === undefined) {
      this.applied.set(e.index, { term: e.term, key });
      this.maxApplied = Math.max(this.maxApplied, e.index);
    } else if (agreed.key !== key || agreed.term !== e.term) {
      throw new InvariantViolation(`state machine safety: ${node.id} applied ${key}@${e.term} at ${e.index}, another node applied ${agreed.key}@${agreed.term}`);
    }
    node.sm = { applied: e.index, digest: mix(node.sm.digest, key) };
  }

  // ---------------------------------------------------------------------------------------------
  // Faults and client actions

  /** Stops `id` at once: a write under way is lost (what it sent early stays sent). */
  crash(id: NodeId): void {
    const node = this.node(id);
    node.core = null;
    node.writing = null;
  }

  /** Restarts a crashed node from its disk and state machine. */
  restart(id: NodeId): void {
    const node = this.node(id);
    if (node.core !== null) return;
    const { hardState, snapshot, entries } = node.disk;
    node.core = new RaftCore(this.raftConfig(id), {
      ...(hardState && { hardState }),
      ...(snapshot && { snapshot }),
      entries: [...entries],
      applied: node.sm.applied,
    });
    node.stalled = false;
  }

  /** Crashes `id`, erases its disk and state machine, and starts it blank (no membership). */
  wipe(id: NodeId): void {
    const node = this.node(id);
    node.disk = { entries: [] };
    node.sm = EMPTY_SM;
    node.snapshotsInstalled = 0;
    node.writing = null;
    node.core = new RaftCore(this.raftConfig(id), {});
    node.stalled = false;
  }

  isolate(id: NodeId): void {
    const others = [...this.nodes.keys()].filter((n) => n !== id);
    this.network.partition([id], others);
  }

  /** The node that is leader in the highest term among running nodes, if any. */
  leader(): NodeId | null {
    let best: { id: NodeId; term: number } | null = null;
    for (const node of this.nodes.values()) {
      const s = node.core?.status();
      if (s?.role === 'leader' && (best === null || s.term > best.term)) best = { id: node.id, term: s.term };
    }
    return best?.id ?? null;
  }

  /** Ticks until some node leads, and returns it. */
  waitForLeader(max = 200): NodeId {
    let id: NodeId | null = null;
    this.tickUntil(() => (id = this.leader()) !== null, max, 'a leader');
    return id!;
  }

  /** Proposes `value` at `id`; the index it got, or null when `id` refused (not leader, transfer). */
  propose(id: NodeId, value: string): number | null {
    try {
      return this.core(id).propose(utf8.encode(value)).index;
    } catch (err) {
      if (err instanceof RaftError) return null;
      throw err;
    }
  }

  proposeConfChange(id: NodeId, cc: ConfChange): number {
    return this.core(id).proposeConfChange(cc).index;
  }

  /** Asks `id` for a linearizable read; the answer is checked when it arrives. Null when `id` is not leader. */
  read(id: NodeId, mode: 'safe' | 'lease' = 'safe'): string | null {
    const context = `read-${this.nextRead++}`;
    try {
      this.core(id).readIndex(context, mode);
    } catch (err) {
      if (err instanceof NotLeaderError) return null;
      throw err;
    }
    // Everything applied anywhere was committed before the read began: the answer must cover it.
    this.reads.set(`${id}/${context}`, { node: id, mustSee: this.maxApplied });
    return context;
  }

  private readAnswered(node: SimNode, context: string, index: number): void {
    const key = `${node.id}/${context}`;
    const read = this.reads.get(key);
    if (read === undefined) throw new InvariantViolation(`${node.id} answered read ${context} that it was never asked`);
    this.reads.delete(key);
    if (index < read.mustSee) {
      throw new InvariantViolation(`stale read: ${node.id} answered ${context} at index ${index}, but ${read.mustSee} was applied before it began`);
    }
    this.readsServed.push({ node: node.id, context, index });
  }

  /** Is `index` applied on `id`, with the agreed entry? */
  hasApplied(id: NodeId, index: number): boolean {
    return this.node(id).sm.applied >= index && this.applied.has(index);
  }

  appliedValue(index: number): string | undefined {
    return this.applied.get(index)?.key;
  }

  /**
   * The runtime snapshotted `id`'s state machine at its applied index: compact the core and the
   * disk there. When the core has meanwhile accepted a newer snapshot from the leader (not yet
   * installed), it refuses with CompactedError and the runtime discards its own: returns null.
   * Null too while a write is under way: the runtime compacts only between Readies.
   */
  compact(id: NodeId): SnapshotMeta | null {
    const node = this.node(id);
    const core = this.core(id);
    if (node.writing !== null) return null;
    const index = node.sm.applied;
    let meta: SnapshotMeta;
    try {
      meta = core.compact(index);
    } catch (err) {
      if (err instanceof CompactedError) return null;
      throw err;
    }
    const taken = this.snapshots.get(index);
    if (taken === undefined) this.snapshots.set(index, node.sm);
    else if (taken.digest !== node.sm.digest) throw new InvariantViolation(`state at ${index} differs between snapshots`);
    node.disk.entries = node.disk.entries.slice(index - (node.disk.snapshot?.index ?? 0));
    node.disk.snapshot = meta;
    return meta;
  }

  // ---------------------------------------------------------------------------------------------
  // Safety properties

  /** Log matching, incrementally: the same (index, term) never holds different content or follows a different term. */
  private checkLogMatching(id: NodeId, e: Entry, prevTerm: number): void {
    const at = `${e.index}:${e.term}`;
    const key = entryKey(e);
    const seen = this.persisted.get(at);
    if (seen === undefined) this.persisted.set(at, { key, prevTerm });
    else if (seen.key !== key || seen.prevTerm !== prevTerm) {
      throw new InvariantViolation(`log matching: ${id} persisted ${key} at ${at} after term ${prevTerm}; seen before: ${seen.key} after term ${seen.prevTerm}`);
    }
  }

  /** A leader's persisted commit is durable on a quorum: every leader of a later term must hold it. */
  private noteLeaderCommit(core: RaftCore, hs: HardState): void {
    const term = core.logTerm(hs.commit);
    if (term === undefined) return;
    const seen = this.commits.get(hs.term);
    if (seen === undefined || seen.index < hs.commit) this.commits.set(hs.term, { index: hs.commit, term });
  }

  /**
   * Election safety and leader completeness on the live cores (including state not yet
   * persisted), after every tick. Log matching and state machine safety are checked as entries
   * are persisted and applied; `checkLogs` compares whole disks.
   */
  checkInvariants(): void {
    for (const node of this.nodes.values()) {
      const core = node.core;
      if (core === null) continue;
      const s = core.status();
      if (s.role !== 'leader') continue;
      const other = this.leaders.get(s.term);
      if (other === undefined) this.leaders.set(s.term, node.id);
      else if (other !== node.id) throw new InvariantViolation(`election safety: ${other} and ${node.id} both led term ${s.term}`);
      for (const [term, c] of this.commits) {
        if (term >= s.term || c.index < s.firstIndex) continue;
        if (core.logTerm(c.index) !== c.term) {
          throw new InvariantViolation(`leader completeness: ${node.id} leads term ${s.term} without entry ${c.index}@${c.term} committed in term ${term}`);
        }
      }
    }
  }

  /** Log matching over whole disks: where two nodes hold the same (index, term), all earlier entries agree. */
  checkLogs(): void {
    const disks = [...this.nodes.values()].map((n) => ({ id: n.id, base: n.disk.snapshot?.index ?? 0, entries: n.disk.entries }));
    for (let a = 0; a < disks.length; a++) {
      for (let b = a + 1; b < disks.length; b++) {
        const x = disks[a]!;
        const y = disks[b]!;
        const lo = Math.max(x.base, y.base) + 1;
        const hi = Math.min(x.base + x.entries.length, y.base + y.entries.length);
        let matched = false;
        for (let i = hi; i >= lo; i--) {
          const ex = x.entries[i - x.base - 1]!;
          const ey = y.entries[i - y.base - 1]!;
          if (!matched && ex.term === ey.term) matched = true;
          if (matched && (ex.term !== ey.term || entryKey(ex) !== entryKey(ey))) {
            throw new InvariantViolation(`log matching: ${x.id} and ${y.id} agree above ${i} but differ at ${i}`);
          }
        }
      }
    }
  }
}
