import { randomUUID } from 'node:crypto';
import type { Core } from '../core';
import { SYSTEM_MAX_TTL } from '../core';
import { BadRequestError, NotFoundError, PermissionDeniedError } from '../errors';
import { convertField, type FieldData, type FieldSchemas } from '../framework/fields';
import { definePath, type BackendRequest, type PathDefinition } from '../framework/types';
import { BUILTIN_TYPES, DATA_PREFIX, normalizeMountPath, type MountConfig, type MountEntry, type MountTable, type TableKind } from '../mounts/mount-table';
import { deleteTree } from '../storage/logical';

function mountInfo(e: MountEntry) {
  return {
    type: e.type, description: e.description, accessor: e.accessor, uuid: e.uuid, local: e.local, seal_wrap: e.seal_wrap,
    external_entropy_access: e.external_entropy_access, options: e.options, plugin_version: '', running_plugin_version: '',
    running_sha256: '', deprecation_status: 'supported',
    config: {
      default_lease_ttl: e.config.default_lease_ttl, max_lease_ttl: e.config.max_lease_ttl, force_no_cache: e.config.force_no_cache,
      ...(e.config.listing_visibility ? { listing_visibility: e.config.listing_visibility } : {}),
      ...(e.config.passthrough_request_headers ? { passthrough_request_headers: e.config.passthrough_request_headers } : {}),
      ...(e.config.allowed_response_headers ? { allowed_response_headers: e.config.allowed_response_headers } : {}),
      ...(e.config.audit_non_hmac_request_keys ? { audit_non_hmac_request_keys: e.config.audit_non_hmac_request_keys } : {}),
      ...(e.config.audit_non_hmac_response_keys ? { audit_non_hmac_response_keys: e.config.audit_non_hmac_response_keys } : {}),
    },
  };
}

const CONFIG_FIELDS: FieldSchemas = {
  default_lease_ttl: { type: 'duration' },
  max_lease_ttl: { type: 'duration' },
  force_no_cache: { type: 'bool' },
  listing_visibility: { type: 'string', allowed: ['', 'hidden', 'unauth'] },
  audit_non_hmac_request_keys: { type: 'comma-list' },
  audit_non_hmac_response_keys: { type: 'comma-list' },
  passthrough_request_headers: { type: 'comma-list' },
  allowed_response_headers: { type: 'comma-list' },
};

/** Reads a mount `config` object (or the tune endpoint's top-level fields) with the same rules. */
function parseConfig(source: Record<string, unknown>, prefix: string, base: MountConfig): MountConfig {
  const out: MountConfig = { ...base };
  for (const [name, schema] of Object.entries(CONFIG_FIELDS)) {
    const raw = source[name];
    if (raw === undefined || raw === null) continue;
    // Vault accepts "system" to mean "use the system default" for the TTLs.
    const value = (name === 'default_lease_ttl' || name === 'max_lease_ttl') && raw === 'system' ? 0 : convertField(prefix + name, schema, raw);
    (out as unknown as Record<string, unknown>)[name] = value;
  }
  if (out.max_lease_ttl > SYSTEM_MAX_TTL) {
    throw new BadRequestError(`invalid value for "${prefix}max_lease_ttl": must not exceed the system maximum of ${SYSTEM_MAX_TTL} seconds`);
  }
  if (out.max_lease_ttl !== 0 && out.default_lease_ttl > out.max_lease_ttl) {
    throw new BadRequestError(`invalid value for "${prefix}default_lease_ttl": must not exceed max_lease_ttl`);
  }
  // An unset max means the system maximum, which bounds the default as well.
  if (out.max_lease_ttl === 0 && out.default_lease_ttl > SYSTEM_MAX_TTL) {
    throw new BadRequestError(`invalid value for "${prefix}default_lease_ttl": must not exceed the system maximum of ${SYSTEM_MAX_TTL} seconds`);
  }
  return out;
}

function parseOptions(f: FieldData, field = 'options'): Record<string, string> {
  const raw = f.map(field) ?? {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else throw new BadRequestError(`invalid value for "${field}.${k}": expected a string`);
  }
  if (out['version'] !== undefined && !/^[12]$/.test(out['version'])) {
    throw new BadRequestError(`invalid value for "${field}.version": must be "1" or "2"`);
  }
  return out;
}

const ENABLE_FIELDS: FieldSchemas = {
  path: { type: 'string' },
  type: { type: 'string', required: true },
  description: { type: 'string', default: '' },
  config: { type: 'map' },
  options: { type: 'map' },
  local: { type: 'bool' },
  seal_wrap: { type: 'bool' },
  external_entropy_access: { type: 'bool' },
  plugin_name: { type: 'string' },
  plugin_version: { type: 'string' },
};

function groupPaths(core: Core, kind: TableKind): PathDefinition[] {
  const tableOf = (req: BackendRequest): MountTable => (kind === 'secret' ? core.viewOf(req).mounts : core.viewOf(req).auths);
  const root = kind === 'secret' ? 'mounts' : 'auth';
  const enable = async (req: BackendRequest, rawPath: string, f: FieldData) => {
    const table = tableOf(req);
    const path = normalizeMountPath('path', rawPath);
    let type = f.string('type').toLowerCase();
    const options = parseOptions(f);
    if (kind === 'secret' && type === 'kv-v2') {
      type = 'kv';
      options['version'] = '2';
    }
    const factory = core.engineOf(kind, type);
    if (BUILTIN_TYPES.has(type) || !factory) {
      throw new BadRequestError(`invalid value for "type": ${kind === 'auth' ? 'auth method' : 'secrets engine'} type "${type}" is not available (plugin not found in the catalog)`);
    }
    const config = parseConfig(f.map('config') ?? {}, 'config.', { default_lease_ttl: 0, max_lease_ttl: 0, force_no_cache: false });
    const entry = await table.add({
      path, type, description: f.string('description'), config, local: f.bool('local'), seal_wrap: f.bool('seal_wrap'),
      external_entropy_access: f.bool('external_entropy_access'), options,
    });
    try {
      core.instantiate(kind, entry);
    } catch (err) {
      await table.remove(entry.path);
      throw err;
    }
    return null;
  };

  const disable = async (req: BackendRequest, rawPath: string) => {
    const table = tableOf(req);
    const path = normalizeMountPath('path', rawPath);
    const entry = table.get(path);
    if (!entry) return null; // Vault answers 204 for disabling what is not mounted.
    if (BUILTIN_TYPES.has(entry.type)) {
      throw new BadRequestError(`cannot disable the built-in mount at "${path}"`);
    }
    // Leases end with their mount, through the backend that issued them; if any cannot be
    // revoked the mount stays, so nothing is left behind unrevoked (revoke-force overrides).
    await core.expiration.revokePrefix(`${req.namespace.path}${kind === 'auth' ? `auth/${path}` : path}`);
    // Of two overlapping disables only the one that removed the entry cleans up after it.
    const removed = await table.remove(path);
    if (!removed) return null;
    core.dropInstance(removed.uuid);
    if (kind === 'auth') {
      await core.tokens.revokeByPath(`auth/${path}`, req.namespace.id);
      await core.identity.deleteAliasesForMount(removed.accessor);
    }
    await deleteTree(core.barrier, `${DATA_PREFIX[kind]}${removed.uuid}/`);
    return null;
  };

  /**
   * The mount a tune request names. `sys/mounts/auth/<path>/tune` reaches an auth method, as in
   * Vault, where it is the way to tune one without sudo.
   */
  const tuneTarget = (req: BackendRequest, rawPath: string): { table: MountTable; kind: TableKind; path: string } => {
    const path = normalizeMountPath('path', rawPath);
    if (kind === 'secret' && path.startsWith('auth/')) return { table: core.viewOf(req).auths, kind: 'auth', path: normalizeMountPath('path', path.slice(5)) };
    return { table: tableOf(req), kind, path };
  };

  const tuneRead = (req: BackendRequest, rawPath: string) => {
    const target = tuneTarget(req, rawPath);
    const entry = target.table.get(target.path);
    if (!entry) throw new BadRequestError(`no mount at "${rawPath}"`);
    const settings = core.mountSettings(target.kind, entry);
    return {
      data: {
        description: entry.description, default_lease_ttl: settings.defaultLeaseTtl, max_lease_ttl: settings.maxLeaseTtl,
        force_no_cache: entry.config.force_no_cache, options: entry.options,
        ...(entry.config.listing_visibility ? { listing_visibility: entry.config.listing_visibility } : {}),
      },
      copyDataToTop: true,
    };
  };

  const tuneWrite = async (req: BackendRequest, rawPath: string, f: FieldData) => {
    const { table: target, path } = tuneTarget(req, rawPath);
    if (!target.get(path)) throw new BadRequestError(`no mount at "${path}"`);
    await target.update(path, (e) => {
      e.config = parseConfig(f.raw, '', e.config);
      if (f.has('description')) e.description = f.string('description');
      if (f.has('options')) {
        const next = { ...e.options, ...parseOptions(f) };
        if (e.options['version'] === '2' && next['version'] === '1') {
          throw new BadRequestError('invalid value for "options.version": a version 2 mount cannot be downgraded to version 1');
        }
        e.options = next;
      }
      return e;
    });
    return null;
  };

  // The TTLs are validated by parseConfig, which also accepts "system"; the schema must not refuse that first.
  const tuneFields: FieldSchemas = {
    path: { type: 'string' }, description: { type: 'string' }, options: { type: 'map' }, ...CONFIG_FIELDS,
    default_lease_ttl: { type: 'any' }, max_lease_ttl: { type: 'any' },
  };

  return [
    definePath({
      pattern: root,
      operations: {
        read: async (req) => {
          const data: Record<string, unknown> = {};
          for (const e of tableOf(req).all()) data[e.path] = mountInfo(e);
          return { data, copyDataToTop: true };
        },
      },
    }),
    // Vault protects everything below sys/auth/ with sudo, reads and tuning included.
    definePath({
      pattern: `${root}/(?<path>.+)/tune`,
      fields: tuneFields,
      sudo: kind === 'auth',
      operations: {
        read: async (req, f) => tuneRead(req, f.string('path')),
        update: async (req, f) => tuneWrite(req, f.string('path'), f),
      },
    }),
    definePath({
      pattern: `${root}/(?<path>.+)`,
      fields: ENABLE_FIELDS,
      sudo: kind === 'auth',
      operations: {
        read: async (req, f) => {
          const entry = tableOf(req).get(normalizeMountPath('path', f.string('path')));
          if (!entry) throw new NotFoundError(`no mount at "${f.string('path')}"`);
          return { data: mountInfo(entry) };
        },
        update: async (req, f) => enable(req, f.string('path'), f),
        delete: async (req, f) => disable(req, f.string('path')),
      },
    }),
  ];
}

function remountPath(core: Core): PathDefinition {
  return definePath({
    pattern: 'remount',
    sudo: true,
    fields: { from: { type: 'string', required: true }, to: { type: 'string', required: true } },
    operations: {
      update: async (req, f) => {
        const resolve = (field: string, raw: string): { kind: TableKind; path: string } => {
          const clean = raw.replace(/^\/+/, '');
          return clean.startsWith('auth/')
            ? { kind: 'auth', path: normalizeMountPath(field, clean.slice(5)) }
            : { kind: 'secret', path: normalizeMountPath(field, clean) };
        };
        const from = resolve('from', f.string('from'));
        const to = resolve('to', f.string('to'));
        if (from.kind !== to.kind) throw new BadRequestError('invalid value for "to": cannot move a mount between secrets engines and auth methods');
        const table = from.kind === 'secret' ? core.viewOf(req).mounts : core.viewOf(req).auths;
        const entry = table.get(from.path);
        if (!entry) throw new BadRequestError(`invalid value for "from": no mount at "${f.string('from')}"`);
        if (BUILTIN_TYPES.has(entry.type)) throw new BadRequestError(`invalid value for "from": cannot move the built-in mount at "${from.path}"`);
        // Data lives under the mount's UUID, so moving a mount only changes the table.
        await table.update(from.path, (e) => ({ ...e, path: to.path }));
        return { data: { migration_id: randomUUID() } };
      },
    },
  });
}

/**
 * `sys/internal/ui/mounts(/:path)`: how the UI and `vault kv` discover mounts and a KV mount's
 * version. Like Vault, these need no grant of their own: a token sees the mounts it holds some
 * grant under; without a token only mounts tuned to `listing_visibility = "unauth"` show.
 */
function uiMountsPaths(core: Core): PathDefinition[] {
  /** Whether the request's token holds any grant under a mount of the request's namespace. */
  const accessOf = async (req: BackendRequest): Promise<((apiPath: string) => boolean) | null> => {
    const entry = req.clientToken ? await core.tokens.lookup(req.clientToken) : null;
    if (!entry) return null;
    const { acl, aclPath: prefix } = await core.aclFor(entry, core.viewOf(req), '');
    return (apiPath) => acl.grantsUnder(prefix + apiPath);
  };
  return [
    definePath({
      pattern: 'internal/ui/mounts',
      unauthenticated: true,
      operations: {
        read: async (req) => {
          const grants = await accessOf(req).catch(() => null);
          const visible = (apiPath: string, e: MountEntry) =>
            grants ? e.config.listing_visibility !== 'hidden' && grants(apiPath) : e.config.listing_visibility === 'unauth';
          const secret: Record<string, unknown> = {};
          const auth: Record<string, unknown> = {};
          const view = core.viewOf(req);
          for (const e of view.mounts.all()) if (visible(e.path, e)) secret[e.path] = mountInfo(e);
          for (const e of view.auths.all()) if (visible(`auth/${e.path}`, e)) auth[e.path] = mountInfo(e);
          return { data: { secret, auth } };
        },
      },
    }),
    definePath({
      pattern: 'internal/ui/mounts/(?<path>.+)',
      unauthenticated: true,
      fields: { path: { type: 'string' } },
      operations: {
        read: async (req, f) => {
          const grants = await accessOf(req);
          if (!grants) throw new PermissionDeniedError();
          const path = f.string('path').replace(/^\/+/, '');
          const isAuth = path.startsWith('auth/');
          const view = core.viewOf(req);
          const entry = isAuth ? view.auths.find(path.slice(5)) : view.mounts.find(path);
          const apiPath = entry ? (isAuth ? `auth/${entry.path}` : entry.path) : '';
          // An unknown mount and a mount without access look the same, so neither leaks.
          if (!entry || !grants(apiPath)) throw new PermissionDeniedError();
          return { data: { ...mountInfo(entry), path: apiPath } };
        },
      },
    }),
  ];
}

export function mountPaths(core: Core): PathDefinition[] {
  return [...groupPaths(core, 'secret'), ...groupPaths(core, 'auth'), remountPath(core), ...uiMountsPaths(core)];
}
