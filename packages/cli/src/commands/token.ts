import { boolFlag, intFlag, mapFlag, stringFlag, UsageError } from '../args';
import { apiRequest } from '../client';
import { clientOf, success, type Command } from '../command';
import { outputOptions, printSecret } from '../output';

export const tokenCommands: Command[] = [
  {
    name: ['token', 'create'], summary: 'Create a token', client: true, output: true,
    booleans: ['orphan', 'no-default-policy', 'renewable'],
    help: `Usage: strongroom token create [options]

  Creates a token, a child of the one in use unless -orphan.

  -policy=NAME           A policy for it; give it once for each
  -ttl=DUR               How long it lives unless renewed
  -explicit-max-ttl=DUR  How long it may live at most, renewed or not
  -period=DUR            Make it periodic: each renewal gives it this long again
  -renewable=true|false  Whether it can be renewed (default true)
  -orphan                Without a parent, so revoking the parent leaves it
  -no-default-policy     Without the default policy
  -display-name=NAME     A name shown in its lookups
  -metadata=KEY=VALUE    Metadata; give it once for each
  -use-limit=N           How many requests it may make (0: no limit)
  -type=service|batch    The kind of token
  -id=ID                 Its ID (root tokens only may choose)
  -role=NAME             Create it from this token role

  Example:
    $ strongroom token create -policy=app-read -ttl=1h`,
    async run(args, ctx) {
      const body: Record<string, unknown> = {};
      const policies = args.lists.get('policy');
      if (policies) body['policies'] = policies.flatMap((p) => p.split(',')).map((p) => p.trim()).filter(Boolean);
      for (const [flag, field] of [['ttl', 'ttl'], ['explicit-max-ttl', 'explicit_max_ttl'], ['period', 'period'], ['display-name', 'display_name'], ['type', 'type'], ['id', 'id']] as const) {
        const v = stringFlag(args, flag);
        if (v !== undefined) body[field] = v;
      }
      if (args.flags.has('renewable')) body['renewable'] = boolFlag(args, 'renewable');
      if (boolFlag(args, 'no-default-policy')) body['no_default_policy'] = true;
      if (args.flags.has('use-limit')) body['num_uses'] = intFlag(args, 'use-limit', 0);
      const meta = mapFlag(args, 'metadata');
      if (meta) body['meta'] = meta;
      const role = stringFlag(args, 'role');
      const path = role ? `auth/token/create/${encodeURIComponent(role)}` : boolFlag(args, 'orphan') ? 'auth/token/create-orphan' : 'auth/token/create';
      const { body: answer } = await apiRequest(clientOf(args, ctx), 'POST', path, body);
      printSecret(ctx.out, outputOptions(args, ctx.env), answer as never);
      return 0;
    },
  },
  {
    name: ['token', 'lookup'], summary: 'Show a token\'s properties', client: true, output: true, booleans: ['accessor'],
    help: `Usage: strongroom token lookup [options] [TOKEN | -accessor ACCESSOR]

  Shows the properties of TOKEN, by default the one in use.

  -accessor   The argument is the token's accessor, not the token

  Example:
    $ strongroom token lookup -format=json`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const arg = args.positional[0];
      const byAccessor = boolFlag(args, 'accessor');
      if (byAccessor && arg === undefined) throw new UsageError('-accessor needs the accessor as argument');
      const { body } = arg === undefined
        ? await apiRequest(client, 'GET', 'auth/token/lookup-self')
        : await apiRequest(client, 'POST', byAccessor ? 'auth/token/lookup-accessor' : 'auth/token/lookup', byAccessor ? { accessor: arg } : { token: arg });
      printSecret(ctx.out, outputOptions(args, ctx.env), body as never);
      return 0;
    },
  },
  {
    name: ['token', 'renew'], summary: 'Renew a token\'s lease', client: true, output: true, booleans: ['accessor'],
    help: `Usage: strongroom token renew [options] [TOKEN | -accessor ACCESSOR]

  Renews TOKEN, by default the one in use.

  -increment=DUR   Ask for this long from now (the server may give less)
  -accessor        The argument is the token's accessor, not the token

  Example:
    $ strongroom token renew -increment=30m`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const arg = args.positional[0];
      const increment = stringFlag(args, 'increment');
      const inc = increment !== undefined ? { increment } : {};
      const byAccessor = boolFlag(args, 'accessor');
      const { body } = arg === undefined
        ? await apiRequest(client, 'POST', 'auth/token/renew-self', inc)
        : await apiRequest(client, 'POST', byAccessor ? 'auth/token/renew-accessor' : 'auth/token/renew', byAccessor ? { accessor: arg, ...inc } : { token: arg, ...inc });
      printSecret(ctx.out, outputOptions(args, ctx.env), body as never);
      return 0;
    },
  },
  {
    name: ['token', 'revoke'], summary: 'Revoke a token (and its children)', client: true, booleans: ['self', 'accessor'],
    help: `Usage: strongroom token revoke [options] [TOKEN | -accessor ACCESSOR | -self]

  Revokes TOKEN and the tokens it created, and their leases.

  -self           Revoke the token in use
  -accessor       The argument is the token's accessor, not the token
  -mode=orphan    Revoke only the token; its children become orphans

  Example:
    $ strongroom token revoke 96ddf4bc-d217-f3ba-f9bd-017055595017`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const arg = args.positional[0];
      const mode = stringFlag(args, 'mode');
      if (mode !== undefined && mode !== 'orphan') throw new UsageError('-mode is orphan or not given');
      if (boolFlag(args, 'self')) {
        if (arg !== undefined) throw new UsageError('-self takes no token argument');
        await apiRequest(client, 'POST', 'auth/token/revoke-self', {});
      } else if (arg === undefined) {
        throw new UsageError('Usage: strongroom token revoke [options] TOKEN (or -self, or -accessor ACCESSOR)');
      } else if (boolFlag(args, 'accessor')) {
        await apiRequest(client, 'POST', 'auth/token/revoke-accessor', { accessor: arg });
      } else {
        await apiRequest(client, 'POST', mode === 'orphan' ? 'auth/token/revoke-orphan' : 'auth/token/revoke', { token: arg });
      }
      return success(ctx, 'Revoked token (if it existed)');
    },
  },
];
