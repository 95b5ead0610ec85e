/**
 * Flags the way Vault's CLI takes them: `-name=value`, `--name=value`, `-name value`, and bare
 * boolean flags. Everything that is not a flag is a positional argument.
 */
export interface ParsedArgs {
  flags: Map<string, string | true>;
  positional: string[];
}

export function parseArgs(argv: string[], booleanFlags: ReadonlySet<string> = new Set()): ParsedArgs {
  const flags = new Map<string, string | true>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    const m = /^--?([A-Za-z][\w-]*)(?:=(.*))?$/s.exec(arg);
    if (!m) {
      positional.push(arg);
      continue;
    }
    const name = m[1] as string;
    if (m[2] !== undefined) flags.set(name, m[2]);
    else if (booleanFlags.has(name)) flags.set(name, true);
    else if (i + 1 < argv.length && !(argv[i + 1] as string).startsWith('-')) flags.set(name, argv[++i] as string);
    else flags.set(name, true);
  }
  return { flags, positional };
}

export function stringFlag(args: ParsedArgs, name: string): string | undefined {
  const v = args.flags.get(name);
  if (v === true) throw new UsageError(`-${name} needs a value`);
  return v;
}

export function intFlag(args: ParsedArgs, name: string, fallback: number): number {
  const v = stringFlag(args, name);
  if (v === undefined) return fallback;
  if (!/^\d+$/.test(v)) throw new UsageError(`-${name} must be a whole number`);
  return Number(v);
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
