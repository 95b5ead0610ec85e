import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';

/**
 * `strongroom-emulator s3` runs the S3 emulator (fauxqs) on the address asked, as its own
 * process: the way a local deployment runs it in the background. Runs the BUILT bin (the
 * package is ESM only, which the bin loads with import()).
 */

const BIN = resolve(__dirname, '../bin/strongroom-emulator.js');

test('s3 --listen serves buckets and objects on loopback and stops on SIGTERM', async () => {
  const child = spawn(process.execPath, [BIN, 's3', '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  try {
    const endpoint = await new Promise<string>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`no endpoint printed in 30 s: ${stderr}`)), 30_000);
      child.once('exit', (code) => fail(new Error(`exited ${code}: ${stderr}`)));
      createInterface({ input: child.stdout }).on('line', (line) => {
        const m = /endpoint: (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
        if (!m) return;
        clearTimeout(timer);
        done(m[1] as string);
      });
    });
    expect((await fetch(`${endpoint}/snapshots`, { method: 'PUT' })).status).toBe(200);
    expect((await fetch(`${endpoint}/snapshots/a/b.snap`, { method: 'PUT', body: 'data' })).status).toBe(200);
    const list = await (await fetch(`${endpoint}/snapshots?list-type=2&prefix=a/`)).text();
    expect(list).toContain('<Key>a/b.snap</Key>');
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  expect(child.exitCode).toBe(0);
});
