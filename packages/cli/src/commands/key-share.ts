import { UsageError, type ParsedArgs } from '../args';
import type { Context } from '../command';

/**
 * Where an unseal key share comes from (unseal, generate-root): the argument, a hidden prompt
 * on a terminal (so it stays out of shell history and ps), else stdin's first line.
 */
export async function unsealKey(args: ParsedArgs, ctx: Context): Promise<string> {
  const given = args.positional[0];
  if (given !== undefined && given !== '-') return given;
  if (given === undefined && ctx.promptHidden) {
    try {
      return (await ctx.promptHidden('Unseal Key (will be hidden): ')).trim();
    } catch (err) {
      throw new UsageError(`no unseal key read: ${(err as Error).message}`);
    }
  }
  const line = ctx.stdin().split(/\r?\n/)[0]?.trim() ?? '';
  if (line === '') throw new UsageError('no unseal key: give it as the argument, type it at the prompt (a terminal) or send it on stdin');
  return line;
}
