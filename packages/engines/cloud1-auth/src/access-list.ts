import { getJson, KeyedMutex, putJson, type LogicalStorage } from '@strongroom/core';
import { KEYS } from './storage-keys';

/** What the service remembers of an instance after a `vm` login. Times are ms since epoch. */
export interface AccessListEntry {
  role: string;
  /** The nonce a reauthentication must present ('' when reauthentication is disabled). */
  clientNonce: string;
  creationTime: number;
  disallowReauthentication: boolean;
  /** The identity document's pendingTime at the last login (RFC 3339). */
  pendingTime: string;
  expirationTime: number;
  lastUpdatedTime: number;
}

/**
 * Serializes the read-check-write sections on one instance's entry (a login's nonce check, a
 * renewal's extension, tidy's removal), per mount. Shared by every backend instance of the
 * process, because core runs renewal checks on an instance of its own; the active node is the
 * only writer, so an in-process lock suffices.
 */
const entryLocks = new KeyedMutex();

export function withAccessListEntry<T>(mountUuid: string, instanceId: string, fn: () => Promise<T>): Promise<T> {
  return entryLocks.run(`${mountUuid}/${instanceId}`, fn);
}

export function readAccessListEntry(storage: LogicalStorage, instanceId: string): Promise<AccessListEntry | null> {
  return getJson<AccessListEntry>(storage, KEYS.accessListPrefix + instanceId);
}

export function writeAccessListEntry(storage: LogicalStorage, instanceId: string, entry: AccessListEntry): Promise<void> {
  return putJson(storage, KEYS.accessListPrefix + instanceId, entry);
}

/** Read shows everything but the nonce, which is the instance's credential for reauthentication. */
export function accessListView(entry: AccessListEntry): Record<string, unknown> {
  return {
    role: entry.role,
    creation_time: new Date(entry.creationTime).toISOString(),
    disallow_reauthentication: entry.disallowReauthentication,
    pending_time: entry.pendingTime,
    expiration_time: new Date(entry.expirationTime).toISOString(),
    last_updated_time: new Date(entry.lastUpdatedTime).toISOString(),
  };
}

/** A deny-listed role tag. */
export interface DenyListEntry {
  creationTime: number;
  expirationTime: number;
}

export function denyListKey(tagValue: string): string {
  return KEYS.denyListPrefix + Buffer.from(tagValue, 'utf8').toString('base64url');
}

/** The tag a deny list key was made from (the last segment of `denyListKey`). */
export function tagValueOfKey(key: string): string {
  return Buffer.from(key, 'base64url').toString('utf8');
}

export function readDenyListEntry(storage: LogicalStorage, tagValue: string): Promise<DenyListEntry | null> {
  return getJson<DenyListEntry>(storage, denyListKey(tagValue));
}
