import type { Core } from '../core';
import { NotFoundError } from '../errors';
import type { FieldData } from '../framework/fields';
import { definePath, type BackendRequest, type PathDefinition } from '../framework/types';
import { normalizeNamespacePath, type NamespaceView } from '../namespaces/namespace-registry';
import { deleteTree } from '../storage/logical';
import { UI_MESSAGES_PREFIX } from './path-custom-messages';

function info(view: NamespaceView) {
  return { id: view.id, path: view.path, custom_metadata: view.info.customMetadata };
}

/** `sys/namespaces/*`: namespaces below the one the request runs in. */
export function namespacePaths(core: Core): PathDefinition[] {
  const target = (req: BackendRequest, f: FieldData): NamespaceView => {
    const view = core.namespaces.byPathName(core.viewOf(req).path + normalizeNamespacePath(f.string('path')));
    if (!view) throw new NotFoundError();
    return view;
  };
  return [
    definePath({
      pattern: 'namespaces/?',
      operations: {
        list: async (req) => {
          const children = core.namespaces.children(core.viewOf(req));
          const base = core.viewOf(req).path;
          const keys = children.map((c) => c.path.slice(base.length)).sort();
          const keyInfo: Record<string, unknown> = {};
          for (const c of children) keyInfo[c.path.slice(base.length)] = info(c);
          return { data: { keys, key_info: keyInfo } };
        },
      },
    }),
    definePath({
      pattern: 'namespaces/(?<path>.+)',
      fields: { path: { type: 'string' }, custom_metadata: { type: 'string-map' } },
      operations: {
        read: async (req, f) => ({ data: info(target(req, f)) }),
        update: async (req, f) => {
          const view = await core.namespaces.create(core.viewOf(req), f.string('path'), f.map<string>('custom_metadata') ?? {}, (v) => core.setupNamespace(v));
          return { data: info(view) };
        },
        patch: async (req, f) => {
          const view = target(req, f);
          const next: Record<string, string> = { ...view.info.customMetadata };
          for (const [k, v] of Object.entries(f.raw['custom_metadata'] as Record<string, unknown> ?? {})) {
            if (v === null) delete next[k];
            else next[k] = String(v);
          }
          await core.namespaces.updateMetadata(view, next);
          return { data: info(view) };
        },
        delete: async (req, f) => {
          const view = target(req, f);
          await core.namespaces.delete(view);
          // What the system backend kept for the namespace goes with it.
          await deleteTree(core.barrier, `${UI_MESSAGES_PREFIX}${view.id}/`);
          // Tokens of a deleted namespace have nothing left to act on.
          await core.tokens.revokeWhere((entry) => entry.namespace === view.id);
          return null;
        },
      },
    }),
  ];
}
