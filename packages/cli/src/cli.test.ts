import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// These run the built command (`npm test` builds first), as a user would.
const BIN = resolve(__dirname, '../bin/strongroom.js');
const REPO = resolve(__dirname, '../../..');

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => ok(port));
    });
    s.on('error', fail);
  });
}

function run(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Starts a long-running command and resolves once its output matches `ready`. */
function start(args: string[], ready: RegExp): Promise<{ proc: ChildProcess; output: () => string }> {
  const proc = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`not ready: ${output}`)), 20_000);
    const onData = (d: Buffer) => {
      output += d.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        ok({ proc, output: () => output });
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', onData);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`exited ${code}: ${output}`));
    });
  });
}

function exitOf(proc: ChildProcess): Promise<number | null> {
  return new Promise((ok) => proc.once('exit', (code) => ok(code)));
}

describe('the strongroom command', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a bad config file with the file, the field and the rule, and exit code 1', () => {
    const file = join(dir, 'bad.hcl');
    writeFileSync(file, 'storage "raft" {\n  path = "x"\n}\nlistener "tcp" {\n  address = "127.0.0.1:99999"\n  tls_disable = true\n}\n');
    const r = run(['server', '--config', file]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(file);
    expect(r.err).toContain('listener.tcp[0].address');
  });

  it('refuses to start when the cluster port is taken, naming cluster_address, instead of failing init later', async () => {
    const port = await freePort();
    const blocker = net.createServer();
    const clusterPort = await new Promise<number>((ok) => blocker.listen(0, '127.0.0.1', () => ok((blocker.address() as net.AddressInfo).port)));
    try {
      const file = join(dir, 'busy.hcl');
      writeFileSync(file, `storage "raft" {\n  path = "${join(dir, 'data')}"\n  node_id = "n1"\n}\nlistener "tcp" {\n  address = "127.0.0.1:${port}"\n  cluster_address = "127.0.0.1:${clusterPort}"\n  tls_disable = true\n}\n`);
      const r = run(['server', '--config', file]);
      expect(r.code).toBe(1);
      expect(r.err).toContain('listener.tcp[0].cluster_address');
      expect(r.err).toContain(`127.0.0.1:${clusterPort} is in use`);
    } finally {
      blocker.close();
    }
  });

  it('runs a configured server through init, unseal, write, read and list, and stops on SIGTERM', async () => {
    const port = await freePort();
    // A port of its own for the cluster too: the default, the API port plus one, may be taken.
    const clusterPort = await freePort();
    const file = join(dir, 'server.hcl');
    writeFileSync(file, `storage "raft" {\n  path = "${join(dir, 'data')}"\n  node_id = "n1"\n}\nlistener "tcp" {\n  address = "127.0.0.1:${port}"\n  cluster_address = "127.0.0.1:${clusterPort}"\n  tls_disable = true\n}\n`);
    const { proc } = await start(['server', '-config', file], /not initialized/);
    const env = { STRONGROOM_ADDR: `http://127.0.0.1:${port}` };
    try {
      const init = run(['operator', 'init', '-key-shares=3', '-key-threshold=2'], env);
      expect({ code: init.code, err: init.err }).toEqual({ code: 0, err: '' });
      const keys = [...init.out.matchAll(/Unseal Key \d: (\S+)/g)].map((m) => m[1] as string);
      const token = /Initial Root Token: (\S+)/.exec(init.out)?.[1] as string;
      expect(keys).toHaveLength(3);
      expect(run(['status'], env).code).toBe(2);
      run(['operator', 'unseal', keys[0] as string], env);
      const unsealed = run(['operator', 'unseal', keys[2] as string], env);
      expect(unsealed.out).toMatch(/Sealed\s+false/);

      const auth = { ...env, STRONGROOM_TOKEN: token };
      expect(run(['write', 'sys/mounts/kv', 'type=kv-v2'], auth).code).toBe(0);
      expect(run(['write', 'kv/data/app', 'data={}'], auth).code).toBe(2); // data must be an object
      const policy = run(['write', 'sys/policies/acl/x', 'policy=path "kv/*" { capabilities = ["read"] }'], auth);
      expect(policy.code).toBe(0);
      const read = run(['read', '-format=json', 'sys/policies/acl/x'], auth);
      expect(JSON.parse(read.out).data.name).toBe('x');
      expect(JSON.parse(run(['list', '-format=json', 'sys/policies/acl'], auth).out)).toContain('x');
      const denied = run(['read', 'sys/policies/acl/x'], env);
      expect(denied.code).toBe(2);
      expect(denied.err).toContain('403');
    } finally {
      proc.kill('SIGTERM');
    }
    expect(await exitOf(proc)).toBe(0);
    // Storage was closed cleanly: another server can open the same directory.
    const again = await start(['server', '-config', file], /sealed/);
    again.proc.kill('SIGTERM');
    expect(await exitOf(again.proc)).toBe(0);
    // Two server starts and a dozen command processes: on a busy two-core machine that takes
    // longer than Jest's default.
  }, 180_000);

  it('exits with an error naming storage.raft.path when the path cannot be created, even under /proc', async () => {
    const port = await freePort();
    const clusterPort = await freePort();
    // Node's recursive mkdir never settles under /proc: this start used to spin for good.
    for (const [name, path, why] of [
      ['proc', '/proc/strongroom-nope/data', 'does not allow new entries'],
      ['notdir', `${join(dir, 'a-file')}/data`, 'not a directory'],
    ] as const) {
      writeFileSync(join(dir, 'a-file'), '');
      const file = join(dir, `${name}.hcl`);
      writeFileSync(file, `storage "raft" {\n  path = "${path}"\n  node_id = "n1"\n}\nlistener "tcp" {\n  address = "127.0.0.1:${port}"\n  cluster_address = "127.0.0.1:${clusterPort}"\n  tls_disable = true\n}\n`);
      // SIGKILL on time-out: the stuck start this guards against also ignored SIGTERM.
      const r = spawnSync(process.execPath, [BIN, 'server', '--config', file], { encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' });
      expect({ code: r.status, err: r.stderr }).toEqual({ code: 1, err: expect.stringContaining('storage.raft.path') });
      expect(r.stderr).toContain(path);
      expect(r.stderr).toContain(why);
    }
  });

  it('stops on SIGTERM even while a start-up step is stuck', async () => {
    // A config file that is a FIFO with no writer: reading it blocks a thread-pool thread for good.
    const fifo = join(dir, 'config.hcl');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const proc = spawn(process.execPath, [BIN, 'server', '--config', fifo], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    proc.stdout?.on('data', (d: Buffer) => { output += d.toString(); });
    const exited = new Promise<NodeJS.Signals | number | null>((ok) => proc.once('exit', (code, signal) => ok(signal ?? code)));
    // Wait until it opens the FIFO (the signal handlers are installed before anything is read):
    // a writer's non-blocking open fails with ENXIO until a reader is there. Holding the write
    // end without writing keeps the read stuck.
    const writer = await pollFor(() => {
      try {
        return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENXIO') return undefined;
        throw err;
      }
    }, 30_000);
    proc.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise<'hung'>((r) => { timer = setTimeout(() => r('hung'), 15_000); })]);
    clearTimeout(timer);
    if (code === 'hung') proc.kill('SIGKILL');
    closeSync(writer);
    // Ended by the signal's own default action: the stuck read would hold any other exit.
    expect(code).toBe('SIGTERM');
    expect(output).toContain('SIGTERM received during start-up');
  }, 60_000);

  it('starts a dev server that prints its address, unseal key and root token', async () => {
    const port = await freePort();
    const { proc, output } = await start(['server', '--dev', '--listen', `127.0.0.1:${port}`, '--dev-root-token', 'dev-root'], /Root Token/);
    try {
      expect(output()).toContain(`http://127.0.0.1:${port}`);
      expect(output()).toMatch(/Unseal Key: \S+/);
      const res = await fetch(`http://127.0.0.1:${port}/v1/secret/data/hello`, {
        method: 'POST', headers: { 'x-vault-token': 'dev-root' }, body: JSON.stringify({ data: { hi: 'there' } }),
      });
      expect(res.status).toBe(200);
    } finally {
      proc.kill('SIGINT');
    }
    expect(await exitOf(proc)).toBe(0);
  });

  it('serves a dev server\'s first request only once it is ready: health 200 means secret/ is mounted', async () => {
    const port = await freePort();
    const proc = spawn(process.execPath, [BIN, 'server', '--dev', '--listen', `127.0.0.1:${port}`, '--dev-root-token', 'dev-root'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = exitOf(proc);
    try {
      // Poll from the moment the process starts: the first answer the port gives must be ready.
      const deadline = Date.now() + 60_000;
      let health: Response | undefined;
      while (!health && Date.now() < deadline && proc.exitCode === null) {
        health = await fetch(`http://127.0.0.1:${port}/v1/sys/health`).catch(() => undefined);
        if (!health) await new Promise((r) => setTimeout(r, 5));
      }
      expect(health?.status).toBe(200);
      const write = await fetch(`http://127.0.0.1:${port}/v1/secret/data/first`, {
        method: 'POST', headers: { 'x-vault-token': 'dev-root' }, body: JSON.stringify({ data: { a: '1' } }),
      });
      expect(write.status).toBe(200);
    } finally {
      proc.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  }, 90_000);

  it('starts from the README\'s `npm run dev`', async () => {
    const port = await freePort();
    // Its own process group, so that npm, its shell and the server all stop together.
    const proc = spawn('npm', ['run', 'dev', '--', '--listen', `127.0.0.1:${port}`], { cwd: REPO, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    proc.stdout?.on('data', (d: Buffer) => { output += d.toString(); });
    proc.stderr?.on('data', (d: Buffer) => { output += d.toString(); });
    try {
      const deadline = Date.now() + 60_000;
      while (!/Root Token/.test(output) && Date.now() < deadline && proc.exitCode === null) await new Promise((r) => setTimeout(r, 100));
      expect(output).toMatch(/Root Token: \S+/);
      const health = await fetch(`http://127.0.0.1:${port}/v1/sys/health`);
      expect(health.status).toBe(200);
    } finally {
      if (proc.pid) process.kill(-proc.pid, 'SIGINT');
    }
    await exitOf(proc);
  }, 90_000);

  it('is available as npx strongroom from the checkout', () => {
    const r = spawnSync('npx', ['--no-install', 'strongroom', 'help'], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Usage: strongroom');
  });
});

/** Calls `attempt` every 50 ms until it gives a value, for at most `timeoutMs`. */
async function pollFor<T>(attempt: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = attempt();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`nothing after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
