import type { Clock } from '../clock';
import type { DescribeChange } from '../logical-change';
import type { Logger } from '../logger';
import type { Backend } from './backend';

/** What core hands an engine when it mounts it. */
export interface EngineContext {
  clock: Clock;
  logger: Logger;
}

/** A mountable engine type: `kv`, `transit`, ... for secrets; `cloud1`, ... for auth. */
export interface EngineFactory {
  type: string;
  kind: 'secret' | 'auth';
  create(ctx: EngineContext): Backend;
  /** Reads the changes the commit feed carries for this engine's mounts (see Core.logicalChange). */
  describeChange?: DescribeChange;
}
