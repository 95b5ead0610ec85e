import { setFlagsFromString } from 'node:v8';

/**
 * How far a server's V8 heap may grow past what was live after the last full collection before
 * it collects again: 1.5 times. V8's own factor rises with the allocation rate, up to four
 * times, so under a heavy write load the old generation filled with hundreds of MB of dead
 * objects before a full collection came: the active node of the bench cluster went from 369 MB
 * at 1 client to 695 MB at 64. Go's default (GOGC=100), which Vault runs with, is twice. The
 * cost is more frequent full collections, most of whose marking runs on V8's helper threads:
 * KV writes did not slow, but transit batches of 1,000 items (several MB of large objects each)
 * did, by about a sixth (packages/raft/DESIGN.md, "How far the heap may grow").
 */
export const HEAP_GROWING_PERCENT = 50;

/** Sets the growth for this process, unless node was started with its own `--heap-growing-percent`. */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv, setFlags: (flags: string) => void = setFlagsFromString): boolean {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg))) return false;
  setFlags(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
