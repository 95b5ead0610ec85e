import type { NodeId } from './types';

/** Majority of `voters` voters. */
export function quorumSize(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

/** The largest index that a majority of voters has matched; 0 with no voters. */
export function majorityIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  if (voters.length === 0) return 0;
  const matches = voters.map(matchOf).sort((a, b) => b - a);
  return matches[quorumSize(voters.length) - 1] ?? 0;
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
