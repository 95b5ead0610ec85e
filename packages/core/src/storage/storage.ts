export { childrenOf } from '@strongroom/base';
export type { Storage, TxnOp } from '@strongroom/base';
