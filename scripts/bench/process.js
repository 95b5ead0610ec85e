'use strict';
// Child processes for the bench: servers and emulators run in their own processes so the load
// generator does not share their event loop. Each is stopped by its own PID.
const { spawn } = require('node:child_process');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../..');

/**
 * Runs `node args` from the repo root and resolves `{ proc, match }` once its output matches
 * `ready`. With `stdin: 'pipe'` the child's stdin stays open (an emulator that exits when it closes).
 */
function startProcess(args, ready, { stdin = 'ignore' } = {}) {
  const proc = spawn(process.execPath, args, { cwd: ROOT, stdio: [stdin, 'pipe', 'pipe'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`did not start: ${out}`));
    }, 30000);
    const onData = (d) => {
      // Only the start-up output is kept: a server logs for as long as it runs.
      if (out.length < 65536) out += d;
      const m = ready.exec(out);
      if (m) { clearTimeout(timer); resolve({ proc, match: m }); }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`exited ${code}: ${out}`)); });
  });
}

/** SIGTERM (and closes stdin), then SIGKILL if it has not exited after `graceMs`; resolves on exit. */
function stopProcess(proc, graceMs = 10000) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const hard = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    proc.once('exit', () => { clearTimeout(hard); resolve(); });
    proc.stdin?.end();
    proc.kill('SIGTERM');
  });
}

module.exports = { ROOT, startProcess, stopProcess };
