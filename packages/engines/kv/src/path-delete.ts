import { definePath, jsonOp, type BackendRequest, type FieldData, type PathDefinition, type TxnOp } from '@strongroom/core';
import {
  isDeleted, loadMetadata, metaKey, parseVersionList, requireSecretPath, versionKey, withSecretLock,
  type KvContext, type SecretMetadata,
} from './secret-store';

/** Soft-deletes the given versions; returns the ones that changed (already-deleted ones do not). */
export function markDeleted(meta: SecretMetadata, versions: readonly number[], now: number): number[] {
  const changed: number[] = [];
  for (const v of versions) {
    const record = meta.versions[String(v)];
    if (!record || isDeleted(record, now)) continue;
    record.deletionTime = now;
    changed.push(v);
  }
  return changed;
}

/** Clears deletion, including a scheduled auto-deletion; destroyed versions have nothing to restore. */
export function markUndeleted(meta: SecretMetadata, versions: readonly number[]): number[] {
  const changed: number[] = [];
  for (const v of versions) {
    const record = meta.versions[String(v)];
    if (!record || record.destroyed || record.deletionTime === null) continue;
    record.deletionTime = null;
    changed.push(v);
  }
  return changed;
}

export function markDestroyed(meta: SecretMetadata, versions: readonly number[]): number[] {
  const changed: number[] = [];
  for (const v of versions) {
    const record = meta.versions[String(v)];
    if (!record || record.destroyed) continue;
    record.destroyed = true;
    changed.push(v);
  }
  return changed;
}

type Change = (meta: SecretMetadata, versions: number[], now: number, path: string) => { changed: number[]; extraOps: TxnOp[] };

/**
 * Shared shape of delete/undelete/destroy: versions that do not exist are skipped silently and
 * a secret without metadata is a no-op, both answered 204 as Vault does.
 */
function versionOp(ctx: KvContext, change: Change) {
  return async (req: BackendRequest, fields: FieldData) => {
    const path = requireSecretPath(fields.string('path'));
    const versions = parseVersionList(fields);
    await withSecretLock(ctx, req, path, async () => {
      const meta = await loadMetadata(req.storage, path);
      if (!meta) return;
      const { changed, extraOps } = change(meta, versions, ctx.clock.now(), path);
      if (changed.length === 0) return;
      await req.storage.txn([jsonOp(metaKey(path), meta), ...extraOps]);
    });
    return null;
  };
}

const versionsField = {
  path: { type: 'string' as const },
  versions: { type: 'any' as const, description: 'Version numbers to act on, as a list or a comma-separated string.' },
};

/** `delete/`, `undelete/` and `destroy/`: state changes of specific versions. */
export function deletePaths(ctx: KvContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'delete/(?<path>.+)',
      fields: versionsField,
      operations: {
        update: versionOp(ctx, (meta, versions, now) => ({ changed: markDeleted(meta, versions, now), extraOps: [] })),
      },
      help: 'Soft-deletes versions: their data stays and undelete/ restores it.',
    }),
    definePath({
      pattern: 'undelete/(?<path>.+)',
      fields: versionsField,
      operations: {
        update: versionOp(ctx, (meta, versions) => ({ changed: markUndeleted(meta, versions), extraOps: [] })),
      },
      help: 'Restores soft-deleted versions.',
    }),
    definePath({
      pattern: 'destroy/(?<path>.+)',
      fields: versionsField,
      operations: {
        update: versionOp(ctx, (meta, versions, _now, path) => {
          const changed = markDestroyed(meta, versions);
          // The data goes in the same transaction as the flag, so "destroyed" always means gone.
          return { changed, extraOps: changed.map((v): TxnOp => ({ type: 'delete', key: versionKey(path, v) })) };
        }),
      },
      help: 'Permanently removes the data of versions; their metadata stays, marked destroyed.',
    }),
  ];
}
