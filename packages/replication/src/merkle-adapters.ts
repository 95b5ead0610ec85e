import type { KeyClass } from './key-space';
import { answerDiff, LEAF_LEVEL, planSync, summarize, type LeafDiff, type MerkleIndexer } from './merkle';
import type { PrimaryMerkle } from './primary-service';
import type { SecondaryMerkle } from './secondary-runner';
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
      const answer = await answerDiff(indexer.tree, summary, { ...(theirs.page ? { page: theirs.page } : {}), ...(allows ? { allows } : {}) });
      return { leaves: answer.leaves, next: answer.next };
    },
    plan: (leaves) => planSync(indexer.tree, leaves as LeafDiff[]),
  };
}
