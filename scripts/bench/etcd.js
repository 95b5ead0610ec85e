'use strict';
// The reference cluster: a 3-member etcd on loopback (the Debian package etcd-server), loaded
// through its JSON gateway with the same closed-loop client as Strongroom. Only runs when an
// `etcd` binary is on PATH; nothing here installs it.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { findOnPath } = require('./which');

/** The `etcd` executable on PATH, or undefined. */
function findEtcd() {
  return findOnPath('etcd');
}

/**
 * Starts members e1..e3 in `dir` (client port basePort + 10*i, peer port the one after) and
 * resolves once each answers /health as healthy. The caller must `stop()` it, also on failure
 * (`kill()` is the synchronous SIGKILL for signal handlers); if starting fails, whatever
 * started is stopped before the error is thrown.
 */
async function startEtcd({ bin, dir, basePort, timeoutMs = 30_000 }) {
  const members = [0, 1, 2].map((i) => ({
    name: `e${i + 1}`, client: `http://127.0.0.1:${basePort + 10 * i}`, peer: `http://127.0.0.1:${basePort + 10 * i + 1}`,
    dir: path.join(dir, `e${i + 1}`), proc: null,
  }));
  const initialCluster = members.map((m) => `${m.name}=${m.peer}`).join(',');
  const stop = async () => {
    await Promise.all(members.map((m) => new Promise((resolve) => {
      const p = m.proc;
      if (!p || p.exitCode !== null || p.signalCode !== null) return resolve();
      const hard = setTimeout(() => p.kill('SIGKILL'), 5000);
      p.once('exit', () => { clearTimeout(hard); resolve(); });
      p.kill('SIGTERM');
    })));
  };
  try {
    for (const m of members) {
      fs.mkdirSync(m.dir, { recursive: true });
      const log = fs.openSync(path.join(m.dir, 'etcd.log'), 'a');
      m.proc = spawn(bin, [
        '--name', m.name, '--data-dir', path.join(m.dir, 'data'),
        '--listen-client-urls', m.client, '--advertise-client-urls', m.client,
        '--listen-peer-urls', m.peer, '--initial-advertise-peer-urls', m.peer,
        '--initial-cluster', initialCluster, '--initial-cluster-state', 'new', '--initial-cluster-token', 'strongroom-bench',
      ], { stdio: ['ignore', log, log] });
      fs.closeSync(log);
    }
    const deadline = Date.now() + timeoutMs;
    for (const m of members) {
      for (;;) {
        if (m.proc.exitCode !== null) throw new Error(`etcd ${m.name} exited ${m.proc.exitCode}: ${tail(path.join(m.dir, 'etcd.log'))}`);
        const healthy = await fetch(`${m.client}/health`, { signal: AbortSignal.timeout(2000) })
          .then(async (r) => r.status === 200 && String((await r.json()).health) === 'true').catch(() => false);
        if (healthy) break;
        if (Date.now() > deadline) throw new Error(`etcd ${m.name} not healthy after ${timeoutMs} ms: ${tail(path.join(m.dir, 'etcd.log'))}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const kill = () => { for (const m of members) m.proc?.kill('SIGKILL'); };
  return { clientUrls: members.map((m) => m.client), pids: members.map((m) => m.proc.pid), stop, kill };
}

function tail(file) {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-5).join('\n');
  } catch {
    return '(no log)';
  }
}

/** A load for `measureLoad`: puts of fresh keys <run><n> with `value` through POST /v3/kv/put. */
function etcdPutLoad(clientUrls, run, value) {
  return { url: clientUrls.map((u) => `${u}/v3/kv/put`), method: 'POST', etcdPut: { prefix: '', value }, prefix: `k${run}_` };
}

module.exports = { findEtcd, startEtcd, etcdPutLoad };
