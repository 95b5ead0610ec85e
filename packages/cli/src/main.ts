import { UsageError } from './args';
import { ApiError } from './client';
import { loginCommand } from './commands/login';
import { logicalCommand } from './commands/logical';
import { operatorCommand, statusCommand } from './commands/operator';
import { serverCommand } from './commands/server';

const USAGE = `Usage: strongroom <command> [args]

Commands:
  server     Start a server (--dev for a single unsealed node to try things)
  status     Print the seal status of the server at STRONGROOM_ADDR (or VAULT_ADDR)
  operator   init | unseal KEY | seal | raft (join, list-peers, remove-peer, snapshot save/restore)
  login      Log in: -method=cloud1 role=NAME [type=iam|vm] [header_value=ID] [nonce=N]
  read       Read a path            write   Write key=value pairs to a path
  list       List a path            delete  Delete a path

The token comes from STRONGROOM_TOKEN (or VAULT_TOKEN).
`;

export async function main(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'server':
        return await serverCommand(rest, out, err);
      case 'status':
        return await statusCommand(rest, out);
      case 'operator':
        return await operatorCommand(rest, out);
      case 'login':
        return await loginCommand(rest, out);
      case 'read':
      case 'write':
      case 'list':
      case 'delete':
        return await logicalCommand(command, rest, out);
      case undefined:
      case 'help':
      case '-h':
      case '--help':
        out.write(USAGE);
        return command === undefined ? 1 : 0;
      default:
        err.write(`Unknown command "${command}".\n\n${USAGE}`);
        return 1;
    }
  } catch (e) {
    if (e instanceof UsageError || e instanceof ApiError) {
      err.write(`Error: ${e.message}\n`);
      return e instanceof UsageError ? 1 : 2;
    }
    throw e;
  }
}
