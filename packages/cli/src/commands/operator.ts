import { boolFlag, intFlag, type ParsedArgs } from '../args';
import { ApiError, apiRequest, ConnectionError } from '../client';
import { clientOf, success, type Command, type Context } from '../command';
import { kvTable, outputOptions, printStructured } from '../output';
import { generateRootCommand } from './generate-root';
import { unsealKey } from './key-share';
import { raftCommands } from './raft';
import { replicationCommands } from './replication';

function printStatus(args: ParsedArgs, ctx: Context, s: Record<string, unknown>): void {
  if (printStructured(ctx.out, outputOptions(args, ctx.env), s)) return;
  const rows: Array<[string, unknown]> = [
    ['Seal Type', s['type']],
    ...(s['recovery_seal'] ? [['Recovery Seal Type', 'shamir'] as [string, unknown]] : []),
    ['Initialized', s['initialized']], ['Sealed', s['sealed']], [s['recovery_seal'] ? 'Total Recovery Shares' : 'Total Shares', s['n']],
    ['Threshold', s['t']],
    ...(s['migration'] ? [['Seal Migration in Progress', true] as [string, unknown]] : []),
    ...(s['sealed'] ? [['Unseal Progress', `${String(s['progress'])}/${String(s['t'])}`], ['Unseal Nonce', s['nonce'] || 'n/a']] as Array<[string, unknown]> : []),
    ['Version', s['version']], ['Storage Type', s['storage_type']],
    ...(s['cluster_name'] ? [['Cluster Name', s['cluster_name']] as [string, unknown]] : []),
    ...(s['cluster_id'] ? [['Cluster ID', s['cluster_id']] as [string, unknown]] : []),
  ];
  ctx.out.write(kvTable(rows));
}

export const operatorCommands: Command[] = [
  {
    name: ['status'], summary: 'Show the seal status of the server', client: true, output: true,
    help: `Usage: strongroom status [options]

  Prints the server's seal status. Exits 0 when unsealed, 2 when sealed, 1 on an error.

  Example:
    $ STRONGROOM_ADDR=https://127.0.0.1:8200 strongroom status`,
    async run(args, ctx) {
      let body: unknown;
      try {
        ({ body } = await apiRequest(clientOf(args, ctx), 'GET', 'sys/seal-status'));
      } catch (err) {
        // 2 means sealed here, so an error that says nothing of the seal exits 1.
        if (!(err instanceof ApiError || err instanceof ConnectionError)) throw err;
        ctx.err.write(`Error checking seal status: ${err.message}\n`);
        return 1;
      }
      printStatus(args, ctx, body as Record<string, unknown>);
      return (body as { sealed: boolean }).sealed ? 2 : 0;
    },
  },
  {
    name: ['operator', 'init'], summary: 'Initialize a new server: make its unseal keys and root token', client: true, output: true,
    help: `Usage: strongroom operator init [options]

  Initializes the server: splits its root key into -key-shares unseal keys, -key-threshold of
  which unseal it, and prints them with the initial root token. Run once per cluster.

  With an auto-unseal seal (seal "transit" in the server's config) it makes recovery keys
  instead, and the server unseals itself.

  -key-shares=N           How many unseal keys to make (default 5)
  -key-threshold=N        How many of them unseal the server (default 3)
  -recovery-shares=N      With an auto-unseal seal: how many recovery keys (default 5)
  -recovery-threshold=N   How many of them authorize (default 3)

  Example:
    $ strongroom operator init -key-shares=5 -key-threshold=3`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const { body: sealStatus } = await apiRequest(client, 'GET', 'sys/seal-status');
      const auto = (sealStatus as { type?: string }).type !== undefined && (sealStatus as { type?: string }).type !== 'shamir';
      const shares = auto ? intFlag(args, 'recovery-shares', 5) : intFlag(args, 'key-shares', 5);
      const threshold = auto ? intFlag(args, 'recovery-threshold', 3) : intFlag(args, 'key-threshold', 3);
      const request = auto ? { recovery_shares: shares, recovery_threshold: threshold } : { secret_shares: shares, secret_threshold: threshold };
      const { body } = await apiRequest(client, 'PUT', 'sys/init', request);
      if (printStructured(ctx.out, outputOptions(args, ctx.env), body)) return 0;
      const init = body as { keys_base64: string[]; recovery_keys_base64?: string[]; root_token: string };
      if (auto) {
        (init.recovery_keys_base64 ?? []).forEach((k, i) => ctx.out.write(`Recovery Key ${i + 1}: ${k}\n`));
        ctx.out.write(`\nInitial Root Token: ${init.root_token}\n\n`);
        ctx.out.write(`Strongroom initialized with ${shares} recovery shares and a recovery threshold of ${threshold}. The server\n`);
        ctx.out.write('unseals itself through its seal; recovery keys do not unseal it, they authorize operations such as generate-root.\n');
        return 0;
      }
      init.keys_base64.forEach((k, i) => ctx.out.write(`Unseal Key ${i + 1}: ${k}\n`));
      ctx.out.write(`\nInitial Root Token: ${init.root_token}\n\n`);
      ctx.out.write(`Strongroom initialized with ${shares} key shares and a key threshold of ${threshold}. Keep the keys apart:\n`);
      ctx.out.write(`the server is sealed, and ${threshold} of them unseal it: strongroom operator unseal (it asks for the key).\n`);
      return 0;
    },
  },
  {
    name: ['operator', 'unseal'], summary: 'Give the server one unseal key', client: true, output: true, booleans: ['reset', 'migrate'],
    help: `Usage: strongroom operator unseal [options] [KEY]

  Gives the server one unseal key; once enough are given it unseals. Without KEY it asks for
  it without echo when run on a terminal (so the key stays out of shell history and ps), and
  reads the first line of stdin otherwise.

  -reset     Forget the keys given so far
  -migrate   Migrate the seal to the one the config now names (from Shamir to an auto seal
             with the unseal keys, or back with the recovery keys and the old seal marked
             disabled = "true")

  Example:
    $ strongroom operator unseal
    Unseal Key (will be hidden):`,
    async run(args, ctx) {
      const client = clientOf(args, ctx);
      const payload = boolFlag(args, 'reset') ? { reset: true } : { key: await unsealKey(args, ctx), ...(boolFlag(args, 'migrate') ? { migrate: true } : {}) };
      const { body } = await apiRequest(client, 'PUT', 'sys/unseal', payload);
      printStatus(args, ctx, body as Record<string, unknown>);
      return 0;
    },
  },
  {
    name: ['operator', 'seal'], summary: 'Seal the server', client: true,
    help: `Usage: strongroom operator seal [options]

  Seals the server: it forgets its keys and answers nothing but status until unsealed again.

  Example:
    $ strongroom operator seal`,
    async run(args, ctx) {
      await apiRequest(clientOf(args, ctx), 'PUT', 'sys/seal', {});
      return success(ctx, 'Strongroom is sealed.');
    },
  },
  generateRootCommand,
  ...raftCommands,
  ...replicationCommands,
];
