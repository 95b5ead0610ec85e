/**
 * What every query-protocol action handler receives, and the shape of an action table. A table
 * maps the `Action` parameter to a handler that returns the fields of `<ActionResult>` (or
 * nothing, for actions whose response carries only ResponseMetadata).
 */
import type { Params } from './query';
import type { Account, Cloud1State, KeyRecord, Principal } from './state';
import type { XmlObject } from './xml';

export interface CallContext {
  state: Cloud1State;
  params: Params;
  /** Who signed the request, and with which kind of key. */
  caller: Principal;
  record: KeyRecord;
  /** The caller's account: the one IAM and EC2 calls act on. */
  account: Account;
  /** Region from the credential scope. */
  region: string;
  now: number;
}

export type ActionHandler = (ctx: CallContext) => XmlObject | undefined;
export type ActionTable = ReadonlyMap<string, ActionHandler>;
