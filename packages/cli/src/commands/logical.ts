import { UsageError } from '../args';
import { apiRequest } from '../client';
import { clientOf, success, type Command } from '../command';
import { outputOptions, printList, printSecret } from '../output';
import { parseValues } from '../values';

const DATA_FORMS = `DATA is any of key=value, key=@FILE (the file's text), key=- (stdin's text), @FILE.json or a
  JSON object '{"key":"value"}', or - alone to read the whole JSON body from stdin.`;

function pathOf(positional: string[], verb: string): string {
  const path = positional[0];
  if (path === undefined) throw new UsageError(`Usage: strongroom ${verb} [options] PATH (see strongroom ${verb} -h)`);
  return path.replace(/^\/+/, '');
}

/** read, write, list and delete of any API path, as Vault's CLI does them. */
export const logicalCommands: Command[] = [
  {
    name: ['read'], summary: 'Read any API path', client: true, output: true,
    help: `Usage: strongroom read [options] PATH [key=value...]

  Reads PATH; key=value pairs go as query parameters.

  Example:
    $ strongroom read -field=policy sys/policies/acl/default`,
    async run(args, ctx) {
      const path = pathOf(args.positional, 'read');
      const query = parseValues(args.positional.slice(1), ctx.stdin);
      const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
      const { status, body } = await apiRequest(clientOf(args, ctx), 'GET', qs ? `${path}?${qs}` : path, undefined, [404]);
      if (status === 404 || body === null) {
        ctx.err.write(`No value found at ${path}\n`);
        return 2;
      }
      printSecret(ctx.out, outputOptions(args, ctx.env), body as never);
      return 0;
    },
  },
  {
    name: ['write'], summary: 'Write to any API path', client: true, output: true, booleans: ['force', 'f'],
    help: `Usage: strongroom write [options] PATH [DATA...]

  Writes DATA to PATH and prints the answer, if there is one.
  ${DATA_FORMS}

  -force, -f    Write even with no data

  Example:
    $ strongroom write transit/encrypt/app plaintext=$(base64 <<< "hello")
    $ echo '{"data": {"password": "s3cret"}}' | strongroom write secret/data/app/db -`,
    async run(args, ctx) {
      const path = pathOf(args.positional, 'write');
      const data = parseValues(args.positional.slice(1), ctx.stdin);
      if (Object.keys(data).length === 0 && !args.flags.has('force') && !args.flags.has('f')) {
        throw new UsageError('Must supply data or use -force');
      }
      const { status, body } = await apiRequest(clientOf(args, ctx), 'PUT', path, data);
      if (status === 204 || body === null) return success(ctx, `Data written to: ${path}`);
      printSecret(ctx.out, outputOptions(args, ctx.env), body as never);
      return 0;
    },
  },
  {
    name: ['list'], summary: 'List the keys under any API path', client: true, output: true,
    help: `Usage: strongroom list [options] PATH

  Lists the keys under PATH.

  Example:
    $ strongroom list sys/policies/acl`,
    async run(args, ctx) {
      const path = pathOf(args.positional, 'list');
      const { status, body } = await apiRequest(clientOf(args, ctx), 'LIST', path, undefined, [404]);
      const keys = (body as { data?: { keys?: string[] } } | null)?.data?.keys;
      if (status === 404 || !keys) {
        ctx.err.write(`No value found at ${path}\n`);
        return 2;
      }
      printList(ctx.out, outputOptions(args, ctx.env), keys);
      return 0;
    },
  },
  {
    name: ['delete'], summary: 'Delete any API path', client: true,
    help: `Usage: strongroom delete [options] PATH [key=value...]

  Deletes PATH; key=value pairs go as query parameters.

  Example:
    $ strongroom delete secret/data/app/db`,
    async run(args, ctx) {
      const path = pathOf(args.positional, 'delete');
      const query = parseValues(args.positional.slice(1), ctx.stdin);
      const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
      await apiRequest(clientOf(args, ctx), 'DELETE', qs ? `${path}?${qs}` : path);
      return success(ctx, `Data deleted (if it existed) at: ${path}`);
    },
  },
];
