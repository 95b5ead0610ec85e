import { resolve } from 'node:path';
import { runDrill, type DrillOptions } from './drill';
import { formatReport } from './report';
import { readTopologyTarget, TopologyError } from './topology-state';

/** `scripts/dr-drill`: the arguments, the run against DIR's topology, the report and the exit code. */

export const DRILL_USAGE = 'usage: dr-drill --dir DIR (--planned | --unplanned) [--failback] [--json] [--load-seconds N] [--concurrency N]';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface DrillArgs extends DrillOptions {
  dir: string;
  json: boolean;
}

function count(name: string, value: string | undefined, min: number, max: number): number {
  if (value === undefined || !/^\d+$/.test(value)) throw new UsageError(`--${name} needs a whole number`);
  const n = Number(value);
  if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}`);
  return n;
}

export function parseDrillArgs(argv: string[]): DrillArgs {
  let dir: string | undefined;
  let mode: DrillOptions['mode'] | undefined;
  const args: Omit<DrillArgs, 'dir' | 'mode'> = { failback: false, json: false, loadSeconds: 5, concurrency: 4 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    switch (a) {
      case '--dir':
        dir = argv[++i];
        if (!dir) throw new UsageError('--dir needs a directory');
        break;
      case '--planned':
      case '--unplanned': {
        const m = a === '--planned' ? 'planned' : 'unplanned';
        if (mode && mode !== m) throw new UsageError('give one of --planned and --unplanned, not both');
        mode = m;
        break;
      }
      case '--failback': args.failback = true; break;
      case '--json': args.json = true; break;
      case '--load-seconds': args.loadSeconds = count('load-seconds', argv[++i], 1, 3600); break;
      case '--concurrency': args.concurrency = count('concurrency', argv[++i], 1, 64); break;
      default: throw new UsageError(`unknown argument "${a}"`);
    }
  }
  if (!dir) throw new UsageError('--dir is required');
  if (!mode) throw new UsageError('give --planned or --unplanned');
  return { ...args, dir: resolve(dir), mode };
}

/** Runs the drill for the command line; answers the exit code (0 passed, 1 failed, 2 usage). */
export async function runDrillScript(argv: string[], out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  let args: DrillArgs;
  try {
    args = parseDrillArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err.write(`dr-drill: ${e.message}\n${DRILL_USAGE}\n`);
    return 2;
  }
  let target;
  try {
    target = readTopologyTarget(args.dir);
  } catch (e) {
    if (!(e instanceof TopologyError)) throw e;
    err.write(`dr-drill: ${e.message}\n`);
    return 2;
  }
  const report = await runDrill(target, args, (line) => err.write(`${line}\n`));
  out.write(args.json ? `${JSON.stringify(report)}\n` : formatReport(report));
  return report.ok ? 0 : 1;
}
