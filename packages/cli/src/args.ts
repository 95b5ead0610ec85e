/**
 * Flags the way Vault's CLI takes them: `-name=value`, `--name=value`, `-name value`, and bare
 * boolean flags. Everything that is not a flag is a positional argument.
 */
export interface ParsedArgs {
  flags: Map<string, string | true>;
  /** Every value of a flag given more than once (-policy=a -policy=b), in order. */
  lists: Map<string, string[]>;
  positional: string[];
}

export function parseArgs(argv: string[], booleanFlags: ReadonlySet<string> = new Set()): ParsedArgs {
  const flags = new Map<string, string | true>();
  const lists = new Map<string, string[]>();
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
    let value: string | true;
    if (m[2] !== undefined) value = m[2];
    else if (booleanFlags.has(name)) value = true;
    else if (i + 1 < argv.length && !(argv[i + 1] as string).startsWith('-')) value = argv[++i] as string;
    else value = true;
    flags.set(name, value);
    if (value !== true) lists.set(name, [...(lists.get(name) ?? []), value]);
  }
  return { flags, lists, positional };
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

export function boolFlag(args: ParsedArgs, name: string): boolean {
  const v = args.flags.get(name);
  if (v === undefined) return false;
  if (v === true) return true;
  if (/^(true|1|yes)$/i.test(v)) return true;
  if (/^(false|0|no)$/i.test(v)) return false;
  throw new UsageError(`-${name} is true or false, not "${v}"`);
}

/** `-name=k=v` given any number of times, as an object. */
export function mapFlag(args: ParsedArgs, name: string): Record<string, string> | undefined {
  const values = args.lists.get(name);
  if (!values) return undefined;
  const out: Record<string, string> = {};
  for (const item of values) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`-${name} takes key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
