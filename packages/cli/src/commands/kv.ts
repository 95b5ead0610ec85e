import { intFlag, mapFlag, stringFlag, UsageError, type ParsedArgs } from '../args';
import { ApiError, apiRequest, type ApiClientOptions } from '../client';
import { clientOf, success, type Command, type Context } from '../command';
import { kvTable, outputOptions, printList, printSecret, printStructured } from '../output';
import { parseValues } from '../values';

interface KvPath {
  /** The mount's path with its trailing slash: `secret/`. */
  mount: string;
  version: 1 | 2;
  /** The secret's path inside the mount. */
  key: string;
}

/**
 * Finds the mount a KV path lies in and its version, as Vault's CLI does: `-mount` names the
 * mount, else the server says which mount holds the path (sys/internal/ui/mounts/PATH).
 */
async function kvPath(client: ApiClientOptions, args: ParsedArgs, verb: string): Promise<KvPath> {
  const given = args.positional[0];
  if (given === undefined) throw new UsageError(`Usage: strongroom kv ${verb} [options] KEY (see strongroom kv ${verb} -h)`);
  const mountFlag = stringFlag(args, 'mount');
  const path = mountFlag ? `${mountFlag.replace(/^\/+|\/+$/g, '')}/${given.replace(/^\/+/, '')}` : given.replace(/^\/+/, '');
  let info: { path?: string; type?: string; options?: { version?: string } | null };
  try {
    info = ((await apiRequest(client, 'GET', `sys/internal/ui/mounts/${path}`)).body as { data: typeof info }).data;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 403 || err.status === 404)) {
      throw new UsageError(`no KV mount holds "${path}" that this token may use (the mount's version could not be read at sys/internal/ui/mounts/${path})`);
    }
    throw err;
  }
  const mount = info.path ?? '';
  if (info.type !== undefined && info.type !== 'kv' && info.type !== 'generic') throw new UsageError(`"${mount}" is a ${info.type} mount, not a KV one`);
  // `kv list secret` names the mount itself, without its slash.
  const key = `${path}/`.startsWith(mount) ? path.slice(mount.length) : path;
  return { mount, version: info.options?.version === '2' ? 2 : 1, key };
}

const v2 = (p: KvPath, part: string) => `${p.mount}${part}/${p.key}`;
const v1 = (p: KvPath) => `${p.mount}${p.key}`;

function needV2(p: KvPath, verb: string): void {
  if (p.version !== 2) throw new UsageError(`kv ${verb} needs a KV version 2 mount; ${p.mount} is version 1`);
}

function versionsOf(args: ParsedArgs, required: boolean): number[] | undefined {
  const raw = stringFlag(args, 'versions');
  if (raw === undefined) {
    if (required) throw new UsageError('-versions is required (like -versions=1,2)');
    return undefined;
  }
  const versions = raw.split(',').map((v) => v.trim());
  if (versions.some((v) => !/^\d+$/.test(v))) throw new UsageError(`-versions takes whole numbers separated by commas, not "${raw}"`);
  return versions.map(Number);
}

function noValue(ctx: Context, path: string): number {
  ctx.err.write(`No value found at ${path}\n`);
  return 2;
}

/** Vault's heading: the title centred over a rule of `=`. */
function heading(title: string, width: number): string {
  const pad = Math.max(0, width - title.length - 2);
  const left = '='.repeat(Math.floor(pad / 2));
  return `${left} ${title} ${'='.repeat(pad - left.length)}\n`;
}

/** What kv put and kv patch print on a v2 mount: where, then the new version's metadata. */
function printWritten(ctx: Context, args: ParsedArgs, path: string, body: { data?: Record<string, unknown> | null }): void {
  const opts = outputOptions(args, ctx.env);
  if (opts.field !== undefined || printStructured(ctx.out, opts, body)) {
    if (opts.field !== undefined) printSecret(ctx.out, opts, body);
    return;
  }
  ctx.out.write(`${heading('Secret Path', 17)}${path}\n\n${heading('Metadata', 24)}`);
  ctx.out.write(kvTable(Object.entries(body.data ?? {}).sort(([a], [b]) => a.localeCompare(b))));
}

const MOUNT_FLAG = '  -mount=PATH   The KV mount; without it the first part of KEY is taken as the mount (KEY as MOUNT/PATH)';

export const kvCommands: Command[] = [
  {
    name: ['kv', 'get'], summary: 'Read a secret (a version of it on KV v2)', client: true, output: true,
    help: `Usage: strongroom kv get [options] KEY

  Reads the data at KEY of a KV mount (v1 or v2, found from the mount).

${MOUNT_FLAG}
  -version=N    A version other than the latest (KV v2)

  Example:
    $ strongroom kv get -mount=secret -field=password app/db`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const p = await kvPath(client, args, 'get');
      const opts = outputOptions(args, ctx.env);
      if (p.version === 1) {
        const { status, body } = await apiRequest(client, 'GET', v1(p), undefined, [404]);
        if (status === 404 || body === null) return noValue(ctx, v1(p));
        printSecret(ctx.out, opts, body as Record<string, never>);
        return 0;
      }
      const version = stringFlag(args, 'version');
      if (version !== undefined && !/^\d+$/.test(version)) throw new UsageError('-version must be a whole number');
      const path = v2(p, 'data');
      const { status, body } = await apiRequest(client, 'GET', `${path}${version ? `?version=${version}` : ''}`, undefined, [404]);
      const secret = body as { data?: { data: Record<string, unknown> | null; metadata: Record<string, unknown> } } | null;
      if (status === 404 || !secret?.data) return noValue(ctx, path);
      if (opts.field !== undefined || opts.format !== 'table') {
        printSecret(ctx.out, opts, secret as never, secret.data.data);
        return 0;
      }
      ctx.out.write(`${heading('Secret Path', 17)}${path}\n\n${heading('Metadata', 24)}`);
      ctx.out.write(kvTable(Object.entries(secret.data.metadata ?? {}).sort(([a], [b]) => a.localeCompare(b))));
      if (secret.data.data === null) {
        ctx.out.write('\nThis version has been deleted or destroyed: it has no data.\n');
        return 2;
      }
      ctx.out.write(`\n${heading('Data', 18)}`);
      printSecret(ctx.out, opts, {}, secret.data.data);
      return 0;
    },
  },
  {
    name: ['kv', 'put'], summary: 'Write a secret (a new version on KV v2)', client: true, output: true,
    help: `Usage: strongroom kv put [options] KEY [DATA...]

  Writes the data to KEY, replacing what was there (on KV v2 as a new version). DATA is any of
  key=value, key=@FILE (the file's text), key=- (stdin's text), @FILE.json or a JSON object
  '{"key":"value"}', or - alone to read the whole JSON object from stdin.

${MOUNT_FLAG}
  -cas=N        Write only if the current version is N (0: only if there is none) (KV v2)

  Example:
    $ strongroom kv put -mount=secret app/db username=app password=@password.txt`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const p = await kvPath(client, args, 'put');
      const data = parseValues(args.positional.slice(1), ctx.stdin);
      if (Object.keys(data).length === 0) throw new UsageError('kv put needs data: key=value, @FILE, a JSON object or -');
      if (p.version === 1) {
        await apiRequest(client, 'PUT', v1(p), data);
        return success(ctx, `Data written to: ${v1(p)}`);
      }
      const cas = args.flags.has('cas') ? intFlag(args, 'cas', 0) : undefined;
      const { body } = await apiRequest(client, 'PUT', v2(p, 'data'), { data, ...(cas !== undefined ? { options: { cas } } : {}) });
      printWritten(ctx, args, v2(p, 'data'), body as never);
      return 0;
    },
  },
  {
    name: ['kv', 'patch'], summary: 'Change some keys of a secret, keeping the others (KV v2)', client: true, output: true,
    help: `Usage: strongroom kv patch [options] KEY DATA...

  Merges DATA into the latest version of KEY as a new version; a key given as null in a JSON
  object is removed. DATA takes the forms of kv put.

${MOUNT_FLAG}
  -cas=N        Patch only if the current version is N

  Example:
    $ strongroom kv patch -mount=secret app/db password=new-password`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const p = await kvPath(client, args, 'patch');
      needV2(p, 'patch');
      const data = parseValues(args.positional.slice(1), ctx.stdin);
      if (Object.keys(data).length === 0) throw new UsageError('kv patch needs data: key=value, @FILE, a JSON object or -');
      const cas = args.flags.has('cas') ? intFlag(args, 'cas', 0) : undefined;
      const { body } = await apiRequest(client, 'PATCH', v2(p, 'data'), { data, ...(cas !== undefined ? { options: { cas } } : {}) });
      printWritten(ctx, args, v2(p, 'data'), body as never);
      return 0;
    },
  },
  {
    name: ['kv', 'list'], summary: 'List the keys under a path', client: true, output: true,
    help: `Usage: strongroom kv list [options] PATH

  Lists the keys under PATH; a key ending in / has keys under it.

${MOUNT_FLAG}

  Example:
    $ strongroom kv list -mount=secret app/`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const p = await kvPath(client, args, 'list');
      const path = p.version === 2 ? v2(p, 'metadata') : v1(p);
      const { status, body } = await apiRequest(client, 'LIST', path, undefined, [404]);
      const keys = (body as { data?: { keys?: string[] } } | null)?.data?.keys;
      if (status === 404 || !keys) return noValue(ctx, path);
      printList(ctx.out, outputOptions(args, ctx.env), keys);
      return 0;
    },
  },
  {
    name: ['kv', 'delete'], summary: 'Delete a secret (its latest version, or -versions, on KV v2)', client: true,
    help: `Usage: strongroom kv delete [options] KEY

  Deletes the data at KEY. On KV v2 this marks the latest version (or those in -versions)
  deleted; kv undelete brings them back, kv destroy removes their data for good.

${MOUNT_FLAG}
  -versions=N,M The versions to delete (KV v2)

  Example:
    $ strongroom kv delete -mount=secret app/db`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const p = await kvPath(client, args, 'delete');
      if (p.version === 1) {
        await apiRequest(client, 'DELETE', v1(p));
        return success(ctx, `Data deleted (if it existed) at: ${v1(p)}`);
      }
      const versions = versionsOf(args, false);
      if (versions) {
        await apiRequest(client, 'PUT', v2(p, 'delete'), { versions });
        return success(ctx, `Data deleted (if it existed) at: ${v2(p, 'delete')}`);
      }
      await apiRequest(client, 'DELETE', v2(p, 'data'));
      return success(ctx, `Data deleted (if it existed) at: ${v2(p, 'data')}`);
    },
  },
  ...(['undelete', 'destroy'] as const).map((verb): Command => ({
    name: ['kv', verb], client: true,
    summary: verb === 'undelete' ? 'Bring back deleted versions of a secret (KV v2)' : 'Remove the data of versions of a secret for good (KV v2)',
    help: `Usage: strongroom kv ${verb} [options] -versions=N,M KEY

  ${verb === 'undelete' ? 'Restores the given deleted versions of KEY.' : 'Removes the data of the given versions of KEY; it cannot be restored.'}

${MOUNT_FLAG}
  -versions=N,M The versions (required)

  Example:
    $ strongroom kv ${verb} -mount=secret -versions=2 app/db`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const versions = versionsOf(args, true);
      const p = await kvPath(client, args, verb);
      needV2(p, verb);
      await apiRequest(client, 'PUT', v2(p, verb), { versions });
      return success(ctx, `Data written to: ${v2(p, verb)}`);
    },
  })),
  {
    name: ['kv', 'metadata', 'get'], summary: 'Read a secret\'s metadata and versions (KV v2)', client: true, output: true,
    help: `Usage: strongroom kv metadata get [options] KEY

  Shows the metadata of KEY: its settings and each version's times.

${MOUNT_FLAG}

  Example:
    $ strongroom kv metadata get -mount=secret app/db`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const p = await kvPath(client, args, 'metadata get');
      needV2(p, 'metadata get');
      const path = v2(p, 'metadata');
      const { status, body } = await apiRequest(client, 'GET', path, undefined, [404]);
      const meta = (body as { data?: Record<string, unknown> } | null)?.data;
      if (status === 404 || !meta) return noValue(ctx, path);
      const opts = outputOptions(args, ctx.env);
      if (opts.field !== undefined || opts.format !== 'table') {
        printSecret(ctx.out, opts, body as never);
        return 0;
      }
      const { versions, ...rest } = meta as { versions?: Record<string, Record<string, unknown>> };
      ctx.out.write(`${heading('Metadata Path', 19)}${path}\n\n${heading('Metadata', 30)}`);
      ctx.out.write(kvTable(Object.entries(rest).sort(([a], [b]) => a.localeCompare(b))));
      for (const v of Object.keys(versions ?? {}).sort((a, b) => Number(a) - Number(b))) {
        ctx.out.write(`\n${heading(`Version ${v}`, 15)}`);
        ctx.out.write(kvTable(Object.entries((versions ?? {})[v] ?? {}).sort(([a], [b]) => a.localeCompare(b))));
      }
      return 0;
    },
  },
  {
    name: ['kv', 'metadata', 'put'], summary: 'Change a secret\'s settings and custom metadata (KV v2)', client: true,
    help: `Usage: strongroom kv metadata put [options] KEY

  Sets KEY's metadata; what is not given stays as it was.

${MOUNT_FLAG}
  -max-versions=N            How many versions to keep (0: the mount's setting)
  -cas-required=true|false   Whether every write must give -cas
  -delete-version-after=DUR  Delete each version this long after it is written (like 30m, 0 for never)
  -custom-metadata=KEY=VALUE Custom metadata; give it once for each key

  Example:
    $ strongroom kv metadata put -mount=secret -max-versions=5 -custom-metadata=owner=ops app/db`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const p = await kvPath(client, args, 'metadata put');
      needV2(p, 'metadata put');
      const body: Record<string, unknown> = {};
      if (args.flags.has('max-versions')) body['max_versions'] = intFlag(args, 'max-versions', 0);
      const casRequired = stringFlag(args, 'cas-required');
      if (casRequired !== undefined) {
        if (!/^(true|false)$/.test(casRequired)) throw new UsageError('-cas-required is true or false');
        body['cas_required'] = casRequired === 'true';
      }
      const after = stringFlag(args, 'delete-version-after');
      if (after !== undefined) body['delete_version_after'] = after;
      const custom = mapFlag(args, 'custom-metadata');
      if (custom) body['custom_metadata'] = custom;
      await apiRequest(client, 'PUT', v2(p, 'metadata'), body);
      return success(ctx, `Data written to: ${v2(p, 'metadata')}`);
    },
  },
  {
    name: ['kv', 'metadata', 'delete'], summary: 'Delete a secret with all its versions and metadata (KV v2)', client: true,
    help: `Usage: strongroom kv metadata delete [options] KEY

  Deletes KEY's metadata and every version of it, for good.

${MOUNT_FLAG}

  Example:
    $ strongroom kv metadata delete -mount=secret app/db`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const p = await kvPath(client, args, 'metadata delete');
      needV2(p, 'metadata delete');
      await apiRequest(client, 'DELETE', v2(p, 'metadata'));
      return success(ctx, `Data deleted (if it existed) at: ${v2(p, 'metadata')}`);
    },
  },
];
