/**
 * Calls the members make to each other about membership itself, over the same mutual-TLS call
 * channel that carries forwarded requests:
 *  - `probe`: "who are you?", answered with the node ID. A join sends one each way, so that a
 *    member is added only once the leader and the new node have reached each other's cluster_addr.
 *  - `echo`: a follower tells the leader, every few ticks, whether it is sealed; autopilot
 *    promotes only a member that says it is unsealed.
 *  - `withdraw`: a node whose join failed after it was added asks the leader to remove it again.
 *
 * A control frame starts with four 0xff bytes. A forwarded request starts with the length of its
 * head, and no head is 4 GiB long, so neither is ever taken for the other.
 */

const MAGIC = Buffer.from([0xff, 0xff, 0xff, 0xff]);

export type ControlCall =
  | { kind: 'probe' }
  | { kind: 'echo'; id: string; sealed: boolean }
  | { kind: 'withdraw'; id: string };

export function encodeControl(call: ControlCall): Buffer {
  return Buffer.concat([MAGIC, Buffer.from(JSON.stringify(call))]);
}

/** The control call in `payload`, or null when it is not one (a forwarded request). */
export function decodeControl(payload: Buffer): ControlCall | null {
  if (payload.length < MAGIC.length || !payload.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const v = JSON.parse(payload.subarray(MAGIC.length).toString('utf8')) as Record<string, unknown> | null;
  if (v === null || typeof v !== 'object') throw new Error('a control call is not an object');
  switch (v['kind']) {
    case 'probe':
      return { kind: 'probe' };
    case 'echo':
      if (typeof v['id'] !== 'string' || typeof v['sealed'] !== 'boolean') throw new Error('an echo needs an id and a sealed flag');
      return { kind: 'echo', id: v['id'], sealed: v['sealed'] };
    case 'withdraw':
      if (typeof v['id'] !== 'string') throw new Error('a withdrawal needs an id');
      return { kind: 'withdraw', id: v['id'] };
    default:
      throw new Error('unknown control call');
  }
}

/** The answer to a control call: the answering node's ID. */
export function encodeControlAnswer(id: string): Buffer {
  return Buffer.from(JSON.stringify({ id }));
}

export function decodeControlAnswer(payload: Buffer): string {
  const v = JSON.parse(payload.toString('utf8')) as { id?: unknown } | null;
  if (typeof v?.id !== 'string') throw new Error('the answer carries no node ID');
  return v.id;
}

/** Rejects once `ms` pass without `promise` settling; the work itself is not cancelled. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms from ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
