import type { Logger } from '@strongroom/core';

export interface AutopilotConfig {
  /** How long a member must stay healthy before it is promoted (Vault's server_stabilization_time). */
  stabilizationMs: number;
  /** Longest silence, from its Raft answers and from its echoes, before a member is unhealthy (last_contact_threshold). */
  lastContactMs: number;
  /** Most entries a member's log may trail the leader's and still be healthy (max_trailing_logs). */
  maxTrailingLogs: number;
}

/** What the leader knows of one member when autopilot looks. */
export interface MemberView {
  id: string;
  /** The leader itself. */
  self: boolean;
  voter: boolean;
  /** Joined with non_voter: never promoted. */
  nonVoter: boolean;
  /** Whether it has answered this leader since it was added or the lead began. */
  answered: boolean;
  /** Milliseconds since its last answer. */
  contactMs: number;
  /** Entries its log trails the leader's last index by. */
  trailing: number;
  /** Its latest echo: how long ago, and whether it said it was sealed; undefined when none came. */
  echo: { ageMs: number; sealed: boolean } | undefined;
}

export interface MemberHealth {
  healthy: boolean;
  /** When it became healthy, without a break since; undefined while unhealthy. */
  healthySince: number | undefined;
  /** Why it is unhealthy, or why a learner is not promoted yet; empty when there is nothing to say. */
  reason: string;
}

export interface Assessment {
  members: Map<string, MemberHealth>;
  /** The learner to promote now, if any (one change at a time). */
  promote: string | null;
}

/**
 * Vault's autopilot rule for a Raft cluster, without clock or I/O: a member is healthy once it
 * has answered the leader, recently, says it is unsealed and has a log close to the leader's; a
 * learner that has stayed healthy for the stabilization time is promoted, unless the voters would
 * then lack a reachable quorum. The leader runs it every few ticks and applies the promotion.
 */
export class Autopilot {
  private readonly healthySince = new Map<string, number>();
  /** The reason last logged per member, so that each change is logged once. */
  private readonly logged = new Map<string, string>();

  constructor(private config: AutopilotConfig, private readonly logger: Logger) {}

  /** Takes new thresholds (sys/storage/raft/autopilot/configuration); what was seen so far still counts. */
  configure(config: AutopilotConfig): void {
    this.config = config;
  }

  /** Forgets what was seen: a new leader judges from its own contact with the members. */
  reset(): void {
    this.healthySince.clear();
    this.logged.clear();
  }

  /** Judges every member at `now`, remembers when each became healthy, and logs each change of reason. */
  assess(members: MemberView[], now: number, options: { quiet?: boolean } = {}): Assessment {
    const out = new Map<string, MemberHealth>();
    const ids = new Set(members.map((m) => m.id));
    for (const id of [...this.healthySince.keys()]) if (!ids.has(id)) this.healthySince.delete(id);
    for (const id of [...this.logged.keys()]) if (!ids.has(id)) this.logged.delete(id);
    for (const m of members) {
      const problem = this.problem(m);
      if (problem) this.healthySince.delete(m.id);
      else if (!this.healthySince.has(m.id)) this.healthySince.set(m.id, now);
      out.set(m.id, { healthy: problem === '', healthySince: this.healthySince.get(m.id), reason: problem });
    }

    let promote: string | null = null;
    const voters = members.filter((m) => m.voter);
    const reachableVoters = voters.filter((m) => this.reachable(m)).length;
    const seconds = (ms: number) => `${ms / 1000}s`;
    for (const m of members) {
      const health = out.get(m.id) as MemberHealth;
      if (m.voter || !health.healthy) continue;
      if (m.nonVoter) {
        health.reason = 'joined as a non-voter: autopilot does not promote it';
        continue;
      }
      if (now - (health.healthySince as number) < this.config.stabilizationMs) {
        health.reason = `healthy, waiting out server_stabilization_time (${seconds(this.config.stabilizationMs)}) before promotion`;
        continue;
      }
      // With it a voter, a quorum of the larger set must still be reachable.
      if (reachableVoters + 1 < Math.floor((voters.length + 1) / 2) + 1) {
        health.reason = 'not promoted: the voters would lack a reachable quorum';
        continue;
      }
      if (promote === null) promote = m.id;
      else health.reason = 'waiting for another promotion to finish';
    }

    if (!options.quiet) for (const m of members) this.logChange(m.id, out.get(m.id) as MemberHealth);
    return { members: out, promote };
  }

  /** Whether the voters left after removing `id` still include a reachable quorum. */
  keepsQuorumWithout(members: MemberView[], id: string): boolean {
    const left = members.filter((m) => m.voter && m.id !== id);
    return left.filter((m) => this.reachable(m)).length >= Math.floor(left.length / 2) + 1;
  }

  /** Raft-reachable: what quorum needs, sealed or not. */
  private reachable(m: MemberView): boolean {
    return m.self || (m.answered && m.contactMs <= this.config.lastContactMs);
  }

  private problem(m: MemberView): string {
    if (m.self) return '';
    const limit = `${this.config.lastContactMs / 1000}s`;
    if (!m.answered) return 'has not answered the leader since it was added or the lead began: check that it is running and reachable at its cluster_addr';
    if (m.contactMs > this.config.lastContactMs) return `no answer to the leader for over last_contact_threshold (${limit}): check that it is running and reachable at its cluster_addr`;
    // Echoes come every few ticks rather than every tick, so they get twice the time: a member
    // that went silent is reported as silent, not as one that stopped reporting its seal status.
    if (m.echo === undefined || m.echo.ageMs > 2 * this.config.lastContactMs) return `has not reported its seal status to the leader within twice last_contact_threshold (${limit})`;
    if (m.echo.sealed) return 'is sealed: unseal it';
    if (m.trailing > this.config.maxTrailingLogs) return `its log trails the leader's by more than max_trailing_logs (${this.config.maxTrailingLogs} entries)`;
    return '';
  }

  private logChange(id: string, { healthy, reason }: MemberHealth): void {
    const before = this.logged.get(id);
    if (before === reason || (before === undefined && reason === '')) return;
    this.logged.set(id, reason);
    if (reason === '') this.logger.info('autopilot: member is healthy', { node_id: id });
    else if (healthy) this.logger.info(`autopilot: ${reason}`, { node_id: id });
    else this.logger.warn(`autopilot: ${reason}`, { node_id: id });
  }
}
