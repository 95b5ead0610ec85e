'use strict';
// `node scripts/bench/run.js performance`: performance replication between two clusters of real
// server processes on loopback, the secondary's link to the primary through a proxy that adds
// BENCH_PERF_DELAY_MS (80) each way. Each number is next to the one it is compared with, measured
// in the same run:
// 1. KV v2 reads of one secret on the performance secondary next to the same reads on the
//    primary (the goal: equal; a read on the secondary never crosses the link), in interleaved
//    rounds, with each server's CPU per request.
// 2. Writes sent to the secondary (forwarded to the primary, answered once they have streamed
//    back) next to the same writes sent to the primary, one at a time; the expected forwarded
//    latency is a direct write plus one round trip of the link (2 x the delay).
// Ports 26060-26099 (BENCH_PERF_BASE_PORT moves them). Every process started here is stopped in
// `finally`, its temp dir removed (kept with KEEP_CLUSTER_DIRS=1).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fork } = require('node:child_process');
const { measureLoad, clientName } = require('./load');
const { row, ratio, line, median } = require('./report');
const { startProcessCpu } = require('./cpu-usage');
const { call, until, requireFreePorts, launch, stopCluster } = require('./replication');

const ROOT = path.resolve(__dirname, '../..');
const BASE_PORT = Number(process.env.BENCH_PERF_BASE_PORT ?? 26060);
const DELAY_MS = Number(process.env.BENCH_PERF_DELAY_MS ?? 80);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
/** Rounds of reads per concurrency, each side BENCH_SECONDS / 2 a round. */
const ROUNDS = Number(process.env.BENCH_PERF_ROUNDS ?? 4);
const KV_BODY = JSON.stringify({ data: { username: 'app', password: 'x'.repeat(32) } });

const progress = (msg) => process.stderr.write(`[performance] ${msg}\n`);
const fmt = (n, digits = 1) => n.toFixed(digits);

/** The test suite's delaying TCP proxy, in a child process so its timers stay off the load's event loop. */
async function startDelayProxy(target, delayMs) {
  const child = fork(path.join(ROOT, 'packages/cli/src/cluster/test-support/link-proxy-host.ts'), [], {
    execArgv: ['-r', require.resolve('sucrase/register/ts', { paths: [ROOT] })],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const answer = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', () => reject(new Error('the delaying proxy exited')));
    child.send({ id: 0, op: 'start', target, delayMs });
  });
  if (answer.error) {
    child.kill('SIGKILL');
    throw new Error(`the delaying proxy did not start: ${answer.error}`);
  }
  return { address: answer.address, kill: () => child.kill('SIGKILL') };
}

/** A root token made on `base` from the primary's key shares (sys/generate-root with an OTP). */
async function generateRoot(base, keys) {
  await call(base, 'DELETE', 'sys/generate-root/attempt').catch(() => undefined);
  const { nonce, otp } = (await call(base, 'POST', 'sys/generate-root/attempt', { body: {} })).json();
  let last;
  for (const key of keys) {
    last = (await call(base, 'POST', 'sys/generate-root/update', { body: { key, nonce } })).json();
    if (last.complete) break;
  }
  const encoded = Buffer.from(last.encoded_token, 'base64');
  const pad = Buffer.from(otp, 'utf8');
  return Buffer.from(encoded.map((b, i) => b ^ pad[i])).toString('utf8');
}

async function performanceStatus(base) {
  return (await call(base, 'GET', 'sys/replication/performance/status', { timeoutMs: 10_000 })).json().data;
}

/** Enables `secondary` behind the proxy, waits for it to stream and serve; answers its root token. */
async function follow(primary, secondary, primaryKeys) {
  const token = (await call(primary.active.apiAddr, 'POST', 'sys/replication/performance/primary/secondary-token', { token: primary.root, body: { id: 'bench' } })).json().wrap_info.token;
  await call(secondary.active.apiAddr, 'POST', 'sys/replication/performance/secondary/enable', { token: secondary.root, body: { token } });
  const addr = secondary.active.apiAddr;
  await until('the secondary to stream', 120_000, async () => ((await performanceStatus(addr)).state === 'stream-wals' ? true : undefined), 200);
  await until('the secondary to serve with the primary\'s keys', 60_000, async () => {
    const seal = (await call(addr, 'GET', 'sys/seal-status')).json();
    if (seal.sealed) for (const key of primaryKeys) await call(addr, 'POST', 'sys/unseal', { body: { key } }).catch(() => undefined);
    const health = await fetch(`${addr}/v1/sys/health`);
    return health.status === 200 ? true : undefined;
  }, 250);
  return generateRoot(addr, primaryKeys);
}

/**
 * KV reads on the primary and on the secondary in interleaved rounds, the same load, the same
 * kind of token (a root token of each cluster), each side warmed first; the side that goes
 * first alternates, so a machine whose speed changes during the run weighs on both alike. Each
 * round's rate ratio is kept, and each server's CPU per request (which the load client's own
 * cost, on the same machine, does not move).
 */
async function readRounds(sides, concurrency) {
  const load = (side, seconds) => measureLoad({ url: side.url, headers: { 'x-vault-token': side.token }, concurrency, seconds });
  for (const side of Object.values(sides)) await load(side, 1);
  const rateRatios = [];
  const cpuRatios = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [sides.primary, sides.secondary] : [sides.secondary, sides.primary];
    const got = new Map();
    for (const side of order) {
      const cpu = startProcessCpu(side.pid);
      const result = await load(side, Math.max(1, SECONDS / 2));
      got.set(side, { result, cpuUs: cpu.usPerRequest(result.count ?? 0) });
    }
    const onPrimary = got.get(sides.primary);
    const onSecondary = got.get(sides.secondary);
    for (const side of order) {
      const { result, cpuUs } = got.get(side);
      row(`KV v2 read on the ${side.label}, c=${concurrency}, round ${round + 1}`, result);
      if (cpuUs !== null) console.log(`  server CPU ${cpuUs.toFixed(0)} us per request`);
    }
    rateRatios.push(onSecondary.result.rate / onPrimary.result.rate);
    if (onPrimary.cpuUs && onSecondary.cpuUs !== null) cpuRatios.push(onSecondary.cpuUs / onPrimary.cpuUs);
    ratio(`  round ${round + 1}: read rate secondary / primary`, onSecondary.result.rate, onPrimary.result.rate);
  }
  return { rateRatios, cpuRatios };
}

/** How far the secondary is behind the primary now, and how long it takes to reach where the primary is now. */
async function lagAfterBurst(p, s) {
  const started = Date.now();
  const [ps, ss] = await Promise.all([performanceStatus(p), performanceStatus(s)]);
  const target = ps.last_wal;
  await until('the secondary to drain the backlog', 120_000, async () => ((await performanceStatus(s)).last_remote_wal >= target ? true : undefined), 20);
  return { backlog: Math.max(0, target - ss.last_remote_wal), drainS: (Date.now() - started) / 1000 };
}

async function runPerformanceBench() {
  const { LocalCluster } = require(path.join(ROOT, 'packages/cli/dist/index.js'));
  const bases = { primary: BASE_PORT, secondary: BASE_PORT + 20 };
  await requireFreePorts([{ base: bases.primary, nodes: 1 }, { base: bases.secondary, nodes: 1 }]);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'strongroom-bench-perf-'));
  const clusters = [];
  let proxy = null;
  const started = Date.now();
  const onSignal = (signal) => {
    for (const c of clusters) c.killAll();
    proxy?.kill();
    fs.rmSync(work, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const up = async (name, base) => {
    const c = await launch(LocalCluster, work, name, base, 1);
    clusters.push(c.cluster);
    return c;
  };
  try {
    console.log(`Performance replication, the secondary's link to the primary ${DELAY_MS} ms each way; ${SECONDS}s per row; load from ${clientName()}`);
    proxy = await startDelayProxy(`127.0.0.1:${bases.primary + 1}`, DELAY_MS);
    const primary = await up('primary', bases.primary);
    const secondary = await up('secondary', bases.secondary);
    const p = primary.active.apiAddr;
    await call(p, 'POST', 'sys/mounts/secret', { token: primary.root, body: { type: 'kv', options: { version: '2' } } });
    await call(p, 'POST', 'secret/data/bench/read', { token: primary.root, body: JSON.parse(KV_BODY) });
    await call(p, 'POST', 'sys/replication/performance/primary/enable', { token: primary.root, body: { primary_cluster_addr: `https://${proxy.address}` } });
    const sRoot = await follow(primary, secondary, primary.cluster.keys);
    const s = secondary.active.apiAddr;
    await until('the secret on the secondary', 60_000, async () => ((await fetch(`${s}/v1/secret/data/bench/read`, { headers: { 'x-vault-token': sRoot } })).status === 200 ? true : undefined), 200);
    const rtt = (await performanceStatus(s)).primaries.map((h) => h.last_heartbeat_duration_ms);
    line('link round trip (secondary heartbeat)', `${rtt.join(', ')} ms`);

    const reads = {};
    const sides = {
      primary: { label: 'primary', url: `${p}/v1/secret/data/bench/read`, token: primary.root, pid: primary.active.process.pid },
      secondary: { label: 'perf secondary', url: `${s}/v1/secret/data/bench/read`, token: sRoot, pid: secondary.active.process.pid },
    };
    for (const concurrency of [16, 64]) {
      reads[concurrency] = await readRounds(sides, concurrency);
    }

    // One at a time: each latency is one write's own, not a queue's.
    const direct = await measureLoad({ url: `${p}/v1/secret/data/bench/direct`, method: 'POST', headers: { 'x-vault-token': primary.root }, body: KV_BODY, concurrency: 1, seconds: SECONDS });
    row('KV v2 write on the primary, c=1', direct);
    // The burst of direct writes may leave the stream behind; the forwarded writes are timed from
    // a secondary in step, or each would wait for the backlog rather than for its own round trip.
    const behind = await lagAfterBurst(p, s);
    line('stream backlog after the direct writes', `${behind.backlog} WAL entries, drained in ${fmt(behind.drainS, 2)} s`);
    const forwarded = await measureLoad({ url: `${s}/v1/secret/data/bench/forwarded`, method: 'POST', headers: { 'x-vault-token': sRoot }, body: KV_BODY, concurrency: 1, seconds: SECONDS });
    row('KV v2 write forwarded by the secondary, c=1', forwarded);
    console.log('\nRatios');
    for (const [c, r] of Object.entries(reads)) {
      ratio(`reads/s on the secondary / the primary, c=${c}, median (goal 1)`, median(r.rateRatios), 1,
        `(rounds: ${r.rateRatios.map((x) => x.toFixed(2)).join(', ')})`);
      if (r.cpuRatios.length > 0) {
        ratio(`server CPU per read, secondary / primary, c=${c}, median`, median(r.cpuRatios), 1,
          `(rounds: ${r.cpuRatios.map((x) => x.toFixed(2)).join(', ')})`);
      }
    }
    const expected = (q) => direct[q] + 2 * DELAY_MS;
    ratio(`forwarded write p50 / (direct p50 + ${2 * DELAY_MS} ms link RTT)`, forwarded.p50, expected('p50'), `(${fmt(forwarded.p50)} ms vs ${fmt(expected('p50'))} ms)`);
    ratio(`forwarded write p99 / (direct p99 + ${2 * DELAY_MS} ms link RTT)`, forwarded.p99, expected('p99'), `(${fmt(forwarded.p99)} ms vs ${fmt(expected('p99'))} ms)`);
    progress(`section took ${fmt((Date.now() - started) / 1000, 0)} s`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    for (const c of clusters) await stopCluster(c);
    proxy?.kill();
    if (process.env.KEEP_CLUSTER_DIRS === '1') progress(`kept ${work} (each node's server.log is there)`);
    else fs.rmSync(work, { recursive: true, force: true });
  }
}

module.exports = { runPerformanceBench };
