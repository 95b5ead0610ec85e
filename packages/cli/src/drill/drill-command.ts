import { resolve } from 'node:path';
import { readComposeTarget, type ComposeTargetOptions } from './compose-target';
import { runDrill, type DrillOptions } from './drill';
import { TargetError } from './operator-credentials';
import { formatReport } from './report';
import type { DrillTarget } from './target';
import { readTopologyTarget } from './topology-state';

/** `scripts/dr-drill`: the arguments, the run against a topology directory or a compose deployment, the report and the exit code. */

export const DRILL_USAGE = 'usage: dr-drill (--dir DIR | --compose --credentials FILE [--compose-file FILE] [--project-name NAME] [--topology FILE])\n'
  + '                (--planned | --unplanned) [--failback] [--json] [--load-seconds N] [--concurrency N]';

const REPO = resolve(__dirname, '..', '..', '..', '..');

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface DrillArgs extends DrillOptions {
  /** Exactly one of `dir` and `compose` is set. */
  dir?: string;
  compose?: ComposeTargetOptions;
  json: boolean;
}

function count(name: string, value: string | undefined, min: number, max: number): number {
  if (value === undefined || !/^\d+$/.test(value)) throw new UsageError(`--${name} needs a whole number`);
  const n = Number(value);
  if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}`);
  return n;
}

function value(argv: string[], i: number, what: string): string {
  const v = argv[i + 1];
  if (v === undefined || v === '' || v.startsWith('--')) throw new UsageError(`${argv[i]} needs ${what}`);
  return v;
}

/** Compose's own rule for project names; anything else it would refuse, later and less clearly. */
const PROJECT_NAME = /^[a-z0-9][a-z0-9_-]*$/;

export function parseDrillArgs(argv: string[]): DrillArgs {
  let dir: string | undefined;
  let compose = false;
  const composeFlags = new Map<string, string>();
  let mode: DrillOptions['mode'] | undefined;
  const args: Omit<DrillArgs, 'dir' | 'compose' | 'mode'> = { failback: false, json: false, loadSeconds: 5, concurrency: 4 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    switch (a) {
      case '--dir':
        dir = value(argv, i++, 'a directory');
        break;
      case '--compose': compose = true; break;
      case '--compose-file':
      case '--credentials':
      case '--topology':
        composeFlags.set(a, value(argv, i++, 'a file'));
        break;
      case '--project-name': {
        const name = value(argv, i++, 'a name');
        if (!PROJECT_NAME.test(name)) throw new UsageError('--project-name must be lowercase letters, digits, "-" and "_", starting with a letter or digit');
        composeFlags.set(a, name);
        break;
      }
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
  if (dir && compose) throw new UsageError('give one of --dir and --compose, not both');
  if (!dir && !compose) throw new UsageError('--dir DIR or --compose is required');
  if (!compose && composeFlags.size > 0) throw new UsageError(`${[...composeFlags.keys()].join(', ')}: only with --compose`);
  if (!mode) throw new UsageError('give --planned or --unplanned');
  if (dir) return { ...args, dir: resolve(dir), mode };
  const credentials = composeFlags.get('--credentials');
  if (!credentials) throw new UsageError('--compose needs --credentials FILE (the credentials.json copied out of the bootstrap container)');
  const projectName = composeFlags.get('--project-name');
  return {
    ...args, mode,
    compose: {
      file: resolve(composeFlags.get('--compose-file') ?? 'docker-compose.yml'),
      ...(projectName ? { projectName } : {}),
      credentials: resolve(credentials),
      topology: resolve(composeFlags.get('--topology') ?? resolve(REPO, 'deploy', 'topology.json')),
    },
  };
}

function readTarget(args: DrillArgs): DrillTarget {
  return args.compose ? readComposeTarget(args.compose) : readTopologyTarget(args.dir as string);
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
    target = readTarget(args);
  } catch (e) {
    if (!(e instanceof TargetError)) throw e;
    err.write(`dr-drill: ${e.message}\n`);
    return 2;
  }
  const report = await runDrill(target, args, (line) => err.write(`${line}\n`));
  out.write(args.json ? `${JSON.stringify(report)}\n` : formatReport(report));
  return report.ok ? 0 : 1;
}
