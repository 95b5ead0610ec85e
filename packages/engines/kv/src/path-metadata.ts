import {
  BadRequestError, NotFoundError, convertField, definePath, jsonOp,
  type BackendRequest, type FieldData, type PathDefinition, type TxnOp,
} from '@strongroom/core';
import { isPlainObject } from './merge-patch';
import {
  META_PREFIX, loadMetadata, metaKey, metadataView, newMetadata, parseDeleteAfter, parseMaxVersions,
  requireSecretPath, validateCustomMetadata, versionDataKeys, withSecretLock, type KvContext, type SecretMetadata,
} from './secret-store';

interface MetadataChanges {
  maxVersions?: number;
  casRequired?: boolean;
  deleteVersionAfter?: number;
  /** Replaces the whole map (POST). */
  customMetadata?: Record<string, string> | null;
  /** Merges into the map, null removing a key (PATCH). */
  customMetadataPatch?: Record<string, string | null>;
}

/** Validates everything before the lock is taken, so a bad request never half-applies. */
function parseChanges(fields: FieldData, mode: 'replace' | 'merge'): MetadataChanges {
  const changes: MetadataChanges = {};
  const maxVersions = parseMaxVersions(fields);
  if (maxVersions !== undefined) changes.maxVersions = maxVersions;
  if (fields.has('cas_required')) changes.casRequired = fields.bool('cas_required');
  if (fields.has('delete_version_after')) changes.deleteVersionAfter = parseDeleteAfter('delete_version_after', fields.get('delete_version_after'));
  const raw = fields.get('custom_metadata');
  if (mode === 'replace') {
    if (fields.has('custom_metadata')) {
      changes.customMetadata = validateCustomMetadata(convertField('custom_metadata', { type: 'string-map' }, raw) as Record<string, string>);
    }
  } else if (fields.has('custom_metadata')) {
    if (!isPlainObject(raw)) throw new BadRequestError('invalid value for "custom_metadata": expected an object of string values (null removes a key)');
    for (const [k, v] of Object.entries(raw)) {
      if (v !== null && typeof v !== 'string') {
        throw new BadRequestError(`invalid value for "custom_metadata": the value of key "${k}" must be a string, or null to remove the key`);
      }
    }
    changes.customMetadataPatch = raw as Record<string, string | null>;
  } else if (Object.hasOwn(fields.raw, 'custom_metadata') && fields.raw['custom_metadata'] === null) {
    // A merge patch's null at the top level removes the whole map.
    changes.customMetadata = null;
  }
  return changes;
}

function applyChanges(meta: SecretMetadata, changes: MetadataChanges): void {
  if (changes.maxVersions !== undefined) meta.maxVersions = changes.maxVersions;
  if (changes.casRequired !== undefined) meta.casRequired = changes.casRequired;
  if (changes.deleteVersionAfter !== undefined) meta.deleteVersionAfter = changes.deleteVersionAfter;
  if (changes.customMetadata !== undefined) meta.customMetadata = changes.customMetadata;
  if (changes.customMetadataPatch) {
    const merged: Record<string, string> = { ...(meta.customMetadata ?? {}) };
    for (const [k, v] of Object.entries(changes.customMetadataPatch)) {
      if (v === null) delete merged[k];
      else Object.defineProperty(merged, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
    meta.customMetadata = validateCustomMetadata(merged);
  }
}

function writeMetadata(ctx: KvContext, mode: 'replace' | 'merge') {
  return async (req: BackendRequest, fields: FieldData) => {
    const path = requireSecretPath(fields.string('path'));
    const changes = parseChanges(fields, mode);
    await withSecretLock(ctx, req, path, async () => {
      const now = ctx.clock.now();
      const existing = await loadMetadata(req.storage, path);
      if (!existing && mode === 'merge') throw new NotFoundError();
      const meta = existing ?? newMetadata(now);
      applyChanges(meta, changes);
      meta.updatedTime = now;
      await req.storage.txn([jsonOp(metaKey(path), meta)]);
    });
    return null;
  };
}

/** `metadata/<path>`: a secret's settings and version history; LIST browses the folders. */
export function metadataPaths(ctx: KvContext): PathDefinition[] {
  return [
    definePath({
      // Optional slash and path so that LIST works on the mount's root as well.
      pattern: 'metadata(?:/(?<path>.*))?',
      fields: {
        path: { type: 'string', description: 'Secret path, or a folder for LIST.' },
        max_versions: { type: 'int', description: 'Versions kept for this secret; 0 defers to the mount.' },
        cas_required: { type: 'bool', description: 'Writes to this secret must carry options.cas.' },
        delete_version_after: { type: 'any', description: 'Duration after which new versions read as deleted.' },
        custom_metadata: { type: 'any', description: 'String map describing the secret (at most 64 keys).' },
      },
      existenceCheck: async (req, fields) => {
        const path = fields.string('path');
        return path !== '' && (await loadMetadata(req.storage, path)) !== null;
      },
      operations: {
        async read(req, fields) {
          const path = fields.string('path');
          const meta = path === '' ? null : await loadMetadata(req.storage, path);
          if (!meta) throw new NotFoundError();
          return { data: metadataView(meta) };
        },

        async list(req, fields) {
          let dir = fields.string('path');
          if (dir !== '' && !dir.endsWith('/')) dir += '/';
          return { data: { keys: await req.storage.list(META_PREFIX + dir) } };
        },

        update: writeMetadata(ctx, 'replace'),
        patch: writeMetadata(ctx, 'merge'),

        async delete(req, fields) {
          const path = requireSecretPath(fields.string('path'));
          await withSecretLock(ctx, req, path, async () => {
            const meta = await loadMetadata(req.storage, path);
            if (!meta) return;
            const dataKeys = await versionDataKeys(req.storage, path);
            await req.storage.txn([
              { type: 'delete', key: metaKey(path) },
              ...dataKeys.map((key): TxnOp => ({ type: 'delete', key })),
            ]);
          });
          return null;
        },
      },
      help: 'Reads and writes a secret\'s settings and version history; DELETE removes the secret and all its versions.',
    }),
  ];
}
