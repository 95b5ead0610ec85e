import type { Core } from '../core';
import { BadRequestError } from '../errors';
import { definePath, type PathDefinition } from '../framework/types';
import { BUILTIN_TYPES, normalizeMountPath, type MountEntry, type TableKind } from '../mounts/mount-table';

/**
 * `sys/plugins/reload/backend`: starts a fresh backend instance for the named mounts (or every
 * mount of a plugin type), so settings a backend reads once, such as transit's cache size,
 * take effect. Stored data is untouched.
 */
export function pluginPaths(core: Core): PathDefinition[] {
  return [
    definePath({
      pattern: 'plugins/reload/backend',
      sudo: true,
      fields: {
        plugin: { type: 'string' },
        mounts: { type: 'comma-list' },
        scope: { type: 'string', allowed: ['', 'global'] },
      },
      operations: {
        update: async (req, f) => {
          const plugin = f.string('plugin');
          const mounts = f.list('mounts');
          if ((plugin === '') === (mounts.length === 0)) {
            throw new BadRequestError('exactly one of "plugin" or "mounts" must be given');
          }
          const view = core.viewOf(req);
          const targets: [TableKind, MountEntry][] = [];
          if (plugin !== '') {
            for (const e of view.mounts.all()) if (e.type === plugin) targets.push(['secret', e]);
            for (const e of view.auths.all()) if (e.type === plugin) targets.push(['auth', e]);
          } else {
            for (const raw of mounts) {
              const clean = raw.replace(/^\/+/, '');
              const isAuth = clean.startsWith('auth/');
              const path = normalizeMountPath('mounts', isAuth ? clean.slice(5) : clean);
              const entry = (isAuth ? view.auths : view.mounts).get(path);
              if (!entry) throw new BadRequestError(`invalid value for "mounts": no mount at "${raw}"`);
              targets.push([isAuth ? 'auth' : 'secret', entry]);
            }
          }
          for (const [kind, entry] of targets) {
            if (!BUILTIN_TYPES.has(entry.type)) core.instantiate(kind, entry);
          }
          // A single node reloads at once; "global" would matter for a cluster's other nodes.
          return f.string('scope') === 'global' ? { data: { reload_id: req.id } } : null;
        },
      },
    }),
  ];
}
