import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevServer } from './test-support/cli-runner';

/**
 * The cloud providers' SDKs (snapshot targets, secret sync destinations, the cloud1 engines'
 * calls) are loaded when first used. Loaded at start they were most of a server's start-up
 * time, paid by every server that never uses them.
 */
const LOADED_ON_FIRST_USE = /[\\/]node_modules[\\/](@aws-sdk|@aws-crypto|@smithy|@azure|@google-cloud|google-gax|google-auth-library|gaxios|libsodium-wrappers|pkijs)[\\/]/;

describe('a server start', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-start-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('loads no cloud provider SDK until something uses one', async () => {
    const list = join(dir, 'loaded.json');
    const preload = join(dir, 'list-modules.js');
    // Preloaded into the server: on SIGUSR2 it writes the paths of every CommonJS module loaded
    // so far (what the SDKs are), whole: written aside, then renamed into place.
    writeFileSync(preload, [
      `process.on('SIGUSR2', () => {`,
      `  const fs = require('node:fs');`,
      `  fs.writeFileSync(${JSON.stringify(`${list}.part`)}, JSON.stringify(Object.keys(require.cache)));`,
      `  fs.renameSync(${JSON.stringify(`${list}.part`)}, ${JSON.stringify(list)});`,
      `});`,
    ].join('\n'));
    const dev = await startDevServer(['-r', preload]);
    try {
      // A request through the whole pipeline, and the mounts of every engine that calls a provider.
      const headers = { 'x-vault-token': dev.rootToken };
      const post = (path: string, body: unknown) => fetch(`${dev.address}/v1/${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      expect((await post('secret/data/hello', { data: { a: 'b' } })).status).toBe(200);
      expect((await post('sys/auth/cloud1', { type: 'cloud1' })).status).toBe(204);
      expect((await post('sys/mounts/cloud1', { type: 'cloud1' })).status).toBe(204);
      dev.proc.kill('SIGUSR2');
      const deadline = Date.now() + 10_000;
      while (!existsSync(list) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const loaded = JSON.parse(readFileSync(list, 'utf8')) as string[];
      // The list is of the server's modules: the gRPC library of its cluster port is among them.
      expect(loaded.some((path) => /[\\/]node_modules[\\/]@grpc[\\/]grpc-js[\\/]/.test(path))).toBe(true);
      expect(loaded.filter((path) => LOADED_ON_FIRST_USE.test(path))).toEqual([]);
    } finally {
      await dev.stop();
    }
  }, 90_000);
});
