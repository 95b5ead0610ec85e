/** What DR replication reads of this node's Merkle index (see ./merkle). */
export interface MerkleView {
  status(): {
    root: string;
    corrupted: boolean;
    lastReindexEpoch: string;
    lastCheckEpoch: string;
    reindex: { stage: string; total: number; done: number } | null;
  };
  reindex(options: { diff: boolean; force: boolean; skipFlush: boolean }): Promise<Record<string, unknown>>;
  check(): Promise<Record<string, unknown>>;
}
