import type { ParsedArgs } from './args';
import { clientFromEnv, type ApiClientOptions } from './client';
import type { StdinReader } from './values';

/** What a command needs from the outside world, so that tests and the bin give the same. */
export interface Context {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  stdin: StdinReader;
  /** Reads a secret from the terminal without echo; absent when stdin is not a terminal. */
  promptHidden?: (prompt: string) => Promise<string>;
  /** Whether `err` is a terminal: progress lines are drawn there and nowhere else. */
  errIsTTY?: boolean;
}

export interface Command {
  /** The words that name it: ['kv', 'metadata', 'get']. */
  name: string[];
  summary: string;
  /** The usage line(s), a paragraph and an example, shown by -h. */
  help: string;
  /** Flags that take no value. */
  booleans?: string[];
  /** Whether it talks to a server (then it takes the HTTP flags). */
  client?: boolean;
  /** Whether it prints answers (then it takes -format and -field). */
  output?: boolean;
  run(args: ParsedArgs, ctx: Context): Promise<number>;
}

export function clientOf(args: ParsedArgs, ctx: Context): ApiClientOptions {
  return clientFromEnv(ctx.env, args);
}

export function success(ctx: Context, message: string): number {
  ctx.out.write(`Success! ${message}\n`);
  return 0;
}
