import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Context } from '../command';
import { main } from '../main';

/**
 * Snapshot save and restore against a stand-in that sends the snapshot slowly, in chunks, so
 * that the progress line has something to show; through main() in this process, with stderr
 * said to be a terminal or not.
 */

const CHUNK = 64 * 1024;
const CHUNKS = 4;
const GAP_MS = 300;

function sink(): { stream: NodeJS.WritableStream; text: () => string } {
  let text = '';
  const stream = { write: (chunk: string) => { text += chunk; return true; } } as unknown as NodeJS.WritableStream;
  return { stream, text: () => text };
}

const draws = (err: string) => err.split('\r\x1b[K').filter((l) => l !== '');

describe('strongroom operator raft snapshot save and restore show progress on a terminal only', () => {
  let server: Server;
  let url: string;
  let dir: string;
  let withLength = true;
  let restored = Buffer.alloc(0);
  const snapshot = Buffer.alloc(CHUNK * CHUNKS, 7);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-snapshot-progress-'));
    server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/v1/sys/storage/raft/snapshot') {
        res.writeHead(200, { 'content-type': 'application/gzip', ...(withLength ? { 'content-length': String(snapshot.length) } : {}) });
        // Flushed first, so the command starts its clock before any byte arrives.
        res.flushHeaders();
        let sent = 0;
        const next = () => {
          res.write(snapshot.subarray(sent * CHUNK, (sent + 1) * CHUNK));
          sent++;
          if (sent < CHUNKS) setTimeout(next, GAP_MS);
          else res.end();
        };
        setTimeout(next, GAP_MS);
        return;
      }
      if (req.method === 'POST' && req.url === '/v1/sys/storage/raft/snapshot') {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          restored = Buffer.concat(chunks);
          res.writeHead(204).end();
        });
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"errors":["no handler"]}');
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((ok) => server.close(ok));
    rmSync(dir, { recursive: true, force: true });
  });

  async function cli(argv: string[], tty: boolean): Promise<{ code: number; out: string; err: string }> {
    const out = sink();
    const err = sink();
    const ctx: Context = { out: out.stream, err: err.stream, env: { VAULT_ADDR: url, VAULT_TOKEN: 'root' }, stdin: () => '', errIsTTY: tty };
    const code = await main(argv, out.stream, err.stream, ctx);
    return { code, out: out.text(), err: err.text() };
  }

  it('save shows bytes of the length the server sent, the rate and the ETA, then clears the line', async () => {
    withLength = true;
    const file = join(dir, 'with-length.snap');
    const r = await cli(['operator', 'raft', 'snapshot', 'save', file], true);
    expect(r.code).toBe(0);
    expect(r.out).toBe(`Snapshot saved to ${file} (${snapshot.length} bytes)\n`);
    expect(readFileSync(file)).toEqual(snapshot);
    // How the chunks arrive depends on the socket: every draw has the same shape, whatever it counted.
    const lines = draws(r.err);
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const line of lines) expect(line).toMatch(/^Saving snapshot {2}[\d.]+ (B|KiB) \/ 256\.0 KiB {2}\d+% {2}[\d.]+ (B|KiB|MiB)\/s {2}ETA \S+$/);
    expect(r.err.endsWith('\r\x1b[K')).toBe(true);
  }, 30_000);

  it('save of a streamed snapshot (no length) shows bytes and the rate but no total or ETA', async () => {
    withLength = false;
    const r = await cli(['operator', 'raft', 'snapshot', 'save', join(dir, 'streamed.snap')], true);
    expect(r.code).toBe(0);
    const lines = draws(r.err);
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const line of lines) expect(line).toMatch(/^Saving snapshot {2}[\d.]+ (B|KiB) {2}[\d.]+ (B|KiB|MiB)\/s$/);
  }, 30_000);

  it('restore shows bytes of the file\'s size and sends the file whole', async () => {
    const file = join(dir, 'restore.snap');
    writeFileSync(file, snapshot);
    const r = await cli(['operator', 'raft', 'snapshot', 'restore', file], true);
    expect(r.code).toBe(0);
    expect(r.out).toBe(`Snapshot restored from ${file} (${snapshot.length} bytes)\n`);
    expect(restored).toEqual(snapshot);
    expect(draws(r.err)[0]).toMatch(/^Restoring snapshot {2}[\d.]+ KiB \/ 256\.0 KiB {2}\d+%/);
    expect(r.err.endsWith('\r\x1b[K')).toBe(true);
  }, 30_000);

  it('writes nothing to stderr for save or restore when it is not a terminal', async () => {
    withLength = true;
    const file = join(dir, 'quiet.snap');
    const saved = await cli(['operator', 'raft', 'snapshot', 'save', file], false);
    expect(saved).toEqual({ code: 0, err: '', out: `Snapshot saved to ${file} (${snapshot.length} bytes)\n` });
    const back = await cli(['operator', 'raft', 'snapshot', 'restore', file], false);
    expect(back).toEqual({ code: 0, err: '', out: `Snapshot restored from ${file} (${snapshot.length} bytes)\n` });
  }, 30_000);
});
