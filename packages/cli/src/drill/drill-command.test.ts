import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseDrillArgs } from './drill-command';
import { readTopologyTarget } from './topology-state';

/**
 * The drill's command line and its reading of a topology directory, without servers: usage
 * errors and a target that cannot be read exit 2 with a message, and a node of the state file is
 * killed and started again as the state says, its new pid written back.
 */

const ROOT = resolve(__dirname, '../../../..');
const BIN = join(ROOT, 'scripts', 'dr-drill');
const DIST = join(ROOT, 'packages', 'cli', 'dist', 'index.js');

function runBin(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      ok({ code, out, err });
    });
  });
}

let dir: string;
const started: number[] = [];

async function reaped(pid: number): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'strongroom-drill-args-'));
});

afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

describe('dr-drill arguments', () => {
  it('takes the documented flags with their defaults', () => {
    expect(parseDrillArgs(['--dir', '/tmp/x', '--planned'])).toEqual({ dir: '/tmp/x', mode: 'planned', failback: false, json: false, loadSeconds: 5, concurrency: 4 });
    expect(parseDrillArgs(['--unplanned', '--dir', 'd', '--failback', '--json', '--load-seconds', '2', '--concurrency', '8']))
      .toMatchObject({ mode: 'unplanned', failback: true, json: true, loadSeconds: 2, concurrency: 8 });
  });

  it('takes a compose deployment: the compose file and the topology description by default, the credentials always', () => {
    expect(parseDrillArgs(['--compose', '--credentials', 'c.json', '--planned'])).toEqual({
      mode: 'planned', failback: false, json: false, loadSeconds: 5, concurrency: 4,
      compose: { file: resolve('docker-compose.yml'), credentials: resolve('c.json'), topology: join(ROOT, 'deploy', 'topology.json') },
    });
    expect(parseDrillArgs(['--unplanned', '--compose', '--compose-file', '/x/c.yml', '--project-name', 'sr_2-a', '--credentials', '/x/cred.json', '--topology', '/x/t.json']).compose)
      .toEqual({ file: '/x/c.yml', projectName: 'sr_2-a', credentials: '/x/cred.json', topology: '/x/t.json' });
  });

  it.each([
    [[], /--dir DIR or --compose is required/],
    [['--planned', '--dir'], /--dir needs a directory/],
    [['--dir', 'd', '--compose', '--credentials', 'c', '--planned'], /give one of --dir and --compose, not both/],
    [['--compose', '--planned'], /--compose needs --credentials FILE/],
    [['--compose', '--credentials', '--planned'], /--credentials needs a file/],
    [['--dir', 'd', '--credentials', 'c', '--project-name', 'p', '--planned'], /--credentials, --project-name: only with --compose/],
    [['--compose', '--credentials', 'c', '--project-name', 'Strong Room', '--planned'], /--project-name must be lowercase letters, digits/],
    [['--compose', '--credentials', 'c', '--project-name', '-x', '--planned'], /--project-name must be lowercase letters, digits/],
    [['--dir', 'd'], /--planned or --unplanned/],
    [['--dir', 'd', '--planned', '--unplanned'], /not both/],
    [['--dir', 'd', '--planned', '--load-seconds', 'soon'], /--load-seconds needs a whole number/],
    [['--dir', 'd', '--planned', '--concurrency', '0'], /--concurrency must be between 1 and 64/],
    [['--dir', 'd', '--planned', '--fast'], /unknown argument "--fast"/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseDrillArgs(argv as string[])).toThrow(message);
  });

  it('exits 2 with the message and the usage on a usage error or a missing topology', async () => {
    const usage = await runBin(['--planned']);
    expect([usage.code, usage.out]).toEqual([2, '']);
    expect(usage.err).toMatch(/--dir DIR or --compose is required\nusage: dr-drill \(--dir DIR \| --compose --credentials FILE/);
    const both = await runBin(['--dir', dir, '--compose', '--credentials', 'c', '--planned']);
    expect([both.code, both.out]).toEqual([2, '']);
    expect(both.err).toMatch(/give one of --dir and --compose, not both/);
    const missing = await runBin(['--dir', join(dir, 'nothing-here'), '--planned', '--json']);
    expect([missing.code, missing.out]).toEqual([2, '']);
    expect(missing.err).toMatch(/cannot read the topology state .*topology-state\.json: ENOENT/);
    const noCompose = await runBin(['--compose', '--compose-file', join(dir, 'none.yml'), '--credentials', join(dir, 'c.json'), '--planned']);
    expect([noCompose.code, noCompose.out]).toEqual([2, '']);
    expect(noCompose.err).toMatch(/cannot read the compose file .*none\.yml: ENOENT/);
  });

  it('loads the YAML parser only for a compose deployment', () => {
    // Whether the run pulled in the parser, after it has read (and failed to read) its target.
    const loadsYaml = (args: string[]) => spawnSync(process.execPath, ['-e', `
      const { runDrillScript } = require(${JSON.stringify(DIST)});
      const devNull = { write: () => true };
      runDrillScript(${JSON.stringify(args)}, devNull, devNull).then((code) => {
        const yaml = Object.keys(require.cache).some((f) => f.includes('/node_modules/yaml/'));
        process.stdout.write(code + ' ' + yaml);
      });`], { encoding: 'utf8', timeout: 20_000 }).stdout;
    expect(loadsYaml(['--dir', join(dir, 'nothing-here'), '--planned'])).toBe('2 false');
    expect(loadsYaml(['--compose', '--compose-file', join(ROOT, 'docker-compose.yml'), '--credentials', join(dir, 'none.json'), '--planned'])).toBe('2 true');
  });
});

describe('the topology directory', () => {
  it('kills a node by its pid and starts it again from its start block, writing the new pid back', async () => {
    const topo = join(dir, 'topo');
    mkdirSync(join(topo, 'operator'), { recursive: true });
    const log = join(topo, 'node.log');
    const script = 'process.stdout.write(`up ${process.env.DRILL_TEST_VALUE}\\n`); setInterval(() => {}, 1000);';
    const node = (name: string) => ({
      name, api_addr: 'http://127.0.0.1:1', cluster_addr: 'https://127.0.0.1:2', pid: 0, dir: topo,
      start: { argv: [process.execPath, '-e', script], env: { DRILL_TEST_VALUE: name }, cwd: topo, log },
    });
    const state = { base_port: 1, clusters: { unseal: { nodes: [node('unseal')] }, primary: { nodes: [node('primary-1')] }, dr: { nodes: [node('dr-1')] } } };
    writeFileSync(join(topo, 'topology-state.json'), JSON.stringify(state));
    writeFileSync(join(topo, 'operator', 'credentials.json'), JSON.stringify({ primary: { recovery_keys_b64: ['a2V5'], root_token: 'root' } }));

    const lines = async (n: number) => {
      const deadline = Date.now() + 15_000;
      while (readFileSync(log, 'utf8').split('\n').filter(Boolean).length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    };
    writeFileSync(log, '');
    const target = readTopologyTarget(topo);
    expect(target.credentials.keyShares).toEqual(['a2V5']);
    expect(target.performance).toBeNull();
    const primary1 = target.pair[0].nodes[0]!;
    await primary1.start();
    const pidOf = () => (JSON.parse(readFileSync(join(topo, 'topology-state.json'), 'utf8')).clusters.primary.nodes[0].pid as number);
    const first = pidOf();
    started.push(first);
    expect(first).toBeGreaterThan(0);
    await lines(1);
    // Started while it runs, it is left as it is.
    await primary1.start();
    expect(pidOf()).toBe(first);
    await primary1.kill('SIGKILL');
    // Dead at once; gone from the process table once this process (its parent) has reaped it.
    expect(await reaped(first)).toBe(true);
    await primary1.start();
    const second = pidOf();
    started.push(second);
    expect(second).not.toBe(first);
    expect(() => process.kill(second, 0)).not.toThrow();
    // The other clusters' entries are kept as they were.
    const after = JSON.parse(readFileSync(join(topo, 'topology-state.json'), 'utf8'));
    expect(after.clusters.unseal.nodes[0]).toEqual(state.clusters.unseal.nodes[0]);
    expect(after.base_port).toBe(1);
    await lines(2);
    await primary1.kill('SIGTERM');
    // Both runs appended to the one log, with the start block's environment.
    expect(readFileSync(log, 'utf8')).toBe('up primary-1\nup primary-1\n');
  });

  it('refuses to signal a pid that runs another command than the node\'s', async () => {
    const topo = join(dir, 'other');
    mkdirSync(join(topo, 'operator'), { recursive: true });
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    started.push(other.pid as number);
    const one = { name: 'n', api_addr: 'http://127.0.0.1:1', pid: other.pid, start: { argv: [process.execPath, '-e', 'setInterval(() => {}, 2000)'], log: join(topo, 'log') } };
    writeFileSync(join(topo, 'topology-state.json'), JSON.stringify({ clusters: { primary: { nodes: [one] }, dr: { nodes: [one] } } }));
    writeFileSync(join(topo, 'operator', 'credentials.json'), JSON.stringify({ primary: { unseal_keys_b64: ['a2V5'], root_token: 'root' } }));
    await expect(readTopologyTarget(topo).pair[0].nodes[0]!.kill('SIGKILL')).rejects.toThrow(/pid \d+ runs another command than the state's start argv/);
    expect(() => process.kill(other.pid as number, 0)).not.toThrow();
  });

  it('names what is missing from the credentials', () => {
    const topo = join(dir, 'bad');
    mkdirSync(join(topo, 'operator'), { recursive: true });
    writeFileSync(join(topo, 'topology-state.json'), JSON.stringify({ clusters: { primary: { nodes: [] } } }));
    writeFileSync(join(topo, 'operator', 'credentials.json'), '{}');
    expect(() => readTopologyTarget(topo)).toThrow(/cluster "primary" has no nodes/);
    const one = { name: 'n', api_addr: 'http://127.0.0.1:1', start: { argv: ['x'], log: join(topo, 'log') } };
    writeFileSync(join(topo, 'topology-state.json'), JSON.stringify({ clusters: { primary: { nodes: [one] }, dr: { nodes: [one] } } }));
    expect(() => readTopologyTarget(topo)).toThrow(/credentials\.json: "primary" needs "root_token" and its key shares/);
  });
});
