import type { DescribeChange, EngineChange } from '@strongroom/core';
import { META_PREFIX, type SecretMetadata, type VersionRecord } from './secret-store';

/**
 * A committed change to one KV v2 secret's metadata, as the commit feed's logical view gives it:
 * every write, delete, undelete and destroy of a version rewrites the metadata, and a metadata
 * delete removes it. So the state after the change, not the kind of request that made it, is
 * what a reader (secret sync) acts on: the current version and which versions are deleted or
 * destroyed. `deletionTime` may lie ahead (`delete_version_after`).
 */
export interface KvSecretChange extends EngineChange {
  kind: 'kv-secret';
  /** The secret's path within its mount. */
  path: string;
  /** Null when the metadata, and with it every version, was deleted. */
  metadata: { currentVersion: number; versions: Record<string, VersionRecord> } | null;
}

export const describeKvChange: DescribeChange = (mount, relativeKey, value) => {
  if (mount.options['version'] !== '2' || !relativeKey.startsWith(META_PREFIX)) return undefined;
  const path = relativeKey.slice(META_PREFIX.length);
  const plain = value();
  if (plain === null) return { kind: 'kv-secret', path, metadata: null } satisfies KvSecretChange;
  const meta = JSON.parse(plain.toString('utf8')) as SecretMetadata;
  return { kind: 'kv-secret', path, metadata: { currentVersion: meta.currentVersion, versions: meta.versions } } satisfies KvSecretChange;
};
