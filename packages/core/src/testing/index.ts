/**
 * Core's test rig, public so that the tests of the packages above core (engines, the server)
 * drive a real Core through this package's surface rather than reaching into its folders.
 */
export { START, callCore, data, failure, newCore, okCore, rig } from './core-rig';
export type { Body, CoreSetup, Failure, Reply, Rig, RigOptions } from './core-rig';
/** Rebuilds the root key from key shares, for tests that look for it where it must never be. */
export { combineShares } from '../seal/shamir';
