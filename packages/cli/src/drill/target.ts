/**
 * What the drill drives: two clusters that form a DR pair (which of them is the primary now is
 * read from the servers, so a drill can run again after a failover without failback), a
 * performance secondary, and per node a way to kill and start its process. A compose or a
 * local topology each provide one; the drill knows nothing else about how nodes run.
 */

export interface DrillNode {
  name: string;
  apiAddr: string;
  /** Signals the node's process; resolves once it is gone (or was not running). */
  kill(signal: NodeJS.Signals): Promise<void>;
  /** Starts the node's process again exactly as the topology started it. */
  start(): Promise<void>;
}

export interface DrillCluster {
  name: string;
  nodes: DrillNode[];
}

export interface DrillCredentials {
  /** The original primary's root token; tokens replicate, so it serves on whichever cluster is primary. */
  rootToken: string;
  /**
   * The original primary's key shares (recovery keys under an auto-unseal, unseal keys under
   * Shamir). A DR secondary makes its operation token from these, not from its own init's.
   */
  keyShares: string[];
}

export interface DrillTarget {
  /** The DR pair, in the topology's order (its "primary" first). */
  pair: [DrillCluster, DrillCluster];
  performance: DrillCluster | null;
  credentials: DrillCredentials;
}
