/**
 * Physical storage: what the barrier writes its ciphertext to. Implemented in memory here (for
 * tests) and on classic-level (later behind Raft) in packages/raft. Keys are '/'-separated paths.
 */
export type TxnOp = { type: 'put'; key: string; value: Buffer } | { type: 'delete'; key: string };

export interface Storage {
  get(key: string): Promise<Buffer | null>;
  put(key: string, value: Buffer): Promise<void>;
  delete(key: string): Promise<void>;
  /**
   * Immediate children of `prefix` (which is '' or ends with '/'), relative to it and sorted:
   * leaf keys as they are, sub-trees once each with a trailing '/'.
   */
  list(prefix: string): Promise<string[]>;
  /** Applies all operations atomically and durably, in order. */
  txn(ops: TxnOp[]): Promise<void>;
  /**
   * For a storage that others write too (a cluster's): resolves once what this node reads may be
   * answered as the latest state, rejects when it may not be (this node no longer serves); null
   * when it may at once. Its own reads pass it; a layer that answers from memory what it read
   * earlier (a cache) passes it once per request before it answers anything.
   */
  readBarrier?(): Promise<void> | null;
  close(): Promise<void>;
}

/** Folds the keys under a prefix into immediate children, as `Storage.list` returns them. */
export function childrenOf(prefix: string, keys: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const key of keys) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    const slash = rest.indexOf('/');
    out.add(slash === -1 ? rest : rest.slice(0, slash + 1));
  }
  return [...out].sort();
}
