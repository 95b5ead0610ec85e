import { apiRequest, clientFromEnv } from '../client';
import { intFlag, parseArgs, UsageError } from '../args';
import { raftCommand } from './raft';

function printStatus(out: NodeJS.WritableStream, s: Record<string, unknown>): void {
  const rows: [string, unknown][] = [
    ['Seal Type', s['type']], ['Initialized', s['initialized']], ['Sealed', s['sealed']], ['Total Shares', s['n']],
    ['Threshold', s['t']], ['Unseal Progress', `${s['progress']}/${s['t']}`], ['Version', s['version']],
    ['Storage Type', s['storage_type']], ...(s['cluster_id'] ? [['Cluster ID', s['cluster_id']] as [string, unknown]] : []),
  ];
  for (const [k, v] of rows) out.write(`${k.padEnd(18)}${String(v)}\n`);
}

export async function statusCommand(_argv: string[], out: NodeJS.WritableStream): Promise<number> {
  const { body } = await apiRequest(clientFromEnv(), 'GET', 'sys/seal-status');
  printStatus(out, body as Record<string, unknown>);
  return (body as { sealed: boolean }).sealed ? 2 : 0;
}

export async function operatorCommand(argv: string[], out: NodeJS.WritableStream): Promise<number> {
  const [sub, ...rest] = argv;
  const client = clientFromEnv();
  switch (sub) {
    case 'init': {
      const args = parseArgs(rest);
      const shares = intFlag(args, 'key-shares', 5);
      const threshold = intFlag(args, 'key-threshold', 3);
      const { body } = await apiRequest(client, 'PUT', 'sys/init', { secret_shares: shares, secret_threshold: threshold });
      const init = body as { keys_base64: string[]; root_token: string };
      init.keys_base64.forEach((k, i) => out.write(`Unseal Key ${i + 1}: ${k}\n`));
      out.write(`\nInitial Root Token: ${init.root_token}\n\n`);
      out.write(`The server is sealed. Unseal it with ${threshold} of the ${shares} keys above: strongroom operator unseal KEY\n`);
      return 0;
    }
    case 'unseal': {
      const args = parseArgs(rest, new Set(['reset']));
      const key = args.positional[0];
      const payload = args.flags.get('reset') === true ? { reset: true } : { key };
      if (!key && !('reset' in payload)) throw new UsageError('Usage: strongroom operator unseal KEY | -reset');
      const { body } = await apiRequest(client, 'PUT', 'sys/unseal', payload);
      printStatus(out, body as Record<string, unknown>);
      return 0;
    }
    case 'seal':
      await apiRequest(client, 'PUT', 'sys/seal', {});
      out.write('Success! Sealed.\n');
      return 0;
    case 'raft':
      return raftCommand(rest, client, out);
    default:
      throw new UsageError('Usage: strongroom operator init|unseal|seal|raft');
  }
}
