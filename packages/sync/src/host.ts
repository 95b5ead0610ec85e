import type { LogicalChange } from '@strongroom/core';

/** A mount as sync refers to it: associations name it by accessor, which no remount changes. */
export interface SyncMount {
  namespaceId: string;
  /** '' for the root namespace. */
  namespacePath: string;
  /** With a trailing slash, as the mount table has it. */
  path: string;
  type: string;
  accessor: string;
  options: Record<string, string>;
}

/** The mount tables, as the associations API and the queue read them. */
export interface SyncMounts {
  byPath(namespaceId: string, path: string): SyncMount | undefined;
  byAccessor(accessor: string): SyncMount | undefined;
  /** Whether a namespace still exists, as storage has it. Absent: no destination is ever taken for a deleted namespace's. */
  namespaceExists?(namespaceId: string): Promise<boolean>;
}

export function isKvV2(mount: SyncMount): boolean {
  return mount.type === 'kv' && mount.options['version'] === '2';
}

/**
 * A KV v2 secret as sync acts on it: the current version's data when that version is readable,
 * otherwise gone (deleted, destroyed, never written, or its metadata deleted).
 */
export type SecretState =
  | { live: true; version: number; createdTime: number; data: Record<string, unknown> }
  | { live: false };

/** Reads the current state of a KV v2 secret (the server wires the KV engine's storage in). */
export interface SecretReader {
  read(mount: SyncMount, secretName: string): Promise<SecretState>;
}

/**
 * The commit feed's logical view on the active node (`followLogical` over the cluster's feed): every
 * change from `from` on, in order, without gap or repeat, until `signal` aborts. Throws a
 * StrongroomError with code `raft_changes_not_retained` when `from` has left the retained window.
 */
export interface SyncFeed {
  /** The index of the last change applied on this node. */
  applied(): number;
  follow(from: number, signal: AbortSignal): AsyncIterable<LogicalChange[]>;
}

/** The code the feed's window error carries; sync may not import the Raft package that defines it. */
export const CHANGES_NOT_RETAINED = 'raft_changes_not_retained';
