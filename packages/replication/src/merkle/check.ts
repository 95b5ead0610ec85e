import type { KeyClass } from '../key-space';
import { addToSum, compositeRoot, FANOUT, HASH_BYTES, LEAF_LEVEL, LEAVES, nodesAt, pageHash, pageNumber, sha256, TREES, ZERO_HASH } from './layout';
import { ENTRY_RANGE, META_KEY, PAGE_RANGE, parseNodeKey, type MerkleDb } from './store';

/** Vault's merkle-check answer (its field names). */
export interface CorruptionReport {
  merkle_corruption_report: {
    corrupted_root: boolean;
    /** By tree number: 1 the replicated tree, 2 the local one. */
    corrupted_tree_map: Record<string, {
      tree_type: KeyClass;
      corrupted_subtree_root: boolean;
      /** By page number (layout.ts): the subpages whose stored hash is not that of what is below. */
      corrupted_index_tuples_map: Record<string, { corrupted: boolean; subpages: number[] }>;
    }>;
    last_corruption_check_epoch: string;
  };
}

/**
 * Checks the stored tree against itself: recomputes every page bottom-up from the stored entries
 * alone and compares each stored page with its recomputation, subpage by subpage, then
 * the checkpoint's subtree and composite roots with the recomputed ones. Reads one LevelDB
 * snapshot, so flushes may go on; the caller flushes first for the check to cover the tree as
 * applied. A damaged page shows as itself; a damaged entry as its leaf's whole path up to the roots.
 */
export async function checkStoredTree(db: MerkleDb, epoch: string): Promise<CorruptionReport> {
  const snapshot = db.snapshot();
  try {
    const leaves = TREES.map(() => Buffer.alloc(LEAVES * HASH_BYTES));
    for await (const [key, hash] of db.iterator({ ...ENTRY_RANGE, snapshot })) {
      const { tree, n } = parseNodeKey(key);
      // An entry of the wrong length counts as some other hash: its leaf shows as damaged.
      if (tree < TREES.length && n < LEAVES) addToSum(leaves[tree]!.subarray(n * HASH_BYTES, (n + 1) * HASH_BYTES), hash.length === HASH_BYTES ? hash : sha256(hash));
    }
    const stored = new Map<string, Buffer>();
    for await (const [key, content] of db.iterator({ ...PAGE_RANGE, snapshot })) stored.set(key.slice(1), content);
    const metaRaw = await db.get(META_KEY, { snapshot });
    const meta = parseMeta(metaRaw);

    const span = FANOUT * HASH_BYTES;
    const roots: Buffer[] = [];
    const report: CorruptionReport['merkle_corruption_report'] = {
      corrupted_root: false, corrupted_tree_map: {}, last_corruption_check_epoch: epoch,
    };
    for (let t = 0; t < TREES.length; t++) {
      const pages: Record<string, { corrupted: boolean; subpages: number[] }> = {};
      let below = leaves[t]!;
      for (let level = LEAF_LEVEL - 1; level >= 0; level--) {
        const hashes = Buffer.alloc(nodesAt(level) * HASH_BYTES);
        for (let n = 0; n < nodesAt(level); n++) {
          const expected = below.subarray(n * span, (n + 1) * span);
          pageHash(expected).copy(hashes, n * HASH_BYTES);
          const page = pageNumber(level, n);
          const content = stored.get(`${t}${page.toString(16).padStart(4, '0')}`) ?? Buffer.alloc(span);
          const subpages: number[] = [];
          for (let i = 0; i < FANOUT; i++) {
            const want = expected.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES);
            const have = content.subarray(i * HASH_BYTES, (i + 1) * HASH_BYTES);
            if (!want.equals(have)) subpages.push(i);
          }
          if (subpages.length > 0) pages[String(page)] = { corrupted: true, subpages };
        }
        below = hashes;
      }
      roots.push(below);
      const subtreeCorrupt = meta?.roots[t] !== below.toString('hex');
      report.corrupted_tree_map[String(t + 1)] = { tree_type: TREES[t]!, corrupted_subtree_root: subtreeCorrupt, corrupted_index_tuples_map: pages };
    }
    report.corrupted_root = meta?.root !== compositeRoot(roots[0]!, roots[1]!).toString('hex');
    return { merkle_corruption_report: report };
  } finally {
    await snapshot.close();
  }
}

/** Whether a report found anything. */
export function isCorrupt(report: CorruptionReport): boolean {
  const r = report.merkle_corruption_report;
  return r.corrupted_root || Object.values(r.corrupted_tree_map).some((t) => t.corrupted_subtree_root || Object.keys(t.corrupted_index_tuples_map).length > 0);
}

function parseMeta(raw: Buffer | undefined): { roots: string[]; root: string } | undefined {
  // Nothing flushed yet: the empty tree's roots.
  if (!raw) return { roots: [ZERO_HASH.toString('hex'), ZERO_HASH.toString('hex')], root: compositeRoot(ZERO_HASH, ZERO_HASH).toString('hex') };
  try {
    const meta = JSON.parse(raw.toString('utf8')) as { roots?: unknown; root?: unknown };
    if (Array.isArray(meta.roots) && typeof meta.root === 'string') return { roots: meta.roots.map(String), root: meta.root };
  } catch {
    // Unreadable: reported as corrupted roots.
  }
  return undefined;
}
