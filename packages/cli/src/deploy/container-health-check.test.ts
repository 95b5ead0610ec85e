/**
 * deploy/healthcheck.js, the image's HEALTHCHECK and the compose file's: healthy exactly when
 * sys/health answers 2xx, and unhealthy (not hung) when nothing answers.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';

const SCRIPT = resolve(__dirname, '../../../../deploy/healthcheck.js');

let server: Server;
let status = 200;
const seen: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end('{"initialized":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

function run(url: string): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [SCRIPT, url], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, out });
    });
  });
}

const url = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/sys/health?standbyok=true`;

it.each([[200, 0], [204, 0], [429, 1], [472, 1], [501, 1], [503, 1]])('sys/health %i makes it exit %i', async (code, exit) => {
  status = code;
  const r = await run(url());
  expect(r.code).toBe(exit);
  expect(r.out).toBe(`sys/health: ${code}\n`);
  expect(seen.at(-1)).toBe('/v1/sys/health?standbyok=true');
});

it('is unhealthy when nothing listens', async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const r = await run(`http://127.0.0.1:${port}/v1/sys/health`);
  expect(r.code).toBe(1);
  expect(r.out).toMatch(/^sys\/health: /);
});

it('by default asks the local API port, counting standbys, performance standbys and DR secondaries as healthy', () => {
  const text = readFileSync(SCRIPT, 'utf8');
  const found = /'(http:\/\/127\.0\.0\.1:8200\/v1\/sys\/health\?[^']+)'/.exec(text)?.[1];
  expect(found).toBeDefined();
  const params = new URL(found as string).searchParams;
  expect(Object.fromEntries(params)).toEqual({
    standbyok: 'true', perfstandbyok: 'true', drsecondarycode: '200', sealedcode: '503', uninitcode: '501',
  });
});
