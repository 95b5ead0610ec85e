'use strict';
// `npm run bench`: Strongroom's API next to a bare node:http JSON echo server measured in the
// same run on the same machine, printed as ratios. Servers run in their own processes so the
// load generator does not share their event loop.
const { spawn } = require('node:child_process');
const path = require('node:path');
const { runLoad } = require('./load');

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROOT = path.resolve(__dirname, '../..');

function startProcess(args, ready) {
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not start: ${out}`)), 30000);
    const onData = (d) => {
      out += d;
      const m = ready.exec(out);
      if (m) { clearTimeout(timer); resolve({ proc, match: m }); }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}

function row(name, r, ceiling) {
  const ratio = ceiling ? ` ${(r.rate / ceiling.rate * 100).toFixed(0).padStart(4)}% of ceiling` : '';
  console.log(`${name.padEnd(44)} ${r.rate.toFixed(0).padStart(7)}/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms${ratio}${r.errors ? `  (${r.errors} errors)` : ''}`);
}

async function main() {
  const echo = await startProcess([path.join(__dirname, 'echo-server.js')], /listening (\d+)/);
  const echoUrl = `http://127.0.0.1:${echo.match[1]}/`;
  const sr = await startProcess(['packages/cli/bin/strongroom.js', 'server', '--dev', '--listen', '127.0.0.1:0', '--dev-root-token', 'bench-root'], /Address:\s+(\S+)/);
  const base = sr.match[1];
  const headers = { 'x-vault-token': 'bench-root' };
  const payload = JSON.stringify({ data: { username: 'app', password: 'x'.repeat(64) } });
  try {
    await fetch(`${base}/v1/secret/data/bench/read`, { method: 'POST', headers, body: payload });
    console.log(`Strongroom API against a bare node:http JSON echo (ceiling), ${SECONDS}s per row`);
    for (const concurrency of [16, 64]) {
      const ceiling = await runLoad({ url: echoUrl, method: 'POST', body: () => payload, concurrency, seconds: SECONDS });
      row(`ceiling: node:http JSON echo, c=${concurrency}`, ceiling);
      row(`sys/health, c=${concurrency}`, await runLoad({ url: `${base}/v1/sys/health`, concurrency, seconds: SECONDS }), ceiling);
      row(`KV v2 read with a token, c=${concurrency}`, await runLoad({ url: `${base}/v1/secret/data/bench/read`, headers, concurrency, seconds: SECONDS }), ceiling);
      row(`KV v2 write (durable), c=${concurrency}`, await runLoad({
        url: `${base}/v1/secret/data/bench/write`, method: 'POST', headers, body: () => payload, concurrency, seconds: SECONDS,
      }), ceiling);
    }
  } finally {
    echo.proc.kill('SIGTERM');
    sr.proc.kill('SIGTERM');
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
