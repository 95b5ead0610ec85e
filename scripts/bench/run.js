'use strict';
// `npm run bench`: Strongroom's API next to a bare node:http JSON echo server measured in the
// same run on the same machine, printed as ratios, then KV v2 writes on a 3-node Raft cluster
// next to the disk's sync rates (raft-cluster.js), then automated snapshots of a filled server
// to local disk and to the S3 emulator next to the disk's sequential write speed (snapshot.js).
// Servers run in their own processes so the load generator does not share their event loop.
// `node scripts/bench/run.js raft` (or `api`, `snapshot`, `cache`, `merkle`, `replication`, `performance`) runs one
// section. `cache` counts the LevelDB reads behind reads of keys the active node of a cluster just
// wrote; `merkle` times replication's Merkle index applying and reindexing 100,000 keys;
// `replication` measures DR replication's lag next to the primary's commit latency, and a new
// secondary catching up over 100,000 keys next to a Raft snapshot restore of the same data;
// `performance` measures reads on a performance secondary behind an 80 ms link next to the
// primary's, and its forwarded writes next to a direct write plus the link's round trip;
// `sync` times a KV write reaching the cloud1-sm emulator and 1,000 secrets synced into one
// destination next to direct SDK calls to the same emulator (sync.js).
const path = require('node:path');
const { createCipheriv, createSecretKey, randomBytes } = require('node:crypto');
const { measureLoad, clientName } = require('./load');
const { row } = require('./report');
const { runRaftBench } = require('./raft-cluster');
const { probeMs, describeDrift } = require('./cpu-probe');
const { startCpuSample } = require('./cpu-usage');
const { startProcess } = require('./process');
const { runSnapshotBench } = require('./snapshot');
const { runCacheBench } = require('./cache');
const { runMerkleBench } = require('./merkle');
const { runReplicationBench } = require('./replication');
const { runPerformanceBench } = require('./performance');
const { runSyncBench } = require('./sync');

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

/** The crypto ceiling: AES-256-GCM of 1 KiB with a fresh nonce, on this one core. */
function rawAesRate(seconds) {
  const key = createSecretKey(randomBytes(32));
  const data = randomBytes(1024);
  const deadline = Date.now() + seconds * 1000;
  let count = 0;
  while (Date.now() < deadline) {
    for (let i = 0; i < 1000; i++) {
      const cipher = createCipheriv('aes-256-gcm', key, randomBytes(12));
      cipher.update(data);
      cipher.final();
      cipher.getAuthTag();
    }
    count += 1000;
  }
  return { rate: count / seconds, p50: 0, p99: 0, errors: 0 };
}

async function apiBench() {
  const echo = await startProcess([path.join(__dirname, 'echo-server.js')], /listening (\d+)/);
  const echoUrl = `http://127.0.0.1:${echo.match[1]}/`;
  const sr = await startProcess(['packages/cli/bin/strongroom.js', 'server', '--dev', '--listen', '127.0.0.1:0', '--dev-root-token', 'bench-root'], /Address:\s+(\S+)/);
  const base = sr.match[1];
  const headers = { 'x-vault-token': 'bench-root' };
  const payload = JSON.stringify({ data: { username: 'app', password: 'x'.repeat(64) } });
  try {
    await fetch(`${base}/v1/secret/data/bench/read`, { method: 'POST', headers, body: payload });
    console.log(`Strongroom API against a bare node:http JSON echo (ceiling), ${SECONDS}s per row; load from ${clientName()}`);
    for (const concurrency of [16, 64]) {
      const ceiling = await measureLoad({ url: echoUrl, method: 'POST', body: payload, concurrency, seconds: SECONDS });
      row(`ceiling: node:http JSON echo, c=${concurrency}`, ceiling);
      row(`sys/health, c=${concurrency}`, await measureLoad({ url: `${base}/v1/sys/health`, concurrency, seconds: SECONDS }), ceiling);
      row(`KV v2 read with a token, c=${concurrency}`, await measureLoad({ url: `${base}/v1/secret/data/bench/read`, headers, concurrency, seconds: SECONDS }), ceiling);
      row(`KV v2 write (durable), c=${concurrency}`, await measureLoad({
        url: `${base}/v1/secret/data/bench/write`, method: 'POST', headers, body: payload, concurrency, seconds: SECONDS,
      }), ceiling);
    }
    await transitRows(base, headers, echoUrl, { echo: echo.proc, server: sr.proc });
  } finally {
    echo.proc.kill('SIGTERM');
    sr.proc.kill('SIGTERM');
  }
}

/** Runs a load while sampling the CPU of `proc`; prints the per-request line under the row. */
async function measureWithCpu(proc, label, load) {
  const sample = startCpuSample([{ label, pid: proc.pid }]);
  const result = await measureLoad(load);
  const cpu = sample.perRequest(result.count ?? 0);
  return { result, cpuLine: cpu ? `  CPU us per request by thread: ${cpu}` : null };
}

async function transitRows(base, headers, echoUrl, procs) {
  await fetch(`${base}/v1/sys/mounts/transit`, { method: 'POST', headers, body: JSON.stringify({ type: 'transit' }) });
  await fetch(`${base}/v1/transit/keys/bench`, { method: 'POST', headers, body: '{}' });
  const plaintext = randomBytes(1024).toString('base64');
  const single = JSON.stringify({ plaintext });
  console.log('\nTransit encrypt of 1 KiB');
  for (const concurrency of [16, 64]) {
    // The CPU each server spends per request says how far apart they are whatever the load client costs.
    const echo = await measureWithCpu(procs.echo, 'echo server', { url: echoUrl, method: 'POST', body: single, concurrency, seconds: SECONDS });
    row(`ceiling: node:http JSON echo (1 KiB body), c=${concurrency}`, echo.result);
    if (echo.cpuLine) console.log(echo.cpuLine);
    const transit = await measureWithCpu(procs.server, 'server', {
      url: `${base}/v1/transit/encrypt/bench`, method: 'POST', headers, body: single, concurrency, seconds: SECONDS,
    });
    row(`transit encrypt, single requests, c=${concurrency}`, transit.result, echo.result);
    if (transit.cpuLine) console.log(transit.cpuLine);
  }
  const crypto = rawAesRate(Math.min(SECONDS, 3));
  row('ceiling: raw AES-256-GCM of 1 KiB, one core', crypto);
  const batch = JSON.stringify({ batch_input: Array.from({ length: 1000 }, () => ({ plaintext })) });
  const batches = await measureLoad({ url: `${base}/v1/transit/encrypt/bench`, method: 'POST', headers, body: batch, concurrency: 4, seconds: SECONDS });
  row('transit encrypt, batches of 1,000 (items/s)', { ...batches, rate: batches.rate * 1000 }, crypto);
}

const SECTIONS = {
  api: apiBench,
  raft: () => runRaftBench({ seconds: SECONDS }),
  snapshot: () => runSnapshotBench({ keys: Number(process.env.BENCH_SNAPSHOT_KEYS ?? 200000) }),
  cache: runCacheBench,
  merkle: runMerkleBench,
  replication: runReplicationBench,
  performance: runPerformanceBench,
  sync: runSyncBench,
};

async function main() {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !(name in SECTIONS));
  if (unknown.length) throw new Error(`unknown section ${unknown.join(', ')}; sections: ${Object.keys(SECTIONS).join(', ')}`);
  const names = wanted.length ? wanted : Object.keys(SECTIONS);
  const probeAtStart = probeMs();
  for (const [i, name] of names.entries()) {
    if (i > 0) console.log('');
    await SECTIONS[name]();
  }
  console.log('');
  console.log(describeDrift(probeAtStart, probeMs()));
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
