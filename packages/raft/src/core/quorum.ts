import type { NodeId } from './types';

/** Majority of `voters` voters. */
export function quorumSize(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

/** The largest index that a majority of voters has matched; 0 with no voters. */
export function majorityIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  return quorumValue(voters, matchOf) ?? 0;
}

/**
 * The largest value that a majority of voters has reached (the quorum-th largest `valueOf`);
 * undefined with no voters. It counts rather than sorting a copy of the values, as the lease
 * asks it on every read; voter sets are a handful, so n^2 compares cost less than a sort.
 */
export function quorumValue(voters: readonly NodeId[], valueOf: (id: NodeId) => number): number | undefined {
  const q = quorumSize(voters.length);
  let best: number | undefined;
  for (const candidate of voters) {
    const v = valueOf(candidate);
    if (best !== undefined && v <= best) continue;
    let reached = 0;
    for (const other of voters) if (valueOf(other) >= v) reached++;
    if (reached >= q) best = v;
  }
  return best;
}

/** Do the voters for which `yes` holds form a majority? */
export function hasQuorum(voters: readonly NodeId[], yes: (id: NodeId) => boolean): boolean {
  let n = 0;
  for (const id of voters) if (yes(id)) n++;
  return voters.length > 0 && n >= quorumSize(voters.length);
}

export type VoteResult = 'won' | 'lost' | 'pending';

/** Tally of an election: `votes` maps a voter to whether it granted. Non-voters' answers are ignored. */
export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  const q = quorumSize(voters.length);
  if (granted >= q) return 'won';
  if (rejected > voters.length - q) return 'lost';
  return 'pending';
}
