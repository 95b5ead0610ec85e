import { canaryPath, type Ack } from './canary-load';
import { call, errorsOf } from '../node-api';

/**
 * Reads every acknowledged canary on `addr`, a few at a time, and answers those missing or
 * holding another write's nonce (an older one under the same seq from an earlier drill), in seq
 * order. A read that fails for another reason fails the check rather than counting as lost.
 */
export async function verifyCanaries(addr: string, token: string, acks: Ack[], concurrency: number): Promise<Ack[]> {
  const missing: Ack[] = [];
  let i = 0;
  const read = async (seq: number) => {
    const r = await call(addr, 'GET', canaryPath(seq), { token }).catch(() => null);
    return r === null || r.status >= 500 ? call(addr, 'GET', canaryPath(seq), { token }) : r;
  };
  const worker = async () => {
    while (i < acks.length) {
      const ack = acks[i++] as Ack;
      const r = await read(ack.seq);
      if (r.status !== 200 && r.status !== 404) throw new Error(`reading canary-${ack.seq} answered ${errorsOf(r)}`);
      const data = r.status === 200 ? r.json?.data?.data : null;
      if (!data || data.seq !== ack.seq || data.nonce !== ack.nonce) missing.push(ack);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, 16)) }, worker));
  return missing.sort((a, b) => a.seq - b.seq);
}
