import { parseArgs, UsageError } from './args';
import { ApiError, CLIENT_BOOLEAN_FLAGS, CLIENT_FLAGS_HELP, ConnectionError } from './client';
import type { Command, Context } from './command';
import { kvCommands } from './commands/kv';
import { loginCommands } from './commands/login';
import { logicalCommands } from './commands/logical';
import { mountCommands } from './commands/mounts';
import { operatorCommands } from './commands/operator';
import { policyCommands } from './commands/policy';
import { tokenCommands } from './commands/token';
import { OUTPUT_FLAGS_HELP } from './output';
import { promptHidden } from './prompt';
import { readStdin } from './values';

const COMMANDS: Command[] = [
  ...logicalCommands, ...kvCommands, ...mountCommands, ...policyCommands, ...tokenCommands, ...operatorCommands, ...loginCommands,
];

const USAGE = `Usage: strongroom <command> [args]

Common commands:
    read        Read any API path
    write       Write to any API path
    delete      Delete any API path
    list        List the keys under any API path
    login       Log in and print a token
    server      Start a server (-dev for a single unsealed node to try things)
    status      Show the seal status of the server

Other commands:
    auth        enable | disable | list
    kv          get | put | patch | list | delete | undelete | destroy | metadata get|put|delete
    operator    init | unseal | seal | generate-root | raft join|list-peers|remove-peer|autopilot state|snapshot save|restore
                | replication status|reindex
    policy      write | read | list | delete
    secrets     enable | disable | list | tune
    token       create | lookup | renew | revoke

Every command takes -h for its flags and an example. The server's address comes from
STRONGROOM_ADDR or VAULT_ADDR, the token from STRONGROOM_TOKEN or VAULT_TOKEN.
`;

const HELP_FLAGS = new Set(['-h', '-help', '--help']);

/** The command named by the longest run of leading words, and the arguments after them. */
function resolve(argv: string[]): { command?: Command; prefix: string[]; rest: string[] } {
  let best: Command | undefined;
  for (const c of COMMANDS) {
    if (c.name.every((w, i) => argv[i] === w) && (!best || c.name.length > best.name.length)) best = c;
  }
  if (best) return { command: best, prefix: best.name, rest: argv.slice(best.name.length) };
  // The longest prefix some command starts with: a group like `kv` or `operator raft`.
  let prefix: string[] = [];
  for (let n = 1; n <= argv.length; n++) {
    const words = argv.slice(0, n);
    if (COMMANDS.some((c) => words.every((w, i) => c.name[i] === w))) prefix = words;
    else break;
  }
  return { prefix, rest: argv.slice(prefix.length) };
}

function helpOf(c: Command): string {
  const parts = [c.help];
  if (c.output) parts.push(OUTPUT_FLAGS_HELP);
  if (c.client) parts.push(CLIENT_FLAGS_HELP);
  return `${parts.join('\n\n')}\n`;
}

function groupHelp(prefix: string[]): string {
  const members = COMMANDS.filter((c) => prefix.every((w, i) => c.name[i] === w));
  const width = Math.max(...members.map((c) => c.name.slice(prefix.length).join(' ').length));
  return `Usage: strongroom ${prefix.join(' ')} <subcommand> [options] [args]\n\nSubcommands:\n${members
    .map((c) => `    ${c.name.slice(prefix.length).join(' ').padEnd(width)}    ${c.summary}`).join('\n')}\n\nEach takes -h for its flags and an example.\n`;
}

function defaultContext(out: NodeJS.WritableStream, err: NodeJS.WritableStream): Context {
  return {
    out, err, env: process.env, stdin: readStdin, errIsTTY: (err as { isTTY?: boolean }).isTTY === true,
    ...(process.stdin.isTTY ? { promptHidden: (prompt: string) => promptHidden(prompt, process.stdin, out) } : {}),
  };
}

export async function main(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr, context?: Context): Promise<number> {
  const [first, ...after] = argv;
  if (first === undefined || first === 'help' || HELP_FLAGS.has(first)) {
    out.write(USAGE);
    return first === undefined ? 1 : 0;
  }
  try {
    // The server's code is loaded for `server` only: every other command is a small client.
    if (first === 'server') {
      const { serverCommand } = require('./commands/server') as typeof import('./commands/server');
      return await serverCommand(after, out, err);
    }
    const { command, prefix, rest } = resolve(argv);
    if (!command) {
      if (prefix.length === 0) {
        err.write(`Unknown command "${first}".\n\n${USAGE}`);
        return 1;
      }
      const asked = rest.length === 0 || HELP_FLAGS.has(rest[0] as string);
      (asked ? out : err).write(`${asked ? '' : `Unknown subcommand "${rest[0]}".\n\n`}${groupHelp(prefix)}`);
      return asked && rest.length > 0 ? 0 : 1;
    }
    if (rest.some((a) => HELP_FLAGS.has(a))) {
      out.write(helpOf(command));
      return 0;
    }
    const booleans = new Set([...(command.booleans ?? []), ...(command.client ? CLIENT_BOOLEAN_FLAGS : [])]);
    const args = parseArgs(rest, booleans);
    // The flags a command takes are the ones its help shows: a mistyped flag is an error, not ignored.
    const known = new Set([...helpOf(command).matchAll(/(?<![\w-])-([a-z][\w-]*)/g)].map((m) => m[1]));
    const unknown = [...args.flags.keys()].find((f) => !known.has(f));
    if (unknown !== undefined) throw new UsageError(`flag provided but not defined: -${unknown} (see strongroom ${command.name.join(' ')} -h)`);
    return await command.run(args, context ?? defaultContext(out, err));
  } catch (e) {
    if (e instanceof UsageError || e instanceof ApiError || e instanceof ConnectionError) {
      err.write(`Error: ${e.message}\n`);
      return e instanceof UsageError ? 1 : 2;
    }
    throw e;
  }
}
