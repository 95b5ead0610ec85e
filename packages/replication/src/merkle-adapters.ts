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
    diff: async (theirs) => {
      const hashes = (tree: KeyClass) => Buffer.concat(theirs.trees.find((t) => t.tree === tree)?.leafHashes ?? []);
      return (await answerDiff(indexer.tree, { level: LEAF_LEVEL, replicated: hashes('replicated'), local: hashes('local') })).leaves;
    },
    leavesHolding: async (refused) => {
      const out: LeafDiff[] = [];
      for await (const { leaf, entries } of indexer.tree.leaves('replicated')) {
        if (entries.some((e) => refused(e.key))) out.push({ tree: 'replicated', leaf, entries });
      }
      return out;
    },
    plan: (leaves) => planSync(indexer.tree, leaves as LeafDiff[]),
  };
}
