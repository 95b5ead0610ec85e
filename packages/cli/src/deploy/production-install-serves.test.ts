/**
 * What the image does, done here in a temporary directory: the build stage's step that lays
 * out the workspaces' manifests and built output (run from deploy/Dockerfile itself), the
 * runtime stage's `npm ci --omit=dev --ignore-scripts`, then a server from that
 * tree initializes, unseals and serves transit. It fails when a package the server needs at run
 * time is only a dev dependency, or when the built tree misses a file the server reads
 * (`npm test` builds first, so the built output is current).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test-support/cli-runner';
import { ROOT, runtimeTreeStep } from './test-support/dockerfile';

const MINUTES = 60_000;

let dir: string;
let server: ChildProcess | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'production-install-'));
});

afterAll(async () => {
  if (server && server.exitCode === null && server.signalCode === null) {
    const gone = new Promise((r) => server!.once('exit', r));
    server.kill('SIGKILL');
    await gone;
  }
  rmSync(dir, { recursive: true, force: true });
});

/** The build stage's own step that lays out the runtime's tree, run here into `to`. */
function copyBuiltTree(to: string): void {
  const step = runtimeTreeStep().replaceAll('/out', to);
  const r = spawnSync('sh', ['-c', step], { cwd: ROOT, encoding: 'utf8', timeout: MINUTES });
  expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
}

let log = '';

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 2 * MINUTES;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (server && (server.exitCode !== null || server.signalCode !== null)) throw new Error(`${what}: the server exited:\n${log}`);
    if (Date.now() > deadline) throw new Error(`${what}: not in time; the server said:\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

it('gives a server that initializes, unseals and serves transit', async () => {
  expect(existsSync(join(ROOT, 'packages/cli/dist/main.js'))).toBe(true);
  copyBuiltTree(dir);
  // Offline first: the packages are in npm's cache from the repository's own install.
  const install = spawnSync('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], {
    cwd: dir, encoding: 'utf8', timeout: 5 * MINUTES, env: { ...process.env, npm_config_loglevel: 'error' },
  });
  expect({ status: install.status, stderr: install.status === 0 ? '' : install.stderr }).toEqual({ status: 0, stderr: '' });
  for (const devOnly of ['jest', 'typescript', 'vite', 'fauxqs', 'azurite']) {
    expect(`${devOnly}: ${existsSync(join(dir, 'node_modules', devOnly))}`).toBe(`${devOnly}: false`);
  }

  const [apiPort, clusterPort] = [await freePort(), await freePort()];
  writeFileSync(join(dir, 'server.hcl'), [
    `storage "raft" {\n  path = "${join(dir, 'data')}"\n  node_id = "node-1"\n}`,
    `listener "tcp" {\n  address = "127.0.0.1:${apiPort}"\n  cluster_address = "127.0.0.1:${clusterPort}"\n  tls_disable = true\n}`,
    `api_addr = "http://127.0.0.1:${apiPort}"`,
    '',
  ].join('\n'));
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production' };
  for (const k of Object.keys(env)) if (/^(VAULT|STRONGROOM)_/.test(k)) delete env[k];
  server = spawn(process.execPath, ['packages/cli/bin/strongroom.js', 'server', `-config=${join(dir, 'server.hcl')}`], {
    cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout!.on('data', (d: Buffer) => { log += d.toString(); });
  server.stderr!.on('data', (d: Buffer) => { log += d.toString(); });

  const api = `http://127.0.0.1:${apiPort}/v1`;
  const call = (method: string, path: string, body?: unknown, token?: string) =>
    fetch(`${api}/${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { 'x-vault-token': token } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      // A server that accepts and never answers must fail the probe, not hang it.
      signal: AbortSignal.timeout(20_000),
    });

  await until('the server answers', async () => ((await call('GET', 'sys/health')).status === 501 ? true : undefined));
  const init = (await (await call('PUT', 'sys/init', { secret_shares: 1, secret_threshold: 1 })).json()) as { keys_base64: string[]; root_token: string };
  expect((await call('PUT', 'sys/unseal', { key: init.keys_base64[0] })).status).toBe(200);
  await until('active', async () => ((await call('GET', 'sys/health')).status === 200 ? true : undefined));

  expect((await call('POST', 'sys/mounts/transit', { type: 'transit' }, init.root_token)).status).toBe(204);
  const encrypted = await until('transit encrypts', async () => {
    const res = await call('POST', 'transit/encrypt/k', { plaintext: Buffer.from('hello').toString('base64') }, init.root_token);
    return res.status === 200 ? ((await res.json()) as { data: { ciphertext: string } }).data.ciphertext : undefined;
  });
  expect(encrypted).toMatch(/^vault:v1:/);
  expect((await fetch(`http://127.0.0.1:${apiPort}/ui/`, { signal: AbortSignal.timeout(20_000) })).status).toBe(200);

  const exited = new Promise<number | null>((r) => server!.once('exit', (code) => r(code)));
  server.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(log).not.toContain(init.root_token);
}, 10 * MINUTES);
