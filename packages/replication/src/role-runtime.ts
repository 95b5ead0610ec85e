import type { Advert } from '@strongroom/cluster';
import type { PathsFilter, PrimaryLink, RoleState } from './role-state';
import type { ForwardRequest, ForwardResult } from './wire/types';

/** A secondary's view of its link, for status. */
export interface SecondaryLive {
  state: 'stream-wals' | 'merkle-diff' | 'merkle-sync' | 'idle';
  connectionState: 'ready' | 'connecting' | 'disconnected';
  lastRemoteWal: number;
  primaryClusterAddr: string;
  lastStart: string;
  primaries: Array<Record<string, unknown>>;
}

/** What runs on the node that leads: the primary's WAL service, or the secondary's stream. */
export interface RoleRuntime {
  stateChanged(state: RoleState): void;
  /** The primary's last WAL: the newest change to the replicated key space. */
  lastWal(): number;
  secondaries(): Array<Record<string, unknown>>;
  secondaryStatus(): SecondaryLive | null;
  /** Ends the streams of a revoked secondary. */
  disconnect(id: string): void;
  /** Spends a new activation at the primary (its first call with the new certificate). */
  activate(link: PrimaryLink, self: Advert): Promise<void>;
  /** Pings the addresses one at a time; the first of the set that answers. */
  pickPrimary(link: PrimaryLink, addrs: string[]): Promise<string>;
  /** Performance secondary: the primary's filter for it, as last told. */
  pathsFilter(): PathsFilter | null;
  /** Performance secondary: a write run on the primary, answered once it streamed back (or with a warning after 2 s). */
  forwardWrite(request: ForwardRequest): Promise<ForwardResult & { warnings: string[] }>;
}
