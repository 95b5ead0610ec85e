import { UsageError, type ParsedArgs } from '../args';
import type { Context } from '../command';

/**
 * Where a secret argument comes from (an unseal key share, a DR operation token): the argument,
 * a hidden prompt on a terminal (so it stays out of shell history and ps), else stdin's first line.
 */
export async function secretArgument(args: ParsedArgs, ctx: Context, what: string, prompt: string): Promise<string> {
  const given = args.positional[0];
  if (given !== undefined && given !== '-') return given;
  if (given === undefined && ctx.promptHidden) {
    try {
      return (await ctx.promptHidden(`${prompt} (will be hidden): `)).trim();
    } catch (err) {
      throw new UsageError(`no ${what} read: ${(err as Error).message}`);
    }
  }
  const line = ctx.stdin().split(/\r?\n/)[0]?.trim() ?? '';
  if (line === '') throw new UsageError(`no ${what}: give it as the argument, type it at the prompt (a terminal) or send it on stdin`);
  return line;
}

export function unsealKey(args: ParsedArgs, ctx: Context): Promise<string> {
  return secretArgument(args, ctx, 'unseal key', 'Unseal Key');
}
