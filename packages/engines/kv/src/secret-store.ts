import { hash } from 'node:crypto';
import {
  BadRequestError, NotFoundError, collectKeys, convertField, formatDuration, getJson, parseDurationSeconds,
  type BackendRequest, type Clock, type FieldData, type LogicalStorage,
} from '@strongroom/core';
import type { KeyedMutex } from '@strongroom/core';

/** What every KV v2 path handler shares: one instance per mounted backend. */
export interface KvContext {
  clock: Clock;
  locks: KeyedMutex;
}

/** Versions kept per secret when neither the mount config nor the secret sets a limit. */
export const DEFAULT_MAX_VERSIONS = 10;

export interface KvConfig {
  maxVersions: number;
  casRequired: boolean;
  /** Seconds; 0 = unset, negative = auto-deletion disabled for every secret of the mount. */
  deleteVersionAfter: number;
}

export interface VersionRecord {
  createdTime: number;
  /** Epoch ms; may lie in the future when delete_version_after scheduled it at write time. */
  deletionTime: number | null;
  destroyed: boolean;
}

export interface SecretMetadata {
  createdTime: number;
  updatedTime: number;
  currentVersion: number;
  /** 0 until trimming first removes a version, as Vault reports it. */
  oldestVersion: number;
  maxVersions: number;
  casRequired: boolean;
  deleteVersionAfter: number;
  customMetadata: Record<string, string> | null;
  versions: Record<string, VersionRecord>;
}

export type SecretData = Record<string, unknown>;

// Storage layout under the mount's private storage:
//   config                      mount-wide KvConfig
//   meta/<secret path>          SecretMetadata, so list('meta/<dir>/') is the metadata LIST answer
//   versions/<sha256>/<n>       version n's data; hashing keeps `a` and `a/1` from sharing a subtree
//   v1/<path>                   KV version 1 entries
export const CONFIG_KEY = 'config';
export const META_PREFIX = 'meta/';
const VERSIONS_PREFIX = 'versions/';

export function metaKey(path: string): string {
  return META_PREFIX + path;
}

export function versionDir(path: string): string {
  return `${VERSIONS_PREFIX}${hash('sha256', path, 'hex')}/`;
}

export function versionKey(path: string, version: number): string {
  return versionDir(path) + String(version);
}

export async function loadConfig(storage: LogicalStorage): Promise<KvConfig> {
  const stored = await getJson<Partial<KvConfig>>(storage, CONFIG_KEY);
  return { maxVersions: stored?.maxVersions ?? 0, casRequired: stored?.casRequired ?? false, deleteVersionAfter: stored?.deleteVersionAfter ?? 0 };
}

export function loadMetadata(storage: LogicalStorage, path: string): Promise<SecretMetadata | null> {
  return getJson<SecretMetadata>(storage, metaKey(path));
}

export function loadVersionData(storage: LogicalStorage, path: string, version: number): Promise<SecretData | null> {
  return getJson<SecretData>(storage, versionKey(path, version));
}

/** Every stored version-data key of a secret, including any a crash might have orphaned. */
export function versionDataKeys(storage: LogicalStorage, path: string): Promise<string[]> {
  return collectKeys(storage, versionDir(path));
}

export function newMetadata(now: number): SecretMetadata {
  return {
    createdTime: now, updatedTime: now, currentVersion: 0, oldestVersion: 0, maxVersions: 0, casRequired: false,
    deleteVersionAfter: 0, customMetadata: null, versions: {},
  };
}

export function isDeleted(record: VersionRecord, now: number): boolean {
  return record.deletionTime !== null && record.deletionTime <= now;
}

/** A version whose data a reader may see: present, not destroyed, not (yet) deleted. */
export function isLive(record: VersionRecord | undefined, now: number): record is VersionRecord {
  return record !== undefined && !record.destroyed && !isDeleted(record, now);
}

/**
 * Vault keeps whichever limit is larger when both the mount and the secret set one (its
 * maintainers documented this in hashicorp/vault#22394), and 10 when neither does.
 */
export function effectiveMaxVersions(config: KvConfig, meta: SecretMetadata): number {
  const limits = [config.maxVersions, meta.maxVersions].filter((n) => n > 0);
  return limits.length === 0 ? DEFAULT_MAX_VERSIONS : Math.max(...limits);
}

/** Seconds until a new version auto-deletes, or 0 for never: the smaller positive setting wins. */
export function effectiveDeleteAfter(config: KvConfig, meta: SecretMetadata): number {
  if (config.deleteVersionAfter < 0 || meta.deleteVersionAfter < 0) return 0;
  const limits = [config.deleteVersionAfter, meta.deleteVersionAfter].filter((n) => n > 0);
  return limits.length === 0 ? 0 : Math.min(...limits);
}

/**
 * Drops the oldest versions beyond the limit from `meta` and returns their numbers so the
 * caller can delete their data in the same transaction.
 */
export function trimVersions(meta: SecretMetadata, limit: number): number[] {
  const present = Object.keys(meta.versions).map(Number).sort((a, b) => a - b);
  if (present.length <= limit) return [];
  const removed = present.slice(0, present.length - limit);
  for (const v of removed) delete meta.versions[String(v)];
  meta.oldestVersion = meta.currentVersion - limit + 1;
  return removed;
}

/** Go's RFC3339Nano as Vault prints it: fraction without trailing zeros, none when whole. */
export function formatTime(ms: number): string {
  const iso = new Date(ms).toISOString();
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 19)}${fraction === '' ? '' : `.${fraction}`}Z`;
}

export function formatSignedDuration(seconds: number): string {
  return seconds < 0 ? `-${formatDuration(-seconds)}` : formatDuration(seconds);
}

/**
 * Parses delete_version_after, which unlike other durations may be negative (Vault's way to
 * switch auto-deletion off). A negative value under a second still means "off", never "unset".
 */
export function parseDeleteAfter(name: string, value: unknown): number {
  const text = typeof value === 'string' ? value.trim() : value;
  const negative = (typeof text === 'number' && text < 0) || (typeof text === 'string' && text.startsWith('-'));
  const rest = negative ? (typeof text === 'number' ? -text : (text as string).slice(1)) : text;
  const magnitude = negative && rest === '' ? null : parseDurationSeconds(rest);
  if (magnitude === null) {
    throw new BadRequestError(`invalid value for "${name}": expected a duration such as "72h", "30m" or a number of seconds`);
  }
  return negative ? -Math.max(1, magnitude) : magnitude;
}

export function parseMaxVersions(fields: FieldData): number | undefined {
  if (!fields.has('max_versions')) return undefined;
  const n = fields.int('max_versions');
  if (n < 0) throw new BadRequestError('invalid value for "max_versions": must be zero (use the default) or a positive integer');
  return n;
}

/** A version number from the query (`version`), 0 meaning "the current one". */
export function parseVersionParam(fields: FieldData): number {
  const n = fields.int('version');
  if (n < 0) throw new BadRequestError('invalid value for "version": must be zero (the current version) or a positive integer');
  return n;
}

/** The `versions` body of delete/undelete/destroy: a non-empty list of version numbers. */
export function parseVersionList(fields: FieldData): number[] {
  const raw = fields.get('versions');
  // Vault also takes a bare number here, which the int-list conversion would refuse.
  const list = raw === undefined ? [] : (convertField('versions', { type: 'int-list' }, typeof raw === 'number' ? [raw] : raw) as number[]);
  if (list.length === 0) throw new BadRequestError('missing required field "versions": give one or more version numbers');
  for (const v of list) {
    if (v < 1) throw new BadRequestError(`invalid value for "versions": ${v} is not a version number (versions start at 1)`);
  }
  return [...new Set(list)].sort((a, b) => a - b);
}

/** A secret path a write may target: not empty, not a folder. */
export function requireSecretPath(path: string): string {
  if (path === '') throw new BadRequestError('missing secret path after the endpoint name');
  if (path.endsWith('/')) throw new BadRequestError(`invalid secret path "${path}": a secret path cannot end with "/"`);
  return path;
}

/** Serializes every read-modify-write of one secret's metadata. */
export function withSecretLock<T>(ctx: KvContext, req: BackendRequest, path: string, fn: () => Promise<T>): Promise<T> {
  return ctx.locks.run(`${req.mount.uuid}\u0000${path}`, fn);
}

export const CUSTOM_METADATA_LIMITS = { keys: 64, keyBytes: 128, valueBytes: 512 } as const;

/** Enforces Vault's custom_metadata limits; an empty map is stored as "none" (read back as null). */
export function validateCustomMetadata(map: Record<string, string>): Record<string, string> | null {
  const entries = Object.entries(map);
  if (entries.length > CUSTOM_METADATA_LIMITS.keys) {
    throw new BadRequestError(`invalid value for "custom_metadata": at most ${CUSTOM_METADATA_LIMITS.keys} keys are allowed, got ${entries.length}`);
  }
  for (const [key, value] of entries) {
    if (key === '') throw new BadRequestError('invalid value for "custom_metadata": keys cannot be empty');
    const keyBytes = Buffer.byteLength(key, 'utf8');
    if (keyBytes > CUSTOM_METADATA_LIMITS.keyBytes) {
      throw new BadRequestError(`invalid value for "custom_metadata": key "${key.slice(0, 32)}..." is ${keyBytes} bytes; keys may be at most ${CUSTOM_METADATA_LIMITS.keyBytes} bytes`);
    }
    const valueBytes = Buffer.byteLength(value, 'utf8');
    if (valueBytes > CUSTOM_METADATA_LIMITS.valueBytes) {
      throw new BadRequestError(`invalid value for "custom_metadata": the value of key "${key}" is ${valueBytes} bytes; values may be at most ${CUSTOM_METADATA_LIMITS.valueBytes} bytes`);
    }
  }
  return entries.length === 0 ? null : map;
}

/** The `metadata` object of data and subkeys replies for one version. */
export function versionView(meta: SecretMetadata, version: number, record: VersionRecord): Record<string, unknown> {
  return {
    created_time: formatTime(record.createdTime),
    custom_metadata: meta.customMetadata,
    deletion_time: record.deletionTime === null ? '' : formatTime(record.deletionTime),
    destroyed: record.destroyed,
    version,
  };
}

/**
 * One version of a secret as data and subkeys read it: `requested` 0 is the current version.
 * `data` is null where the version is deleted or destroyed, whose replies still carry the
 * metadata; a secret or version that never existed is a NotFoundError.
 */
export async function readVersion(
  ctx: KvContext, storage: LogicalStorage, path: string, requested: number,
): Promise<{ metadata: Record<string, unknown>; data: SecretData | null }> {
  const meta = await loadMetadata(storage, path);
  if (!meta) throw new NotFoundError();
  const version = requested === 0 ? meta.currentVersion : requested;
  const record = meta.versions[String(version)];
  if (!record) throw new NotFoundError();
  const metadata = versionView(meta, version, record);
  const data = isLive(record, ctx.clock.now()) ? await loadVersionData(storage, path, version) : null;
  return { metadata, data };
}

export function metadataView(meta: SecretMetadata): Record<string, unknown> {
  const versions: Record<string, unknown> = {};
  for (const [n, record] of Object.entries(meta.versions)) {
    versions[n] = {
      created_time: formatTime(record.createdTime),
      deletion_time: record.deletionTime === null ? '' : formatTime(record.deletionTime),
      destroyed: record.destroyed,
    };
  }
  return {
    cas_required: meta.casRequired,
    created_time: formatTime(meta.createdTime),
    current_version: meta.currentVersion,
    custom_metadata: meta.customMetadata,
    delete_version_after: formatSignedDuration(meta.deleteVersionAfter),
    max_versions: meta.maxVersions,
    oldest_version: meta.oldestVersion,
    updated_time: formatTime(meta.updatedTime),
    versions,
  };
}

/** Converts one value nested in an object field, naming it the way clients wrote it. */
export function nestedInt(name: string, value: unknown): number {
  return convertField(name, { type: 'int' }, value) as number;
}
