import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// The built command (`npm test` builds first), as a user starts it.
const BIN = resolve(__dirname, '../bin/strongroom.js');

/**
 * The cloud providers' SDKs (snapshot targets, secret sync destinations, the cloud1 engines'
 * calls) are loaded when first used. Loaded at start they were most of a server's start-up
 * time, paid by every server that never uses them.
 */
const LOADED_ON_FIRST_USE = /[\\/]node_modules[\\/](@aws-sdk|@azure|@google-cloud|libsodium-wrappers|pkijs)[\\/]/;

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => ok(port));
    });
    s.on('error', fail);
  });
}

describe('a server start', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-start-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loads no cloud provider SDK until something uses one', async () => {
    const list = join(dir, 'loaded.json');
    const preload = join(dir, 'list-modules.js');
    // Preloaded into the server: on SIGUSR2 it writes the paths of every module loaded so far.
    writeFileSync(preload, `process.on('SIGUSR2', () => require('node:fs').writeFileSync(${JSON.stringify(list)}, JSON.stringify(Object.keys(require.cache))));\n`);
    const port = await freePort();
    const proc = spawn(process.execPath, ['-r', preload, BIN, 'server', '--dev', '--listen', `127.0.0.1:${port}`, '--dev-root-token', 'dev-root'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let output = '';
      await new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`not ready: ${output}`)), 30_000);
        const onData = (d: Buffer) => {
          output += d.toString();
          if (/Root Token/.test(output)) {
            clearTimeout(timer);
            ok();
          }
        };
        proc.stdout.on('data', onData);
        proc.stderr.on('data', onData);
        proc.on('exit', (code) => {
          clearTimeout(timer);
          fail(new Error(`exited ${code}: ${output}`));
        });
      });
      // A request through the whole pipeline, and the mounts of every engine that calls a provider.
      const headers = { 'x-vault-token': 'dev-root' };
      expect((await fetch(`http://127.0.0.1:${port}/v1/secret/data/hello`, { method: 'POST', headers, body: JSON.stringify({ data: { a: 'b' } }) })).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/v1/sys/auth/cloud1`, { method: 'POST', headers, body: JSON.stringify({ type: 'cloud1' }) })).status).toBe(204);
      expect((await fetch(`http://127.0.0.1:${port}/v1/sys/mounts/cloud1`, { method: 'POST', headers, body: JSON.stringify({ type: 'cloud1' }) })).status).toBe(204);
      proc.kill('SIGUSR2');
      const deadline = Date.now() + 10_000;
      while (!existsSync(list) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const loaded = JSON.parse(readFileSync(list, 'utf8')) as string[];
      // The list is of the server's modules: the gRPC library of its cluster port is among them.
      expect(loaded.some((path) => /[\\/]node_modules[\\/]@grpc[\\/]grpc-js[\\/]/.test(path))).toBe(true);
      expect(loaded.filter((path) => LOADED_ON_FIRST_USE.test(path))).toEqual([]);
    } finally {
      proc.kill('SIGKILL');
    }
  }, 60_000);
});
