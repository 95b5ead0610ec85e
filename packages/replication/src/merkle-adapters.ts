import { status } from '@grpc/grpc-js';
import type { KeyClass } from './key-space';
import { answerDiff, LEAF_LEVEL, planSync, summarize, type LeafDiff, type MerkleIndexer } from './merkle';
import type { PrimaryMerkle } from './primary-service';
import type { SecondaryMerkle } from './secondary-runner';
import { ReplicationCallError } from './wire/errors';
import type { MerkleDiffRequest } from './wire/types';

const HASH_BYTES = 32;
const TREES: KeyClass[] = ['replicated', 'local'];

function split(hashes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < hashes.length; at += HASH_BYTES) out.push(hashes.subarray(at, at + HASH_BYTES));
  return out;
}

/** The Merkle index as the two ends of the wire use it: leaf hashes go out one per leaf. */
export function merkleAdapters(indexer: MerkleIndexer): PrimaryMerkle & SecondaryMerkle {
  return {
    caughtUp: (index) => indexer.whenApplied(index),
    rootBefore: (index) => indexer.rootBefore(index),
    summary: (): MerkleDiffRequest => {
      const s = summarize(indexer.tree);
      return { trees: TREES.map((tree) => ({ tree, leafHashes: split(s[tree]) })) };
    },
    diff: async (theirs, allows) => {
      const hashes = (tree: KeyClass) => Buffer.concat(theirs.trees.find((t) => t.tree === tree)?.leafHashes ?? []);
      const summary = { level: LEAF_LEVEL, replicated: hashes('replicated'), local: hashes('local') };
      try {
        const answer = await answerDiff(indexer.tree, summary, { ...(theirs.page ? { page: theirs.page } : {}), ...(allows ? { allows } : {}) });
        return { leaves: answer.leaves, next: answer.next };
      } catch (err) {
        // A summary of the wrong size, or a page past the last leaf: the caller's mistake.
        if (err instanceof RangeError) throw new ReplicationCallError(status.INVALID_ARGUMENT, err.message);
        throw err;
      }
    },
    plan: (leaves) => planSync(indexer.tree, leaves as LeafDiff[]),
  };
}
