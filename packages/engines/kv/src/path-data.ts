import {
  BadRequestError, NotFoundError, definePath, jsonOp,
  type BackendRequest, type BackendResponse, type FieldData, type PathDefinition, type TxnOp,
} from '@strongroom/core';
import { isPlainObject, mergePatch } from './merge-patch';
import { markDeleted } from './path-delete';
import {
  effectiveDeleteAfter, effectiveMaxVersions, isLive, loadConfig, loadMetadata, loadVersionData, metaKey, nestedInt,
  newMetadata, parseVersionParam, readVersion, requireSecretPath, trimVersions, versionKey, versionView, withSecretLock,
  type KvConfig, type KvContext, type SecretData, type SecretMetadata, type VersionRecord,
} from './secret-store';

function requireData(fields: FieldData): SecretData {
  const data = fields.map('data');
  if (!fields.has('data') || !data) throw new BadRequestError('no data provided: the body needs a "data" object holding the secret');
  return data;
}

/** options.cas, if the caller sent one. */
function parseCas(fields: FieldData): number | undefined {
  const options = fields.map('options');
  if (!options) return undefined;
  const raw = options['cas'];
  if (raw === undefined || raw === null) return undefined;
  const cas = nestedInt('options.cas', raw);
  if (cas < 0) throw new BadRequestError('invalid value for "options.cas": must be 0 (only if the secret does not exist) or the current version');
  return cas;
}

// The two messages are Vault's own: clients and scripts match on them.
function checkCas(config: KvConfig, meta: SecretMetadata | null, cas: number | undefined): void {
  if (cas === undefined) {
    if (config.casRequired || meta?.casRequired) throw new BadRequestError('check-and-set parameter required for this call');
    return;
  }
  if (cas !== (meta?.currentVersion ?? 0)) throw new BadRequestError('check-and-set parameter did not match the current version');
}

/**
 * Adds a version and writes its data, the metadata and the removal of versions past the limit
 * in one transaction, so a crash never leaves metadata pointing at missing data or vice versa.
 */
async function commitVersion(
  ctx: KvContext, req: BackendRequest, path: string, config: KvConfig, existing: SecretMetadata | null,
  data: SecretData,
): Promise<BackendResponse> {
  const now = ctx.clock.now();
  const meta = existing ?? newMetadata(now);
  const version = meta.currentVersion + 1;
  const deleteAfter = effectiveDeleteAfter(config, meta);
  // Vault fixes the deletion time when the version is written; later config changes do not move it.
  const record: VersionRecord = { createdTime: now, deletionTime: deleteAfter > 0 ? now + deleteAfter * 1000 : null, destroyed: false };
  meta.currentVersion = version;
  meta.updatedTime = now;
  meta.versions[String(version)] = record;
  const trimmed = trimVersions(meta, effectiveMaxVersions(config, meta));
  await req.storage.txn([
    jsonOp(versionKey(path, version), data),
    jsonOp(metaKey(path), meta),
    ...trimmed.map((v): TxnOp => ({ type: 'delete', key: versionKey(path, v) })),
  ]);
  return { data: versionView(meta, version, record) };
}

/** `data/<path>`: read, write, patch and soft-delete the versions of a secret. */
export function dataPaths(ctx: KvContext): PathDefinition[] {
  return [
    definePath({
      pattern: 'data/(?<path>.+)',
      fields: {
        path: { type: 'string', description: 'Secret path.' },
        data: { type: 'map', description: 'The secret: an object of keys and values.' },
        options: { type: 'map', description: 'Write options; "cas" is the version the write expects to replace.' },
        version: { type: 'int', description: 'Version to read; 0 or absent reads the current one.' },
      },
      existenceCheck: async (req, fields) => (await loadMetadata(req.storage, fields.string('path'))) !== null,
      operations: {
        async read(req, fields) {
          const { metadata, data } = await readVersion(ctx, req.storage, fields.string('path'), parseVersionParam(fields));
          // Clients tell "deleted" from "never existed" by the metadata in this 404's body.
          if (data === null) return { status: 404, data: { data: null, metadata } };
          return { data: { data, metadata } };
        },

        async update(req, fields) {
          const path = requireSecretPath(fields.string('path'));
          const data = requireData(fields);
          const cas = parseCas(fields);
          return withSecretLock(ctx, req, path, async () => {
            const [config, meta] = await Promise.all([loadConfig(req.storage), loadMetadata(req.storage, path)]);
            checkCas(config, meta, cas);
            return commitVersion(ctx, req, path, config, meta, data);
          });
        },

        async patch(req, fields) {
          const path = requireSecretPath(fields.string('path'));
          const patch = requireData(fields);
          const cas = parseCas(fields);
          return withSecretLock(ctx, req, path, async () => {
            const [config, meta] = await Promise.all([loadConfig(req.storage), loadMetadata(req.storage, path)]);
            if (!meta) throw new NotFoundError();
            checkCas(config, meta, cas);
            const current = meta.versions[String(meta.currentVersion)];
            const base = isLive(current, ctx.clock.now()) ? await loadVersionData(req.storage, path, meta.currentVersion) : null;
            if (base === null) throw new NotFoundError();
            const merged = mergePatch(base, patch);
            return commitVersion(ctx, req, path, config, meta, isPlainObject(merged) ? merged : {});
          });
        },

        async delete(req, fields) {
          const path = requireSecretPath(fields.string('path'));
          await withSecretLock(ctx, req, path, async () => {
            const meta = await loadMetadata(req.storage, path);
            if (!meta || meta.currentVersion === 0) return;
            const changed = markDeleted(meta, [meta.currentVersion], ctx.clock.now());
            if (changed.length === 0) return;
            await req.storage.txn([jsonOp(metaKey(path), meta)]);
          });
          return null;
        },
      },
      help: 'Reads and writes the versions of a secret; DELETE soft-deletes the current version.',
    }),
  ];
}
