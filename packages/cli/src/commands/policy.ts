import { readFileSync } from 'node:fs';
import { UsageError } from '../args';
import { apiRequest } from '../client';
import { clientOf, success, type Command } from '../command';
import { outputOptions, printList, printStructured } from '../output';

const name = (positional: string[], verb: string, extra = ''): string => {
  const n = positional[0];
  if (n === undefined) throw new UsageError(`Usage: strongroom policy ${verb} [options] NAME${extra} (see strongroom policy ${verb} -h)`);
  return n;
};

export const policyCommands: Command[] = [
  {
    name: ['policy', 'write'], summary: 'Upload an ACL policy from a file or stdin', client: true,
    help: `Usage: strongroom policy write [options] NAME FILE

  Uploads the policy in FILE (HCL or JSON) as NAME, replacing one of that name; FILE - reads stdin.

  Example:
    $ strongroom policy write app-read app-read.hcl
    $ echo 'path "secret/data/app/*" { capabilities = ["read"] }' | strongroom policy write app-read -`,
    async run(args, ctx) {
      const policyName = name(args.positional, 'write', ' FILE');
      const file = args.positional[1];
      if (file === undefined || args.positional.length > 2) throw new UsageError('Usage: strongroom policy write [options] NAME FILE (- for stdin)');
      let policy: string;
      if (file === '-') policy = ctx.stdin();
      else {
        try {
          policy = readFileSync(file, 'utf8');
        } catch (err) {
          throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
      }
      await apiRequest(clientOf(args, ctx), 'PUT', `sys/policies/acl/${encodeURIComponent(policyName)}`, { policy });
      return success(ctx, `Uploaded policy: ${policyName}`);
    },
  },
  {
    name: ['policy', 'read'], summary: 'Print an ACL policy', client: true, output: true,
    help: `Usage: strongroom policy read [options] NAME

  Prints the text of the policy NAME.

  Example:
    $ strongroom policy read default`,
    async run(args, ctx) {
      const policyName = name(args.positional, 'read');
      const { status, body } = await apiRequest(clientOf(args, ctx), 'GET', `sys/policies/acl/${encodeURIComponent(policyName)}`, undefined, [404]);
      const data = (body as { data?: { policy?: string } } | null)?.data;
      if (status === 404 || !data) {
        ctx.err.write(`No policy named: ${policyName}\n`);
        return 2;
      }
      if (printStructured(ctx.out, outputOptions(args, ctx.env), body)) return 0;
      ctx.out.write(`${(data.policy ?? '').replace(/\n$/, '')}\n`);
      return 0;
    },
  },
  {
    name: ['policy', 'list'], summary: 'List the ACL policies', client: true, output: true,
    help: `Usage: strongroom policy list [options]

  Lists the names of the ACL policies.

  Example:
    $ strongroom policy list`,
    async run(args, ctx) {
      const { body } = await apiRequest(clientOf(args, ctx), 'LIST', 'sys/policies/acl');
      const keys = (body as { data?: { keys?: string[] } } | null)?.data?.keys ?? [];
      const opts = outputOptions(args, ctx.env);
      if (opts.format !== 'table') printList(ctx.out, opts, keys);
      else ctx.out.write(keys.map((k) => `${k}\n`).join(''));
      return 0;
    },
  },
  {
    name: ['policy', 'delete'], summary: 'Delete an ACL policy', client: true,
    help: `Usage: strongroom policy delete [options] NAME

  Deletes the policy NAME; tokens that name it no longer get its grants.

  Example:
    $ strongroom policy delete app-read`,
    async run(args, ctx) {
      const policyName = name(args.positional, 'delete');
      await apiRequest(clientOf(args, ctx), 'DELETE', `sys/policies/acl/${encodeURIComponent(policyName)}`);
      return success(ctx, `Deleted policy: ${policyName}`);
    },
  },
];
