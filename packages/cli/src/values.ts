import { readFileSync } from 'node:fs';
import { UsageError } from './args';

/** Reads all of stdin; the CLI reads it at most once, for `-` or `key=-`. */
export type StdinReader = () => string;

export const readStdin: StdinReader = () => {
  try {
    return readFileSync(0, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read stdin: ${(err as Error).message}`);
  }
};

function readValueFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function jsonObject(text: string, from: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    // Only where it broke: the parser's own message quotes the text, which may be a secret.
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new UsageError(`${from} is not JSON${at ? ` (at character ${at})` : ''}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError(`${from} must be a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * The data arguments of write and kv put, as Vault's CLI reads them:
 * - `-` alone: the whole body, a JSON object, from stdin;
 * - `@FILE` or a literal `{...}`: a JSON object merged in;
 * - `key=value`, where a value of `@FILE` is the file's text and `-` is stdin's.
 */
export function parseValues(items: readonly string[], stdin: StdinReader = readStdin): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let stdinUsed = false;
  const fromStdin = (): string => {
    if (stdinUsed) throw new UsageError('stdin (-) can be read only once');
    stdinUsed = true;
    return stdin();
  };
  for (const [index, item] of items.entries()) {
    if (item === '-') {
      Object.assign(out, jsonObject(fromStdin(), 'stdin'));
      continue;
    }
    if (item.startsWith('@')) {
      Object.assign(out, jsonObject(readValueFile(item.slice(1)), item.slice(1)));
      continue;
    }
    if (item.trimStart().startsWith('{')) {
      Object.assign(out, jsonObject(item, 'the argument'));
      continue;
    }
    const eq = item.indexOf('=');
    // The argument is not repeated: it may be a value typed without its key.
    if (eq <= 0) throw new UsageError(`data argument ${index + 1} is not key=value, @FILE, - or a JSON object`);
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (value === '-') out[key] = fromStdin();
    else if (value.startsWith('@')) out[key] = readValueFile(value.slice(1));
    else out[key] = value;
  }
  return out;
}
