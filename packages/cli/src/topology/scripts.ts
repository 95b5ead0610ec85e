import { resolve } from 'node:path';
import { runBootstrap } from './bootstrap';
import { loadTopology } from './description';
import { DEFAULT_BASE_PORT, down, status, up } from './local-topology';
import { serveNode } from './sealed-node';

/** The command lines of scripts/topology and scripts/bootstrap; both answer with an exit code. */

const REPO = resolve(__dirname, '..', '..', '..', '..');

export const TOPOLOGY_USAGE = `usage: scripts/topology up --dir DIR [--base-port N] [--topology FILE]
       scripts/topology status --dir DIR
       scripts/topology down --dir DIR
  up starts the multi-cluster topology of FILE (default deploy/topology.json) as local processes
  on 127.0.0.1 (ports N.., default ${DEFAULT_BASE_PORT}), bootstraps it and returns, leaving it running.
`;

export const BOOTSTRAP_USAGE = 'usage: scripts/bootstrap --topology FILE --operator-dir DIR --seal-token-dir DIR\n';

function flags(argv: string[], allowed: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i] as string;
    const value = argv[i + 1];
    if (!allowed.includes(name)) throw new UsageError(`unexpected argument "${name}"`);
    if (value === undefined || value.startsWith('--')) throw new UsageError(`${name} needs a value`);
    out.set(name, value);
  }
  return out;
}

class UsageError extends Error {}

function line(stream: NodeJS.WritableStream): (text: string) => void {
  return (text) => {
    stream.write(`${text}\n`);
  };
}

async function guarded(usage: string, err: NodeJS.WritableStream, run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof UsageError) {
      err.write(`${e.message}\n${usage}`);
      return 2;
    }
    err.write(`${(e as Error).message}\n`);
    return 1;
  }
}

export function runTopologyScript(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'serve-node') return serveNode(rest);
  return guarded(TOPOLOGY_USAGE, err, async () => {
    if (command !== 'up' && command !== 'down' && command !== 'status') throw new UsageError(command === undefined ? 'missing command' : `unknown command "${command}"`);
    const f = flags(rest, command === 'up' ? ['--dir', '--base-port', '--topology'] : ['--dir']);
    const dir = f.get('--dir');
    if (!dir) throw new UsageError('--dir is required');
    if (command === 'down') {
      await down(dir, line(out));
      return 0;
    }
    if (command === 'status') return (await status(dir, line(out))) ? 0 : 1;
    const port = f.get('--base-port');
    let basePort: number | undefined;
    if (port !== undefined) {
      basePort = Number(port);
      if (!Number.isInteger(basePort) || basePort < 1024 || basePort > 65_000) throw new UsageError('--base-port must be a whole number from 1024 to 65000');
    }
    const topology = loadTopology(resolve(f.get('--topology') ?? resolve(REPO, 'deploy', 'topology.json')));
    await up({ dir, topology, out: line(out), ...(basePort !== undefined ? { basePort } : {}) });
    return 0;
  });
}

export function runBootstrapScript(argv: string[], out: NodeJS.WritableStream = process.stdout, err: NodeJS.WritableStream = process.stderr): Promise<number> {
  return guarded(BOOTSTRAP_USAGE, err, async () => {
    const f = flags(argv, ['--topology', '--operator-dir', '--seal-token-dir']);
    const file = f.get('--topology');
    const operatorDir = f.get('--operator-dir');
    const sealTokenDir = f.get('--seal-token-dir');
    if (!file || !operatorDir || !sealTokenDir) throw new UsageError('--topology, --operator-dir and --seal-token-dir are required');
    await runBootstrap({ topology: loadTopology(resolve(file)), operatorDir, sealTokenDir, log: line(out) });
    return 0;
  });
}
