export { FakeClock, systemClock } from './clock';
export type { Clock, TimerHandle } from './clock';
export { createLogger, silentLogger } from './logger';
export type { Logger } from './logger';
export { StrongroomError } from './errors';
export { childrenOf } from './storage';
export type { Storage, TxnOp } from './storage';
export { runStorageConformance } from './storage-conformance';
export type { ConformanceSubject } from './storage-conformance';
