import { ciphertextPrefix } from './codec';
import { sealThread } from './crypto';
import { seal, type SealJob } from './encryption';

/** Items a batch must have before it shares its encryption with the helper thread. */
export const SHARED_BATCH_MIN_ITEMS = 64;

/** The helper thread's share of a shared batch: it has less to do besides (no JSON, no request). */
const HELPER_SHARE = 0.7;

/** One prepared item's ciphertext, or why it could not be sealed. */
export type SealOutcome = { ciphertext: string } | { error: unknown };

function sealHere(job: SealJob): SealOutcome {
  try {
    return { ciphertext: seal(job) };
  } catch (error) {
    return { error };
  }
}

/**
 * Seals a batch's prepared items, in order. With enough items under one key and fresh random
 * nonces (the common case), part of them go to the helper thread while this thread seals the
 * rest; if the helper fails, this thread seals its part too. `undefined` jobs (items that
 * failed earlier) are skipped.
 */
export async function sealBatch(jobs: ReadonlyArray<SealJob | undefined>): Promise<Array<SealOutcome | undefined>> {
  const out = new Array<SealOutcome | undefined>(jobs.length);
  // The helper takes items of one key (a key version's bytes are one Buffer): the largest group.
  const byKey = new Map<Buffer, number[]>();
  let shareable: number[] = [];
  for (let i = 0; i < jobs.length; i++) {
    const job = jobs[i];
    if (!job || job.nonce || !job.includeNonce || (job.associatedData && job.associatedData.length > 0)) continue;
    let group = byKey.get(job.key);
    if (!group) byKey.set(job.key, (group = []));
    group.push(i);
    if (group.length > shareable.length) shareable = group;
  }
  const first = shareable.length > 0 ? jobs[shareable[0] as number] : undefined;
  const handed = first && shareable.length >= SHARED_BATCH_MIN_ITEMS
    ? shareable.slice(Math.floor(shareable.length * (1 - HELPER_SHARE)))
    : [];
  const onHelper = new Uint8Array(jobs.length);
  for (const i of handed) onHelper[i] = 1;
  const helping = first && handed.length > 0
    ? sealThread.seal(first.type, first.key, ciphertextPrefix(first.version), handed.map((i) => (jobs[i] as SealJob).plaintext)).catch(() => null)
    : null;
  for (let i = 0; i < jobs.length; i++) {
    const job = jobs[i];
    if (job && !onHelper[i]) out[i] = sealHere(job);
  }
  if (helping) {
    const sealed = await helping;
    for (let k = 0; k < handed.length; k++) {
      const i = handed[k] as number;
      const ciphertext = sealed?.[k];
      out[i] = ciphertext !== undefined ? { ciphertext } : sealHere(jobs[i] as SealJob);
    }
  }
  return out;
}
