import { mapFlag, stringFlag, UsageError, type ParsedArgs } from '../args';
import { apiRequest } from '../client';
import { clientOf, success, type Command, type Context } from '../command';
import { columns, outputOptions, printStructured } from '../output';

const slashed = (p: string) => `${p.replace(/^\/+|\/+$/g, '')}/`;

async function listMounts(args: ParsedArgs, ctx: Context, path: string): Promise<number> {
  const { body } = await apiRequest(clientOf(args, ctx), 'GET', path);
  const b = body as { data?: Record<string, Record<string, unknown>> } & Record<string, unknown>;
  const mounts = (b.data ?? b) as Record<string, Record<string, unknown>>;
  if (printStructured(ctx.out, outputOptions(args, ctx.env), mounts)) return 0;
  const rows = Object.keys(mounts).filter((k) => k.endsWith('/')).sort().map((k) => {
    const m = mounts[k] ?? {};
    return [k, String(m['type'] ?? ''), String(m['accessor'] ?? ''), String(m['description'] ?? 'n/a') || 'n/a'];
  });
  columns(ctx.out, ['Path', 'Type', 'Accessor', 'Description'], rows);
  return 0;
}

/** The config block of enable and tune, from the flags both take. */
function configFrom(args: ParsedArgs): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const [flag, field] of [['default-lease-ttl', 'default_lease_ttl'], ['max-lease-ttl', 'max_lease_ttl'], ['listing-visibility', 'listing_visibility']] as const) {
    const v = stringFlag(args, flag);
    if (v !== undefined) config[field] = v;
  }
  return config;
}

const needOne = (args: ParsedArgs, what: string, verb: string): string => {
  const v = args.positional[0];
  if (v === undefined || args.positional.length > 1) throw new UsageError(`Usage: strongroom ${verb} [options] ${what} (see strongroom ${verb} -h)`);
  return v;
};

export const mountCommands: Command[] = [
  {
    name: ['secrets', 'enable'], summary: 'Mount a secrets engine', client: true,
    help: `Usage: strongroom secrets enable [options] TYPE

  Mounts a secrets engine of TYPE (kv, kv-v2, transit, cloud1...) at -path, by default TYPE.

  -path=PATH               Where to mount it
  -description=TEXT        What it is for
  -version=N               The KV version (kv-v2 is kv with -version=2)
  -options=KEY=VALUE       An engine option; give it once for each
  -default-lease-ttl=DUR   Its default lease TTL
  -max-lease-ttl=DUR       Its longest lease TTL

  Example:
    $ strongroom secrets enable -path=apps -version=2 kv`,
    async run(args, ctx) {
      let type = needOne(args, 'TYPE', 'secrets enable');
      const options: Record<string, string> = { ...mapFlag(args, 'options') };
      const defaultPath = type === 'kv-v2' ? 'kv' : type;
      if (type === 'kv-v2') {
        type = 'kv';
        options['version'] = '2';
      }
      const version = stringFlag(args, 'version');
      if (version !== undefined) options['version'] = version;
      const path = slashed(stringFlag(args, 'path') ?? defaultPath);
      const description = stringFlag(args, 'description');
      await apiRequest(clientOf(args, ctx), 'POST', `sys/mounts/${path}`, {
        type, config: configFrom(args), ...(description !== undefined ? { description } : {}),
        ...(Object.keys(options).length > 0 ? { options } : {}),
      });
      return success(ctx, `Enabled the ${type} secrets engine at: ${path}`);
    },
  },
  {
    name: ['secrets', 'disable'], summary: 'Unmount a secrets engine, deleting its data', client: true,
    help: `Usage: strongroom secrets disable [options] PATH

  Unmounts the secrets engine at PATH; its data and leases are deleted.

  Example:
    $ strongroom secrets disable apps/`,
    async run(args, ctx) {
      const path = slashed(needOne(args, 'PATH', 'secrets disable'));
      await apiRequest(clientOf(args, ctx), 'DELETE', `sys/mounts/${path}`);
      return success(ctx, `Disabled the secrets engine (if it existed) at: ${path}`);
    },
  },
  {
    name: ['secrets', 'list'], summary: 'List the mounted secrets engines', client: true, output: true,
    help: `Usage: strongroom secrets list [options]

  Lists the secrets engines: path, type, accessor and description.

  Example:
    $ strongroom secrets list -format=json`,
    run: (args, ctx) => listMounts(args, ctx, 'sys/mounts'),
  },
  {
    name: ['secrets', 'tune'], summary: 'Change a secrets engine\'s settings', client: true,
    help: `Usage: strongroom secrets tune [options] PATH

  Changes the settings of the secrets engine at PATH.

  -default-lease-ttl=DUR           Its default lease TTL
  -max-lease-ttl=DUR               Its longest lease TTL
  -description=TEXT                What it is for
  -listing-visibility=unauth|hidden Whether it shows in the unauthenticated mount list
  -options=KEY=VALUE               An engine option (like version=2); give it once for each

  Example:
    $ strongroom secrets tune -max-lease-ttl=24h apps/`,
    async run(args, ctx) {
      const path = slashed(needOne(args, 'PATH', 'secrets tune'));
      const body: Record<string, unknown> = configFrom(args);
      const description = stringFlag(args, 'description');
      if (description !== undefined) body['description'] = description;
      const options = mapFlag(args, 'options');
      if (options) body['options'] = options;
      await apiRequest(clientOf(args, ctx), 'POST', `sys/mounts/${path}tune`, body);
      return success(ctx, `Tuned the secrets engine at: ${path}`);
    },
  },
  {
    name: ['auth', 'enable'], summary: 'Enable an auth method', client: true,
    help: `Usage: strongroom auth enable [options] TYPE

  Enables an auth method of TYPE (userpass, approle, cloud1...) at -path, by default TYPE.

  -path=PATH          Where to enable it (under auth/)
  -description=TEXT   What it is for

  Example:
    $ strongroom auth enable -path=people userpass`,
    async run(args, ctx) {
      const type = needOne(args, 'TYPE', 'auth enable');
      const path = slashed(stringFlag(args, 'path') ?? type);
      const description = stringFlag(args, 'description');
      await apiRequest(clientOf(args, ctx), 'POST', `sys/auth/${path}`, {
        type, config: configFrom(args), ...(description !== undefined ? { description } : {}),
      });
      return success(ctx, `Enabled ${type} auth method at: ${path}`);
    },
  },
  {
    name: ['auth', 'disable'], summary: 'Disable an auth method, revoking its tokens', client: true,
    help: `Usage: strongroom auth disable [options] PATH

  Disables the auth method at PATH; the tokens it issued are revoked.

  Example:
    $ strongroom auth disable people/`,
    async run(args, ctx) {
      const path = slashed(needOne(args, 'PATH', 'auth disable'));
      await apiRequest(clientOf(args, ctx), 'DELETE', `sys/auth/${path}`);
      return success(ctx, `Disabled the auth method (if it existed) at: ${path}`);
    },
  },
  {
    name: ['auth', 'list'], summary: 'List the enabled auth methods', client: true, output: true,
    help: `Usage: strongroom auth list [options]

  Lists the auth methods: path, type, accessor and description.

  Example:
    $ strongroom auth list`,
    run: (args, ctx) => listMounts(args, ctx, 'sys/auth'),
  },
];
