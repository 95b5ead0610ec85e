import type { ConfChange, ConfState, NodeId } from './types';

/*
 * Membership changes travel inside `conf` log entries. The encoding is a small fixed binary
 * layout rather than JSON so that `context` (arbitrary bytes) needs no base64 step:
 *
 *   u8 version (1) | u8 type | u32 node byte length | node (UTF-8) | u8 has-context | context...
 */

const VERSION = 1;
const TYPE_CODES: Readonly<Record<ConfChange['type'], number>> = { addLearner: 1, promote: 2, remove: 3 };
const TYPES_BY_CODE: readonly (ConfChange['type'] | undefined)[] = [undefined, 'addLearner', 'promote', 'remove'];

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeConfChange(cc: ConfChange): Uint8Array {
  const node = utf8Encoder.encode(cc.node);
  const context = cc.context;
  const out = new Uint8Array(2 + 4 + node.length + 1 + (context?.length ?? 0));
  const view = new DataView(out.buffer);
  out[0] = VERSION;
  out[1] = TYPE_CODES[cc.type];
  view.setUint32(2, node.length);
  out.set(node, 6);
  out[6 + node.length] = context === undefined ? 0 : 1;
  if (context !== undefined) out.set(context, 7 + node.length);
  return out;
}

/** Throws on bytes that `encodeConfChange` did not produce. */
export function decodeConfChange(data: Uint8Array): ConfChange {
  if (data.length < 7 || data[0] !== VERSION) throw new Error('not an encoded ConfChange');
  const type = TYPES_BY_CODE[data[1] ?? 0];
  if (type === undefined) throw new Error(`unknown ConfChange type ${data[1]}`);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const nodeLength = view.getUint32(2);
  if (7 + nodeLength > data.length) throw new Error('truncated ConfChange');
  const node = utf8Decoder.decode(data.subarray(6, 6 + nodeLength));
  const hasContext = data[6 + nodeLength];
  if (hasContext === 0) {
    if (data.length !== 7 + nodeLength) throw new Error('trailing bytes after ConfChange');
    return { type, node };
  }
  if (hasContext !== 1) throw new Error('bad ConfChange context flag');
  return { type, node, context: data.slice(7 + nodeLength) };
}

/** Why `cc` cannot be applied to `conf`, or null when it can. */
export function confChangeProblem(conf: ConfState, cc: ConfChange): string | null {
  const isVoter = conf.voters.includes(cc.node);
  const isLearner = conf.learners.includes(cc.node);
  switch (cc.type) {
    case 'addLearner':
      return isVoter || isLearner ? `${cc.node} is already a member` : null;
    case 'promote':
      return isLearner ? null : `${cc.node} is not a learner`;
    case 'remove':
      if (!isVoter && !isLearner) return `${cc.node} is not a member`;
      return isVoter && conf.voters.length === 1 ? `${cc.node} is the last voter` : null;
  }
}

/** A new ConfState with `cc` applied; the caller has checked `confChangeProblem`. Never mutates `conf`. */
export function applyConfChange(conf: ConfState, cc: ConfChange): ConfState {
  const without = (ids: NodeId[]): NodeId[] => ids.filter((id) => id !== cc.node);
  switch (cc.type) {
    case 'addLearner':
      return { voters: [...conf.voters], learners: [...conf.learners, cc.node] };
    case 'promote':
      return { voters: [...conf.voters, cc.node], learners: without(conf.learners) };
    case 'remove':
      return { voters: without(conf.voters), learners: without(conf.learners) };
  }
}

export function cloneConfState(conf: ConfState): ConfState {
  return { voters: [...conf.voters], learners: [...conf.learners] };
}
